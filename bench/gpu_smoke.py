"""A self-check of the convolution primitives on a CUDA GPU, to run first on a borrowed machine (about 30 s).

Run: .venv/bin/python bench/gpu_smoke.py [--device cuda]

Then, if it passes: .venv/bin/python bench/primitive_dataset.py --grid paper --max-gmacs 2 --device cuda
--db X.db --budget-s 400. What it checks, on ``--device``:

1. every primitive that runs on CUDA (``Primitive.supports``), once on each of four small configurations (a 3x3
   unstrided layer, a 5x5 grouped one with asymmetric padding, a strided 1x1, a strided dilated depthwise 3x3): the
   output is on the device, has the output shape, and is within the primitive's error bound on CUDA of
   ``reference_conv2d`` computed in float64 on the device, ``max|y - ref| <= bound * max|ref|``; its timer
   (``primitive_timer``, synchronized) gives a positive time for a block of three calls;
2. every primitive that runs on the CPU only (available on this machine or not) refuses the device, with a reason;
3. every layout transformation, on the device, gives back its input exactly;
4. a profile of two configurations into a temporary store, as ``bench/primitive_dataset.py --device cuda`` does it
   (``nnperf.campaign.profile_primitives`` with the dataset harness): a CUDA system named by the GPU, other than this
   CPU's, and a positive time for every primitive that applies and every transformation, none failed.

Prints one Markdown table row per check and exits 0 when all pass, 1 naming the failures, 2 without a CUDA device.
``--device cpu`` runs the same checks on this CPU (every available primitive then runs; none refuses): a dry run of
the script itself on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nnperf.errors import NnperfError
from nnperf.primitives import (
    ConvConfig,
    Primitive,
    all_primitives,
    all_transforms,
    config_label,
    device_availability,
    device_name,
    device_operands,
    device_type,
    from_layout,
    primitive_timer,
    reference_conv2d,
    to_layout,
)
from nnperf.registry import Availability

CONFIGS = (
    ConvConfig.make(1, 16, 32, 20, 3, 1, 1),  # Winograd F(2,3) and F(4,3) apply
    ConvConfig.make(2, 12, 18, (17, 13), 5, 1, (2, 1, 2, 3), groups=3),  # F(2,5), asymmetric padding, groups
    ConvConfig.make(2, 24, 40, 15, 1, 2),  # the 1x1 GEMMs, strided
    ConvConfig.make(1, 16, 16, 21, 3, 2, 2, groups=16, dilation=2),  # depthwise, strided, dilated (MEC per row)
)
"""Small configurations that between them reach every primitive's every branch worth reaching."""


@dataclass(frozen=True)
class Check:
    """One row of the table: what was checked, on what, the figure it gave and whether it passed."""

    what: str
    subject: str
    config: str
    figure: str
    ok: bool


def _row(check: Check) -> str:
    return f"| {check.what} | {check.subject} | {check.config} | {check.figure} | {'ok' if check.ok else 'FAIL'} |"


def _guarded(what: str, subject: str, config: str, body: Callable[[], Check]) -> Check:
    """``body()``, or a failed check holding the exception's last line (the table must go on to the end)."""
    try:
        return body()
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none stops the other checks
        traceback.print_exc(file=sys.stderr)
        message = str(exc).splitlines()[0][:120] if str(exc) else ""
        return Check(what, subject, config, f"{type(exc).__name__}: {message}", False)


def check_primitive(primitive: Primitive, config: ConvConfig, device: str) -> Check:
    """``primitive`` on ``config`` on ``device`` against the float64 reference there, and its timer."""
    import torch

    x, w, b = device_operands(config, 0, device)
    with torch.inference_mode():
        ref = reference_conv2d(x.double(), w.double(), b.double(), config)
        y = primitive.run(to_layout(x, primitive.input_layout), w, b, config)
        got = from_layout(y, primitive.output_layout, config.f)
        error = float((got.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-12))
    bound = primitive.error_bound_on(device)
    per_call_s = primitive_timer(primitive, config, device=device).time_block(3) / 3
    ok = (y.device.type == device_type(device) and tuple(got.shape) == config.output_shape() and error <= bound
          and per_call_s > 0)
    figure = f"error {error:.1e} (bound {bound:.0e}), {per_call_s * 1e6:.0f} us, on {y.device}"
    return Check("primitive", primitive.name, config_label(config), figure, ok)


def check_refusal(primitive: Primitive, device: str) -> Check:
    """A CPU-only primitive refuses ``device`` with a reason."""
    supported = primitive.supports(device)
    return Check("refuses", primitive.name, "-", supported.reason or "(no reason)", not supported.ok and
                 bool(supported.reason))


def check_transforms(device: str) -> list[Check]:
    """Every layout transformation on ``device`` gives back its input exactly (channels not a block multiple)."""
    import torch

    (x, _, _) = device_operands(ConvConfig.make(2, 21, 4, (9, 7), 1), 0, device)
    checks = []
    for transform in all_transforms():
        def body(transform=transform) -> Check:  # type: ignore[no-untyped-def]
            src = to_layout(x, transform.src)
            out = transform.run(src, x.shape[1])
            back = from_layout(out, transform.dst, x.shape[1])
            ok = out.device.type == device_type(device) and torch.equal(back, x)
            return Check("transform", transform.name, "2x21x9x7", f"on {out.device}", ok)

        checks.append(_guarded("transform", transform.name, "2x21x9x7", body))
    return checks


def check_profile(device: str) -> Check:
    """Two configurations profiled on ``device`` into a temporary store, as the dataset bench does."""
    from nnperf.campaign import load_primitive_dataset, primitive_system, profile_primitives
    from nnperf.measure import host_info
    from nnperf.store import Store

    configs = list(CONFIGS[:3:2])
    with tempfile.TemporaryDirectory(prefix="nnperf-gpu-smoke-") as tmp, Store(Path(tmp) / "p.db") as store:
        report = profile_primitives(store, configs, device=device)
        system = store.system(report.system_id)
        dataset = load_primitive_dataset(store, report.system_id)
    chosen = [p for p in all_primitives() if p.availability().ok and p.supports(device).ok]
    expected = sum(1 for c in configs for p in chosen if p.applies(c)) + len(configs) * sum(
        1 for t in all_transforms() if t.src != t.dst)
    times = [t for s in (*dataset.conv, *dataset.layout) for t in s.times_s.values()]
    cuda = device_type(device) == "cuda"
    named = device_name(device) if cuda else host_info().cpu_model
    ok = (system.device == device_type(device) and system.device_name == named and not report.failures
          and report.samples == expected and (system.key != primitive_system(1).key) == cuda and min(times) > 0)
    failed = "; ".join(f"{n} on {c}: {e}" for n, c, e in report.failures[:3])
    figure = (f"system {system.backend}/{system.device} {system.device_name!r} key {system.key}: {report.samples} of "
              f"{expected} times in {report.elapsed_s:.1f} s" + (f"; failed: {failed}" if failed else ""))
    return Check("profile", "dataset", f"{len(configs)} configurations", figure, ok)


def _header(device: str) -> None:
    import torch

    from nnperf.measure import host_info

    name = device_name(device) if device_type(device) == "cuda" else host_info().cpu_model
    print(f"{name} ({device}); torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN "
          f"{torch.backends.cudnn.version()}; TF32 for cuDNN {torch.backends.cudnn.allow_tf32}, for matmul "
          f"{torch.backends.cuda.matmul.allow_tf32} (both False once operands are on the device)\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu for a dry run")
    args = parser.parse_args()
    try:
        available = device_availability(args.device)
    except NnperfError as exc:  # not a device name
        available = Availability.no(str(exc))
    if not available.ok:
        print(f"gpu_smoke: --device {args.device}: {available.reason}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    device_operands(CONFIGS[0], 0, args.device)  # turns TF32 off before the header reads it
    _header(args.device)
    print("| check | subject | configuration | figure | status |\n|---|---|---|---|---|")
    checks: list[Check] = []
    for primitive in all_primitives():
        if not primitive.supports(args.device).ok:  # whether or not it is available on this machine's CPU
            checks.append(_guarded("refuses", primitive.name, "-", lambda p=primitive: check_refusal(p, args.device)))
            continue
        if not primitive.availability().ok:
            continue
        for config in (c for c in CONFIGS if primitive.applies(c)):
            checks.append(_guarded("primitive", primitive.name, config_label(config),
                                   lambda p=primitive, c=config: check_primitive(p, c, args.device)))
            print(_row(checks[-1]), flush=True)
    checks += check_transforms(args.device)
    checks.append(_guarded("profile", "dataset", "-", lambda: check_profile(args.device)))
    for check in checks:
        if check.what != "primitive":
            print(_row(check))
    failed = [c for c in checks if not c.ok]
    took = time.perf_counter() - start
    if failed:
        names = ", ".join(f"{c.what} {c.subject} ({c.config})" for c in failed)
        print(f"\ngpu_smoke: FAILED {len(failed)} of {len(checks)} checks in {took:.0f} s: {names}", file=sys.stderr)
        return 1
    print(f"\ngpu_smoke: all {len(checks)} checks passed in {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

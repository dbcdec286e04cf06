"""Flush-to-zero and denormals-are-zero, the closest CPU counterparts of Cappuccino's relaxed floating point, on the
trained glyph networks: how many activations and weights are denormal, and each program's time with the CPU's
denormal handling relaxed over its time without, in the same interleaved rounds.

Run: .venv/bin/python bench/denormals.py [--networks glyphs-resnet18 ...] [--budget-s 15]
     [--json FILE]

Programs (one thread): ONNX Runtime fp32 and all-int8 (per-channel weights) in NCHWc, with and without the session
option ``session.set_denormal_as_zero`` (which sets FTZ and DAZ on ORT's threads); torch eager fp32, with and
without ``torch.set_flush_denormal(True)``. Denormals are counted on the outputs of every leaf module over 64
held-out glyphs and on every parameter. Stdout: a Markdown table, one row per network.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _shared import print_table, write_result
from glyph_programs import ALL_INT8_NCHWC, CALIBRATION, arguments, cell, glyph_sources

from nnperf.measure import RoundsConfig, host_info
from nnperf.measure.backends import LoopTimer
from nnperf.optimize.synthesize import OrtSettings, compare_programs, run_session

SMALLEST_NORMAL = float(np.finfo(np.float32).tiny)


def denormal_count(values: torch.Tensor) -> int:
    magnitude = values.detach().abs()
    return int(((magnitude > 0) & (magnitude < SMALLEST_NORMAL)).sum())


def denormal_activations(module: torch.nn.Module, inputs: np.ndarray) -> int:
    """Denormal values in the outputs of every leaf module of ``module`` on ``inputs``."""
    found: list[int] = []

    def hook(_: Any, __: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor):
            found.append(denormal_count(output))

    handles = [m.register_forward_hook(hook) for m in module.modules() if not list(m.children())]
    try:
        with torch.inference_mode():
            module(torch.from_numpy(inputs))
    finally:
        for handle in handles:
            handle.remove()
    return sum(found)


class FlushedTorch:
    """Runs ``module`` on one sample with torch's flush-denormal mode on, restoring it after."""

    def __init__(self, module: torch.nn.Module, sample: torch.Tensor) -> None:
        self.module, self.sample = module, sample

    def __call__(self) -> None:
        torch.set_flush_denormal(True)
        try:
            with torch.inference_mode():
                self.module(self.sample)
        finally:
            torch.set_flush_denormal(False)


def plain_torch(module: torch.nn.Module, sample: torch.Tensor) -> None:
    with torch.inference_mode():
        module(sample)


def ort_session(path: Path, relaxed: bool) -> Any:
    import onnxruntime

    options = OrtSettings(1, "sequential", "nchwc").session_options()
    if relaxed:
        options.add_session_config_entry("session.set_denormal_as_zero", "1")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def measure(network: str, cache: Path, budget_s: float) -> dict[str, Any]:
    torch.set_num_threads(1)
    data, module, sources = glyph_sources(network, cache)
    int8 = sources.onnx_model(ALL_INT8_NCHWC.with_(inexact=sources.quantizable("onnxruntime")))
    sessions = {f"{name}{' relaxed' if relaxed else ''}": ort_session(path, relaxed)
                for name, path in (("ort fp32", sources.onnx_path), ("ort int8", int8)) for relaxed in (False, True)}
    sample = data.inputs[:1]
    timers = {name: LoopTimer(functools.partial(run_session, session, sample)) for name, session in sessions.items()}
    tensor = torch.from_numpy(sample)
    timers["torch fp32"] = LoopTimer(functools.partial(plain_torch, module, tensor))
    timers["torch fp32 relaxed"] = LoopTimer(FlushedTorch(module, tensor))
    rounds = RoundsConfig(min_rounds=20, max_rounds=40, min_block_s=0.01, warmup_s=0.1, target_ci=0.005,
                          budget_s=budget_s)
    comparison = compare_programs(timers, "interleaved", rounds=rounds)
    judged = data.inputs[CALIBRATION:]
    same = {name: bool(np.array_equal(run_session(sessions[name], judged), run_session(sessions[f"{name} relaxed"],
                                                                                      judged)))
            for name in ("ort fp32", "ort int8")}
    return {"network": network, "denormal_activations": denormal_activations(module, data.inputs[CALIBRATION:
                                                                                             CALIBRATION + 64]),
            "denormal_weights": sum(denormal_count(p) for p in module.parameters()),
            "outputs_identical": same, "rounds": comparison.rounds.rounds,
            "ratios": {name: comparison.ratio(f"{name} relaxed", name).to_dict()
                       for name in ("ort fp32", "ort int8", "torch fp32")}}


def main() -> None:
    args = arguments(__doc__ or "", budget_s=15.0)
    print(f"{host_info().cpu_model}; 1 thread; each program's time relaxed (FTZ/DAZ) over its time without, medians of "
          "interleaved rounds [95% CI]\n")
    rows = [measure(network, args.glyph_cache, args.budget_s) for network in args.networks]
    print_table(["network", "denormal activations (64 glyphs)", "denormal weights", "ORT fp32", "ORT int8",
                 "torch fp32", "ORT outputs identical (fp32, int8)"],
                [[row["network"], row["denormal_activations"], row["denormal_weights"], cell(row["ratios"]["ort fp32"]),
                  cell(row["ratios"]["ort int8"]), cell(row["ratios"]["torch fp32"]),
                  f"{row['outputs_identical']['ort fp32']}, {row['outputs_identical']['ort int8']}"] for row in rows],
                right=range(1, 6))
    if args.json:
        write_result(args.json, method="synthesis", concern="denormals in the glyph programs",
                     values={"networks": rows})


if __name__ == "__main__":
    main()

"""A corpus of ONNX files exported from torchvision's and timm's model definitions by torch's two ONNX exporters,
for the import-coverage benchmark.

Families:

- ``torchvision-classification``: every model of ``torchvision.models.list_models(module=torchvision.models)`` at
  1x3x224x224 (1x3x299x299 for inception_v3);
- ``torchvision-detection``: every model of ``torchvision.models.detection``, wrapped so the graph takes one
  1x3x320x320 tensor and returns the first image's output tensors (boxes, labels, scores, and masks or keypoints
  where the model has them); the R-CNN, RetinaNet and FCOS models are built with ``min_size=max_size=320``;
- ``torchvision-segmentation``: every model of ``torchvision.models.segmentation`` at 1x3x224x224, returning ``out``;
- ``timm``: a sample of ``timm.list_models()`` across all of timm's model modules (its families), taken round-robin
  over the modules in name order; within a module the names carrying a small-size word (atto, pico, nano, tiny,
  small, b0, ...) come first, then natural name order. Input size from the model's ``pretrained_cfg``, else 224.
  Models of more than ``--max-params`` parameters are skipped.

Exporters: ``torchscript`` is ``torch.onnx.export(..., dynamo=False, opset_version=17, input_names=['input'],
dynamic_axes={'input': {0: 'batch'}})`` (a dynamic batch, as published exports usually have); ``dynamo`` is
``torch.onnx.export(..., dynamo=True)``. Both with ``external_data=False``: a model under protobuf's 2 GB limit
is one file; over it both exporters still put the weights outside, and they are kept in one ``NAME.onnx.data``.
Random weights; nothing is downloaded (``weights=None``, ``weights_backbone=None``, ``pretrained=False``,
``HF_HUB_OFFLINE=1``).

Each model is built (and run once, so a model that cannot run at its input size is recorded as skipped, not as an
exporter failure) and exported in a worker process, with a per-export time limit; a hang or a crash costs the
worker, which is started anew, and is recorded as a failure. ``OUT/manifest.json`` holds one record per attempted
export and is rewritten after each one; a rerun skips what it already holds (``--retry-failed`` tries the failures
again). The workers' own output (exporter warnings) goes to ``OUT/worker.log``.

The exporters' environment (outside the repository; torch is pinned, timm must not pull another one):

    python3.11 -m venv /work/venv-exporters
    /work/venv-exporters/bin/pip install torch==2.14.1 torchvision==0.29.1
    /work/venv-exporters/bin/pip install timm onnx onnxscript onnxruntime

Run:

    nice -n 10 /work/venv-exporters/bin/python bench/export_model_families.py --out /work/onnx-corpus \\
        [--families torchvision-classification,torchvision-detection,torchvision-segmentation,timm] \\
        [--exporters torchscript,dynamo] [--limit-timm 300] [--timeout 240]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FAMILIES = ("torchvision-classification", "torchvision-detection", "torchvision-segmentation", "timm")
EXPORTERS = ("torchscript", "dynamo")
TORCHSCRIPT_OPSET = 17
DETECTION_SIZE = 320
DEFAULT_SIZE = 224
SIZE_OVERRIDES = {"inception_v3": 299}
# Ordered smallest first: a timm name with one of these words as a token sorts before those without.
SMALL_WORDS = (
    "atto",
    "femto",
    "pico",
    "nano",
    "tiny",
    "xxs",
    "xs",
    "mobile",
    "small",
    "s",
    "t",
    "b0",
    "lite0",
    "mini",
)
ERROR_CHARS = 300
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Job:
    library: str
    family: str
    model: str
    task: str
    exporter: str
    path: str
    input_shape: tuple[int, ...] | None  # None: taken from the model's config in the worker
    max_params: int
    threads: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.library, self.model, self.exporter)


# ----------------------------------------------------------------------------------------------- choosing the models


def natural_key(name: str) -> list[int | str]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def smallness_rank(name: str) -> int:
    """Where the name's size word stands in SMALL_WORDS (a token, or a token less its trailing digits: ``s12``)."""
    tokens = re.split(r"[_.\-]", name)
    words = set(tokens) | {token.rstrip("0123456789") for token in tokens}
    return next((rank for rank, word in enumerate(SMALL_WORDS) if word in words), len(SMALL_WORDS))


def timm_sample(limit: int) -> list[tuple[str, str]]:
    """(module, model) pairs: round-robin over timm's modules in name order, small variants first in each."""
    import timm

    queues = {
        module: sorted(timm.list_models(module=module), key=lambda n: (smallness_rank(n), natural_key(n)))
        for module in sorted(timm.list_modules())
    }
    picked: list[tuple[str, str]] = []
    depth = 0
    while len(picked) < limit and any(len(names) > depth for names in queues.values()):
        for module, names in queues.items():
            if depth < len(names) and len(picked) < limit:
                picked.append((module, names[depth]))
        depth += 1
    return picked


def torchvision_models(family: str) -> list[str]:
    import torchvision.models as tvm

    module = {
        "torchvision-classification": tvm,
        "torchvision-detection": tvm.detection,
        "torchvision-segmentation": tvm.segmentation,
    }[family]
    return sorted(tvm.list_models(module=module))


def torchvision_input_shape(family: str, model: str) -> tuple[int, ...]:
    if family == "torchvision-detection":
        return (1, 3, DETECTION_SIZE, DETECTION_SIZE)
    size = SIZE_OVERRIDES.get(model, DEFAULT_SIZE)
    return (1, 3, size, size)


def plan_jobs(args: argparse.Namespace) -> list[Job]:
    out = Path(args.out)
    entries: list[tuple[str, str, str, str, tuple[int, ...] | None]] = []  # library, family, model, task, shape
    for family in args.families:
        if family == "timm":
            entries += [("timm", module, name, "classification", None) for module, name in timm_sample(args.limit_timm)]
        else:
            task = family.removeprefix("torchvision-")
            entries += [
                ("torchvision", family, name, task, torchvision_input_shape(family, name))
                for name in torchvision_models(family)
            ]
    if args.models:
        entries = [entry for entry in entries if entry[2] in args.models]
    return [
        Job(
            library=library,
            family=family,
            model=model,
            task=task,
            exporter=exporter,
            path=str(out / library / family / f"{model}.{exporter}.onnx"),
            input_shape=shape,
            max_params=int(args.max_params),
            threads=args.threads,
        )
        for library, family, model, task, shape in entries
        for exporter in args.exporters
    ]


# --------------------------------------------------------------------------------------------- in the worker process


class Skip(Exception):
    """The model is not exported, for a reason that is not the exporter's."""


def first_line(error: BaseException) -> str:
    """The error's type and first non-empty line; for an exporter's wrapping error, its root cause's too."""
    causes = [error]
    while causes[-1].__cause__ is not None and len(causes) < 10:
        causes.append(causes[-1].__cause__)
    root = causes[-1]
    lines = [line.strip() for line in ANSI_ESCAPE.sub("", str(root)).splitlines() if line.strip()]
    text = f"{type(root).__name__}: {lines[0] if lines else ''}"
    if root is not error:
        text = f"{type(error).__name__} <- {text}"
    return text[:ERROR_CHARS]


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


class FirstImage(nn.Module):
    """A torchvision detection model given one NCHW tensor: its first image's output tensors, in key order."""

    def __init__(self, detector: nn.Module) -> None:
        super().__init__()
        self.detector = detector

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        detections = self.detector([x[0]])[0]
        return tuple(detections[key] for key in sorted(detections))


class SegmentationOut(nn.Module):
    """A torchvision segmentation model's ``out`` tensor."""

    def __init__(self, segmenter: nn.Module) -> None:
        super().__init__()
        self.segmenter = segmenter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.segmenter(x)["out"]


def build_torchvision(job: Job) -> tuple[nn.Module, tuple[int, ...]]:
    import torchvision.models as tvm

    assert job.input_shape is not None
    if job.family == "torchvision-classification":
        return tvm.get_model(job.model, weights=None), job.input_shape
    kwargs: dict[str, Any] = {"weights": None, "weights_backbone": None}
    if job.family == "torchvision-segmentation":
        return SegmentationOut(tvm.get_model(job.model, **kwargs)), job.input_shape
    if not job.model.startswith("ssd"):
        kwargs.update(min_size=DETECTION_SIZE, max_size=DETECTION_SIZE)
    return FirstImage(tvm.get_model(job.model, **kwargs)), job.input_shape


def timm_parameter_count(name: str) -> int | None:
    """The parameter count from a model built on the meta device (no memory), or None where that cannot be built."""
    import timm

    try:
        with torch.device("meta"):
            return count_parameters(timm.create_model(name, pretrained=False))
    except Exception:  # noqa: BLE001 - some models cannot be built on the meta device; they are built for real
        return None


def build_timm(job: Job) -> tuple[nn.Module, tuple[int, ...]]:
    import timm

    params = timm_parameter_count(job.model)
    if params is not None and params > job.max_params:
        raise Skip(f"too large for this machine ({params / 1e6:.0f}M parameters)")
    model = timm.create_model(job.model, pretrained=False)
    cfg = getattr(model, "pretrained_cfg", None) or getattr(model, "default_cfg", None) or {}
    channels, height, width = cfg.get("input_size", (3, DEFAULT_SIZE, DEFAULT_SIZE))
    return model, (1, channels, height, width)


def export(model: nn.Module, x: torch.Tensor, exporter: str, path: str) -> None:
    if exporter == "torchscript":
        torch.onnx.export(
            model,
            (x,),
            path,
            dynamo=False,
            opset_version=TORCHSCRIPT_OPSET,
            input_names=["input"],
            dynamic_axes={"input": {0: "batch"}},
            external_data=False,
        )
    else:
        torch.onnx.export(model, (x,), path, dynamo=True, external_data=False)


def staging_folder(path: str) -> Path:
    return Path(path).with_suffix(".staging")


def place(written: Path, final: Path) -> bool:
    """Moves an exported file from its staging folder to its place; returns whether its weights lie outside it.

    Over protobuf's 2 GB both exporters write the weights outside the file even with ``external_data=False``:
    the dynamo one into one data file, the TorchScript one into a file per tensor. Either way they end up in one
    data file beside the model, ``NAME.onnx.data``.
    """
    import onnx

    others = {p.name for p in written.parent.iterdir()} - {written.name}
    if not others:
        written.replace(final)
        return False
    data = final.with_name(final.name + ".data")
    if others == {written.name + ".data"}:
        written.with_name(written.name + ".data").replace(data)
        written.replace(final)
        return True
    proto = onnx.load(str(written))
    onnx.save(proto, str(final), save_as_external_data=True, all_tensors_to_one_file=True, location=data.name)
    return True


def onnx_summary(path: str) -> dict[str, Any]:
    import onnx

    proto = onnx.load(path, load_external_data=False)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    data = Path(path + ".data")
    size = os.path.getsize(path) + (data.stat().st_size if data.exists() else 0)
    return {"opset": opset, "nodes": len(proto.graph.node), "bytes": size, "external_data": data.exists()}


def remove_outputs(path: str) -> None:
    """Removes what an export wrote at ``path``: the file, its data file and its staging folder."""
    Path(path).unlink(missing_ok=True)
    Path(path + ".data").unlink(missing_ok=True)
    shutil.rmtree(staging_folder(path), ignore_errors=True)


def run_job(job: Job) -> dict[str, Any]:
    torch.set_num_threads(job.threads)
    record: dict[str, Any] = {"status": "failed", "error": None, "export_seconds": None}
    try:
        model, shape = build_timm(job) if job.library == "timm" else build_torchvision(job)
        record.update(input_shape=list(shape), params=count_parameters(model))
        model.eval()
        x = torch.randn(*shape)
        try:
            with torch.no_grad():
                model(x)
        except Exception as error:
            raise Skip(f"cannot run at {'x'.join(map(str, shape))}: {first_line(error)}") from error
        remove_outputs(job.path)
        staging = staging_folder(job.path)
        staging.mkdir(parents=True)
        written = staging / Path(job.path).name
        start = time.perf_counter()
        export(model, x, job.exporter, str(written))
        record["export_seconds"] = round(time.perf_counter() - start, 2)
        place(written, Path(job.path))
        shutil.rmtree(staging)
        record.update(onnx_summary(job.path), status="exported")
    except Skip as reason:
        record.update(status="skipped", error=str(reason)[:ERROR_CHARS])
    except Exception as error:  # noqa: BLE001 - an export failure is a result of the corpus
        record["error"] = first_line(error)
    return record


def worker_main(connection: mp_connection.Connection, log_path: str) -> None:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    while True:
        job = connection.recv()
        if job is None:
            return
        print(f"=== {job.library} {job.model} {job.exporter}", flush=True)
        connection.send(run_job(job))
        sys.stdout.flush()
        sys.stderr.flush()


# --------------------------------------------------------------------------------------------- in the parent process


class Worker:
    """One worker process, started anew after a timeout or a crash and after ``jobs_per_worker`` jobs."""

    def __init__(self, log_path: str, jobs_per_worker: int) -> None:
        self.log_path = log_path
        self.jobs_per_worker = jobs_per_worker
        self.process: mp.process.BaseProcess | None = None
        self.connection: mp_connection.Connection | None = None
        self.jobs_done = 0

    def start(self) -> None:
        context = mp.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=worker_main, args=(child, self.log_path), daemon=True)
        self.process.start()
        child.close()
        self.jobs_done = 0

    def stop(self) -> None:
        if self.process is not None and self.connection is not None and self.process.is_alive():
            self.connection.send(None)
            self.process.join(30)
        self.kill()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
        self.process = None
        self.connection = None

    def run(self, job: Job, timeout: float) -> dict[str, Any]:
        if self.process is None or self.jobs_done >= self.jobs_per_worker:
            self.stop()
            self.start()
        assert self.connection is not None and self.process is not None
        self.jobs_done += 1
        self.connection.send(job)
        try:
            if self.connection.poll(timeout):
                return self.connection.recv()
            error = f"timeout: no result in {timeout:.0f} s"
        except EOFError:
            self.process.join(5)
            error = f"worker died (exit code {self.process.exitcode})"
        self.kill()
        return {"status": "failed", "error": error, "export_seconds": None}


def load_manifest(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text()) if path.exists() else []


def write_manifest(path: Path, records: list[dict[str, Any]]) -> None:
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(records, indent=1) + "\n")
    temporary.replace(path)


def record_key(record: dict[str, Any]) -> tuple[str, str, str]:
    return (record["library"], record["model"], record["exporter"])


def make_record(job: Job, result: dict[str, Any], wall_seconds: float) -> dict[str, Any]:
    record = {k: v for k, v in asdict(job).items() if k not in ("max_params", "threads")}
    record["input_shape"] = list(job.input_shape) if job.input_shape else None
    record.update(result)
    record["wall_seconds"] = round(wall_seconds, 2)
    if record["status"] != "exported":
        remove_outputs(job.path)  # what a failed or timed-out export left behind
        record["path"] = None
    return record


def progress_line(index: int, total: int, record: dict[str, Any], elapsed: float) -> str:
    detail = f"{record['export_seconds']:.1f}s" if record["status"] == "exported" else record["error"]
    return (
        f"[{index}/{total} {elapsed / 60:6.1f} min] {record['family']:<26} {record['model']:<44} "
        f"{record['exporter']:<11} {record['status']:<8} {detail}"
    )


def run_jobs(jobs: list[Job], out: Path, timeout: float, jobs_per_worker: int, retry_failed: bool) -> None:
    manifest_path = out / "manifest.json"
    records = load_manifest(manifest_path)
    if retry_failed:
        records = [r for r in records if r["status"] != "failed"]
    done = {record_key(r) for r in records}
    pending = [job for job in jobs if job.key not in done]
    print(f"{len(jobs)} exports planned, {len(jobs) - len(pending)} already in {manifest_path}", flush=True)
    worker = Worker(str(out / "worker.log"), jobs_per_worker)
    start = time.perf_counter()
    try:
        for index, job in enumerate(pending, 1):
            job_start = time.perf_counter()
            result = worker.run(job, timeout)
            record = make_record(job, result, time.perf_counter() - job_start)
            records.append(record)
            write_manifest(manifest_path, records)
            print(progress_line(index, len(pending), record, time.perf_counter() - start), flush=True)
    finally:
        worker.stop()


def split_choices(text: str, choices: tuple[str, ...]) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(names) - set(choices))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown: {', '.join(unknown)} (choose from {', '.join(choices)})")
    return names


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--out", default="/work/onnx-corpus", help="the corpus folder (default: %(default)s)")
    parser.add_argument(
        "--families", type=lambda s: split_choices(s, FAMILIES), default=list(FAMILIES), help=",".join(FAMILIES)
    )
    parser.add_argument(
        "--exporters", type=lambda s: split_choices(s, EXPORTERS), default=list(EXPORTERS), help=",".join(EXPORTERS)
    )
    parser.add_argument("--limit-timm", type=int, default=300, help="timm models to take (default: %(default)s)")
    parser.add_argument("--max-params", type=float, default=150e6, help="skip larger timm models (default: 150e6)")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per export (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads in the worker (default: %(default)s)")
    parser.add_argument("--jobs-per-worker", type=int, default=20, help="start a fresh worker after this many")
    parser.add_argument("--models", type=lambda s: set(s.split(",")), help="only these model names (comma-separated)")
    parser.add_argument("--retry-failed", action="store_true", help="export again what the manifest records failed")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = plan_jobs(args)
    run_jobs(jobs, out, args.timeout, args.jobs_per_worker, args.retry_failed)


if __name__ == "__main__":
    main()

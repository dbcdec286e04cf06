"""The deployable output of synthesis: the program's model file, a standalone runner script and a manifest.

The folder holds:

- ``model.onnx`` with ``session.json`` (the ONNX Runtime session options that reproduce the program: threads,
  execution mode, graph optimisation level), or ``model.pt2`` (an AOTInductor package, for the torch version that
  made it);
- ``run.py``: a runner that needs only its runtime (onnxruntime or torch) and numpy. ``python run.py --input
  x.npy --output y.npy`` runs a batch; ``--check`` reruns the stored check samples and compares with the stored
  outputs (non-zero exit on a mismatch); ``--time N`` prints the median latency of N runs of one sample;
- ``check_inputs.npy`` / ``check_outputs.npy``: a few validation samples and the program's outputs on them;
- ``manifest.json``: format ``nnperf-synthesis`` version 1 (see docs/formats.md).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from nnperf.optimize.synthesize._errors import SynthesisError

MANIFEST_FORMAT = "nnperf-synthesis"
MANIFEST_VERSION = 1
CHECK_TOLERANCE = 1e-4
"""``run.py --check`` accepts ``max|y - stored| <= CHECK_TOLERANCE * max|stored|``: the same model on the same
runtime and settings reproduces its outputs up to the order of floating-point reductions across threads."""

RUNNER = '''#!/usr/bin/env python3
"""Runs the network synthesised by nnperf ({network}): {label}.

Needs only {runtime_package} and numpy. Usage:
    python run.py --input x.npy --output y.npy   # a batch (N, {sample_shape}) of float32 samples
    python run.py --check                        # rerun check_inputs.npy, compare with check_outputs.npy
    python run.py --time 50                      # median latency of 50 runs of one sample
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODEL = HERE / {model_file!r}
TOLERANCE = {tolerance!r}


def load(threads):
{loader}


def run_batch(run_one, x):
    return np.concatenate([run_one(x[i:i + 1]) for i in range(len(x))])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", type=Path)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--time", type=int, default=0, metavar="N")
    parser.add_argument("--threads", type=int, default={threads})
    args = parser.parse_args()
    run_one = load(args.threads)
    if args.input is not None:
        y = run_batch(run_one, np.load(args.input).astype(np.float32))
        if args.output is not None:
            np.save(args.output, y)
        else:
            print(json.dumps({{"top1": y.reshape(len(y), -1).argmax(axis=1).tolist()}}))
    if args.check:
        want = np.load(HERE / "check_outputs.npy")
        got = run_batch(run_one, np.load(HERE / "check_inputs.npy"))
        error = float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-30)
        same = bool((got.reshape(len(got), -1).argmax(1) == want.reshape(len(want), -1).argmax(1)).all())
        print(json.dumps({{"max_rel_error": error, "top1_equal": same}}))
        if error > TOLERANCE or not same:
            sys.exit(1)
    if args.time:
        x = np.load(HERE / "check_inputs.npy")[:1]
        run_one(x)
        times = []
        for _ in range(args.time):
            start = time.perf_counter()
            run_one(x)
            times.append(time.perf_counter() - start)
        print(json.dumps({{"median_latency_s": float(np.median(times)), "runs": args.time}}))


if __name__ == "__main__":
    main()
'''

ORT_LOADER = '''    import onnxruntime as ort

    settings = json.loads((HERE / "session.json").read_text())
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = threads
    options.execution_mode = getattr(ort.ExecutionMode, settings["execution_mode"])
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, settings["graph_optimization_level"])
    session = ort.InferenceSession(str(MODEL), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return lambda x: session.run(None, {name: x})[0]'''

AOTI_LOADER = '''    import torch

    torch.set_num_threads(threads)
    program = torch._inductor.aoti_load_package(str(MODEL))
    channels_last = {channels_last!r}

    def run_one(x):
        t = torch.from_numpy(x)
        if channels_last:
            t = t.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode():
            y = program(t)
        y = y[0] if isinstance(y, (tuple, list)) else y
        return y.float().numpy()
    return run_one'''


def ort_session_document(threads: int, execution: str, layout: str) -> dict[str, Any]:
    """``session.json``: the ONNX Runtime session options of a program, by their ORT names."""
    return {"intra_op_num_threads": threads, "inter_op_num_threads": threads,
            "execution_mode": "ORT_PARALLEL" if execution == "parallel" else "ORT_SEQUENTIAL",
            "graph_optimization_level": "ORT_ENABLE_ALL" if layout == "nchwc" else "ORT_ENABLE_EXTENDED"}


def runner_script(network: str, label: str, runtime: str, model_file: str, threads: int,
                  sample_shape: tuple[int, ...], channels_last: bool = False) -> str:
    """The text of ``run.py`` for a program."""
    loader = ORT_LOADER if runtime == "onnxruntime" else AOTI_LOADER.format(channels_last=channels_last)
    return RUNNER.format(network=network, label=label, runtime_package="onnxruntime" if runtime == "onnxruntime"
                         else "torch", sample_shape=", ".join(map(str, sample_shape)), model_file=model_file,
                         tolerance=CHECK_TOLERANCE, loader=loader, threads=threads)


def write_artifact(out: Path, model: Path, runtime: str, manifest: Mapping[str, Any], check_inputs: np.ndarray,
                   check_outputs: np.ndarray, session: Mapping[str, Any] | None, runner: str) -> Path:
    """Writes the folder ``out`` (created; files of an earlier synthesis there are replaced) and returns it."""
    if out.exists() and not out.is_dir():
        raise SynthesisError(f"{out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    model_file = "model.onnx" if runtime == "onnxruntime" else "model.pt2"
    for stale in ("model.onnx", "model.pt2", "session.json"):
        (out / stale).unlink(missing_ok=True)
    shutil.copyfile(model, out / model_file)
    if session is not None:
        (out / "session.json").write_text(json.dumps(session, indent=1) + "\n")
    np.save(out / "check_inputs.npy", check_inputs.astype(np.float32))
    np.save(out / "check_outputs.npy", check_outputs.astype(np.float32))
    (out / "run.py").write_text(runner)
    (out / "manifest.json").write_text(json.dumps(dict(manifest), indent=1) + "\n")
    return out


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of a synthesised folder, checked for its format and version."""
    path = folder / "manifest.json"
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise SynthesisError(f"{folder} holds no manifest.json: not a synthesised program") from None
    except json.JSONDecodeError as exc:
        raise SynthesisError(f"{path}: not JSON ({exc})") from None
    if document.get("format") != MANIFEST_FORMAT or document.get("version") != MANIFEST_VERSION:
        raise SynthesisError(f"{path}: format {document.get('format')!r} version {document.get('version')!r}, "
                             f"expected {MANIFEST_FORMAT!r} version {MANIFEST_VERSION}")
    return document

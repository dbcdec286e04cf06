"""Every figure the command line prints from one stored calibration, written to files, to compare two versions.

A refactoring must leave every prediction, report and JSON document bit-identical. Run this once with the old code
(a ``git worktree`` and ``PYTHONPATH`` pointing at its ``src``) and once with the new, on the same store, then
compare the two folders::

    nnperf calibrate --backend torch --db /tmp/same/cal.db
    PYTHONPATH=/tmp/old/src python bench/same_figures.py --db /tmp/same/cal.db --out /tmp/same/old
    python bench/same_figures.py --db /tmp/same/cal.db --out /tmp/same/new
    python bench/same_figures.py --compare /tmp/same/old /tmp/same/new

Only commands whose output follows from the store and the inputs are run (predict, inspect, accel, partition,
compare of predictions, systems); commands that measure are not, as their figures change run to run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path

NETWORKS = ("alexnet", "mobilenet_v2", "resnet18", "squeezenet1_1", "googlenet", "vgg16", "mobilenet_v3_large",
            "convnext_tiny", "vit_tiny", "yolov8n", "unet", "shufflenet_v2_x1_0")
REFERENCE_NETWORKS = ("alexnet", "vgg16", "squeezenet1_1", "googlenet")
"""The networks NeuPart's CNNergy tables ship (partition and accel read their tables)."""



def commands(system: str) -> Iterator[tuple[str, list[str]]]:
    """(file name, arguments) of every command whose figures are compared."""
    yield "systems.txt", ["systems"]
    for name in NETWORKS:
        yield f"predict-{name}.json", ["predict", name, "--system", system, "--json"]
        yield f"predict-{name}.txt", ["predict", name, "--system", system, "--top", "8"]
        yield f"inspect-{name}.json", ["inspect", name, "--json"]
        yield f"compare-{name}.json", ["compare", f"predicted:{system}", f"predicted:{system}", "--model", name,
                                       "--json"]
    for name in REFERENCE_NETWORKS:
        yield f"accel-{name}.json", ["accel", "energy", name, "--json"]
        yield f"partition-{name}.json", ["partition", name, "--json"]
        yield f"partition-system-{name}.json", ["partition", name, "--system", system, "--client-power", "15W",
                                                         "--json"]


def run_cli(argv: list[str]) -> tuple[int, str]:
    """The command run in this process: its exit code and everything it printed."""
    from nnperf.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue()


def write_figures(db: Path, out: Path, system: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for file_name, argv in commands(system):
        code, text = run_cli([*argv, "--db", str(db)] if argv[0] not in ("inspect", "accel") else argv)
        (out / file_name).write_text(f"exit {code}\n{text}")
        print(f"{file_name}: exit {code}, {len(text)} characters", flush=True)


def compare(old: Path, new: Path) -> int:
    names = sorted({p.name for p in old.iterdir()} | {p.name for p in new.iterdir()})
    differ = [n for n in names if not (old / n).exists() or not (new / n).exists()
              or (old / n).read_bytes() != (new / n).read_bytes()]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(names) - len(differ)} of {len(names)} outputs bit-identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, help="the store holding the calibration")
    parser.add_argument("--out", type=Path, help="folder for the outputs")
    parser.add_argument("--system", default="1", help="the calibrated system's id or key prefix (default 1)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"), help="compare two output folders")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.db is None or args.out is None:
        parser.error("--db and --out are needed unless --compare")
    write_figures(args.db, args.out, args.system)
    return 0


if __name__ == "__main__":
    sys.exit(main())

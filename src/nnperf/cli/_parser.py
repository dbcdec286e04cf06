"""The command line's parser: every command's options, from the ``register`` of its module."""

from __future__ import annotations

import argparse

from nnperf import __version__
from nnperf.cli import (
    accel_cmd,
    advise_cmd,
    backends_cmd,
    calibrate_cmd,
    check_cmd,
    compare_cmd,
    completion_cmd,
    evaluate_cmd,
    export_cmd,
    fleet_cmd,
    inspect_cmd,
    measurements_cmd,
    partition_cmd,
    predict_cmd,
    primitives_cmd,
    profile_cmd,
    runtimes_cmd,
    select_cmd,
    steps_cmd,
    sweep_cmd,
    synthesize_cmd,
    systems_cmd,
    zoo_cmd,
)

COMMANDS = (zoo_cmd, inspect_cmd, export_cmd, backends_cmd, check_cmd, profile_cmd, systems_cmd, measurements_cmd,
            calibrate_cmd, predict_cmd, runtimes_cmd, evaluate_cmd, sweep_cmd, steps_cmd, advise_cmd, accel_cmd, partition_cmd,
            compare_cmd, primitives_cmd, select_cmd, synthesize_cmd, fleet_cmd, completion_cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nnperf",
        description="Predict and improve how a neural network performs on a device.",
    )
    parser.add_argument("--version", action="version", version=f"nnperf {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    parser.set_defaults(root_parser=parser)  # what `nnperf completion` describes, without importing this module
    return parser

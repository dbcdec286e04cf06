"""``nnperf fleet up|status|down`` and the ``--fleet ADDRESS`` option of the measuring commands."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from nnperf.cli._backend_args import Progress, add_backend_arguments, positive_int, system_from_args

if TYPE_CHECKING:
    from nnperf.api import Store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("fleet", help="start, join, inspect or leave a fleet of measuring machines (Ray)",
                       description="A fleet is a Ray cluster whose nodes each advertise the systems they measure. "
                                   "Campaigns run on it with --fleet ADDRESS (calibrate, profile, sweep, evaluate, "
                                   "primitives profile): "
                                   "each item runs on a node of its system, one at a time per node, and comes back "
                                   "to this machine, the one writer of the store.")
    actions = p.add_subparsers(dest="fleet_command", metavar="COMMAND", required=True)
    up = actions.add_parser("up", help="start a node here: the head of a new fleet, or joining --address",
                            description="Start a Ray node on this machine that measures the system of the given "
                                        "backend settings (one measuring slot per node unless --slots). Without "
                                        "--address it starts a new fleet and prints its address. --backend "
                                        "primitives makes a node that profiles the primitive dataset (`nnperf "
                                        "primitives profile --fleet`).")
    add_backend_arguments(up)
    up.add_argument("--address", help="join the fleet at this address (HOST:PORT) instead of starting one")
    up.add_argument("--port", type=positive_int, default=6379, help="the new fleet's port (default 6379)")
    up.add_argument("--slots", type=positive_int, default=1,
                    help="items measured at once on this node, each pinned to a set of --threads cores of its own "
                         "(default 1: the item has the whole node)")
    up.add_argument("--num-cpus", type=positive_int, default=None, help="CPUs this node gives Ray (default: all)")
    up.set_defaults(run=run_up)
    status = actions.add_parser("status", help="the fleet's nodes and the systems each measures")
    add_fleet_argument(status, default="auto")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(run=run_status)
    down = actions.add_parser("down", help="stop this machine's Ray node (ray stop)")
    down.set_defaults(run=run_down)


def add_fleet_argument(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    """The ``--fleet ADDRESS`` option."""
    parser.add_argument("--fleet", metavar="ADDRESS", default=default,
                        help="measure on the fleet (Ray cluster) at ADDRESS, HOST:PORT or auto, on the nodes of this "
                             "system (see `nnperf fleet`)" + (f"; default {default}" if default else ""))


def run_up(args: argparse.Namespace) -> int:
    from nnperf.api import fleet_up
    from nnperf.report import console

    settings = system_from_args(args)
    address = fleet_up([settings], args.address, slots=args.slots, num_cpus=args.num_cpus, port=args.port)
    action = "joined" if args.address else "started"
    console().print(f"{action} the fleet at {address}: this node measures {settings.label} ({args.slots} slot"
                    f"{'s' if args.slots > 1 else ''}); use --fleet {address}")
    return 0


def run_status(args: argparse.Namespace) -> int:
    from rich.table import Table

    from nnperf.api import fleet_status
    from nnperf.report import console

    status = fleet_status(args.fleet)
    nodes, busy = status.nodes, status.busy_slots
    if args.json:
        print(json.dumps({"format": "nnperf-fleet-status", "version": 1, "address": args.fleet, "nodes": [
            {"name": n.name, "node_id": n.node_id, "address": n.address, "alive": n.alive, "cpus": n.cpus,
             "systems": n.systems} for n in nodes], "busy_slots": busy}, indent=1))
        return 0
    table = Table(title=f"fleet at {args.fleet}")
    for column in ("node", "address", "alive", "CPUs", "systems (key: slots)"):
        table.add_column(column)
    for n in nodes:
        table.add_row(n.name, n.address, "yes" if n.alive else "no", f"{n.cpus:g}",
                      ", ".join(f"{k}: {v:g}" for k, v in sorted(n.systems.items())) or "none")
    out = console()
    out.print(table)
    for key, used in sorted(busy.items()):
        out.print(f"system {key}: {used:g} slot{'s' if used != 1 else ''} measuring now")
    return 0


def run_down(args: argparse.Namespace) -> int:
    from nnperf.api import fleet_down
    from nnperf.report import console

    fleet_down()
    console().print("this machine's Ray node stopped")
    return 0


class FleetProgress(Progress):
    """The campaign's progress bar and, below it, one line per node counting the items it measured."""

    def __init__(self, enabled: bool, label: str) -> None:
        super().__init__(enabled, label)
        self.node_tasks: dict[str, Any] = {}
        self.counts: dict[str, int] = {}

    def node(self, node: str, label: str) -> None:
        """The ``on_result`` of :func:`nnperf.api.fleet_runners`: ``node`` measured the item ``label``."""
        self.counts[node] = self.counts.get(node, 0) + 1
        if self.bar is None:
            return
        if node not in self.node_tasks:
            self.node_tasks[node] = self.bar.add_task(node, total=None)
        self.bar.update(self.node_tasks[node], description=f"  {node}: {self.counts[node]} items, last {label}"[:48],
                        completed=self.counts[node])


@contextmanager
def measuring(args: argparse.Namespace, store: Store | str | None, label: str = "profiling"
              ) -> Iterator[tuple[Any, Any]]:
    """(system, progress callback) for a measuring command: the settings of the backend options and a progress
    bar, or with ``--fleet`` the runner of the fleet's nodes of this system (:func:`nnperf.api.fleet_runner`,
    which refuses several systems: a command measures one; ``nnperf calibrate --fleet`` calibrates each) and a bar
    with one line per node."""
    enabled = not getattr(args, "json", False)
    if not getattr(args, "fleet", None):
        with Progress(enabled, label) as progress:
            yield system_from_args(args), progress
        return
    from nnperf.api import fleet_runner

    bar = FleetProgress(enabled, label)
    with fleet_runner(args.fleet, system_from_args(args), store, on_result=bar.node) as runner, bar as progress:
        yield runner, progress


@contextmanager
def fleet_runners(args: argparse.Namespace, store: Store, label: str) -> Iterator[tuple[list[Any], Any]]:
    """Every runner (one per system) of the fleet at ``args.fleet`` for the backend settings, and the progress
    callback; the runners record where they measured in ``store`` when the block ends."""
    from nnperf.api import fleet_runners as runners_of

    bar = FleetProgress(not getattr(args, "json", False), label)
    with runners_of(args.fleet, system_from_args(args), store, on_result=bar.node) as runners, bar as progress:
        yield runners, progress


@contextmanager
def measuring_backend(args: argparse.Namespace, store: Store) -> Iterator[Any]:
    """The settings of the backend options, or with ``--fleet`` the runner of the fleet's nodes of this system
    (without the per-node progress lines: for commands that show progress bars of their own)."""
    if not getattr(args, "fleet", None):
        yield system_from_args(args)
        return
    with measuring(args, store) as (runner, _progress):
        yield runner


def calibrate_on_fleet(args: argparse.Namespace) -> int:
    """``nnperf calibrate --fleet``: every system the fleet has for these settings, calibrated in turn."""
    from nnperf.api import calibrate
    from nnperf.cli._store_arg import open_store
    from nnperf.cli._units import parse_sample_budget
    from nnperf.errors import NnperfError
    from nnperf.report import console
    from nnperf.report.predictions import calibration_document, calibration_summary, calibration_table

    if args.energy or args.if_needed or args.held_out:
        raise NnperfError("--energy, --if-needed and --held-out calibrate in this process: run them without --fleet")
    sample_budget_s = parse_sample_budget(args.sample_budget)
    out, documents = console(), []
    with open_store(args) as store, fleet_runners(args, store, "calibrating") as (runners, progress):
        for runner in runners:
            model = calibrate(runner, store, budget_s=args.budget_s, target_ci=args.target_ci,
                              sample_budget_s=sample_budget_s, blocks=args.blocks, progress=progress, check=False)
            if args.json:
                documents.append(calibration_document(model, str(store.path)))
                continue
            out.print(f"{model.system_label} on {len(runner.nodes)} node(s) of system {runner.system().key}:")
            out.print(calibration_table(model))
            for line in calibration_summary(model, str(store.path)):
                out.print(line)
    if args.json:
        print(json.dumps(documents[0] if len(documents) == 1 else documents, indent=1))
    return 0

"""What ``nnperf accel`` and ``nnperf partition`` run on: a layer table or an IR network, an accelerator spec."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path

from nnperf.accel import AcceleratorSpec, AccelLayer, IrMapping
from nnperf.errors import NnperfError
from nnperf.ir import Network

ZOO_TABLES = {"alexnet": "alexnet", "vgg16": "vgg16", "squeezenet1_1": "squeezenet_v11", "googlenet": "googlenet_v1"}
"""Zoo networks whose layers match a shipped CNNergy table row for row (for ``--sparsity table``)."""


@dataclass(frozen=True)
class AccelSource:
    name: str
    rows: tuple[AccelLayer, ...]
    spec: AcceleratorSpec
    batch: str
    """'table' for layer tables (their n), 'model' for IR networks (the model's choice)"""
    mapping: IrMapping | None = None
    sparsity: dict[str, float] | None = None
    sparsity_note: str = ""

    @property
    def network(self) -> Network | None:
        return self.mapping.network if self.mapping is not None else None


def add_source_arguments(parser: argparse.ArgumentParser, default_bits: int, bits_reason: str,
                         with_system: bool = False) -> None:
    """MODEL, --network, --table, --bits, --spec, ... ; ``with_system`` when the command also takes --system
    (which, like --sparsity and --images, sends a reference network's name through the IR path)."""
    ir_options = "--sparsity, --images or --system" if with_system else "--sparsity or --images"
    parser.add_argument("model", nargs="?", metavar="MODEL",
                        help="a zoo name, .onnx or IR .json file (its conv and FC layers become rows); the names "
                             "of the four reference networks (alexnet, vgg16, squeezenet_v11 = squeezenet1_1, "
                             f"googlenet_v1 = googlenet) take their shipped table unless {ir_options} is given")
    parser.add_argument("--network", metavar="NAME",
                        help="one of the public CNNergy model's networks: alexnet, vgg16, squeezenet_v11, "
                             "googlenet_v1 (shipped layer tables with their sparsities and batches)")
    parser.add_argument("--table", type=Path, metavar="FILE.csv",
                        help="a layer table: name,R,M,H,C,U,E,s_if,s_of,n (optional groups,out,block)")
    parser.add_argument("--bits", type=int, choices=(16, 8), default=None,
                        help=f"data width; the reference's scaling rules apply to 8 bits (default {default_bits}: "
                             f"{bits_reason}; or the spec file's)")
    parser.add_argument("--spec", type=Path, metavar="SPEC.yaml",
                        help="accelerator spec (YAML, 'version: 1'; default the Eyeriss-like accelerator; "
                             "'nnperf accel spec' prints a complete one)")
    parser.add_argument("--no-control", action="store_true",
                        help="leave out clock and other control energy (the reference's 'without control' variant)")
    parser.add_argument("--sparsity", default=None, metavar="SOURCE",
                        help="for MODEL: 'measure' (run it on --images; default), 'table' (borrow the shipped table "
                             "of the same zoo network), 'table:NAME', or a CSV file 'tensor,sparsity'")
    parser.add_argument("--images", nargs="+", metavar="PATH",
                        help="images or folders for --sparsity measure (default: matplotlib's sample photograph)")
    parser.set_defaults(default_bits=default_bits)


def load_source(args: argparse.Namespace) -> AccelSource:
    from nnperf import accel

    chosen = [x for x in (args.model, args.network, args.table) if x]
    if len(chosen) != 1:
        raise NnperfError("name exactly one of MODEL, --network NAME or --table FILE.csv")
    spec = _spec(args)
    if args.model and _reference_name(args):
        args.network, args.model = args.model, None
    if args.network or args.table:
        if args.sparsity or args.images:
            raise NnperfError("--sparsity and --images apply to MODEL; layer tables carry their own sparsities")
        rows = accel.reference_network(args.network) if args.network else accel.read_table(args.table)
        name = args.network or args.table.stem
        return AccelSource(name=name, rows=tuple(rows), spec=spec, batch="table")
    from nnperf.api import load_model

    network = load_model(args.model)
    sparsity, note = _sparsity(args, network)
    mapping = accel.map_network(network, sparsity)
    return AccelSource(name=network.name, rows=mapping.rows, spec=spec, batch="model", mapping=mapping,
                       sparsity=sparsity, sparsity_note=note)


def _reference_name(args: argparse.Namespace) -> bool:
    """Whether MODEL names a shipped table and nothing asks for the IR path instead."""
    from nnperf.accel import NETWORK_ALIASES, REFERENCE_NETWORKS

    name = args.model.lower()
    wants_ir = args.sparsity is not None or args.images or getattr(args, "system", None) is not None
    return not wants_ir and (name in REFERENCE_NETWORKS or name in NETWORK_ALIASES)


def _spec(args: argparse.Namespace) -> AcceleratorSpec:
    from nnperf import accel

    if args.spec:
        spec = accel.load_spec(args.spec)
        if args.bits is not None and args.bits != spec.bits:
            raise NnperfError(f"--bits {args.bits} contradicts {args.spec} (bits: {spec.bits}); drop one of them")
    else:
        spec = accel.eyeriss_spec(args.bits or args.default_bits)
    if args.no_control:
        spec = replace(spec, clock_power_w=0.0, control_fraction=0.0)
    return spec


def _sparsity(args: argparse.Namespace, network: Network) -> tuple[dict[str, float], str]:
    from nnperf import accel

    source = args.sparsity or "measure"
    if args.images and source != "measure":
        raise NnperfError("--images applies to --sparsity measure only")
    if source == "measure":
        images = accel.image_files(args.images) if args.images else accel.sample_images()
        if not images:
            raise NnperfError("no images to measure sparsity on: pass --images PATH")
        from nnperf.cli._backend_args import Progress

        with Progress(not getattr(args, "json", False), "measuring sparsity") as update:
            sparsity = accel.measure_sparsity(
                network, images, progress=(lambda d, t: update("measuring sparsity", d, t)) if update else None)
        return sparsity, (f"sparsity measured on {len(images)} image(s) with nnperf's seeded weights "
                          "(the IR carries no trained weights)")
    if source == "table" or source.startswith("table:"):
        table = source.partition(":")[2] or ZOO_TABLES.get(args.model.lower(), "")
        if not table:
            raise NnperfError(f"no shipped table matches {args.model!r}; name one with --sparsity table:NAME "
                              f"({', '.join(accel.REFERENCE_NETWORKS)})")
        return accel.table_sparsity(network, accel.reference_network(table)), f"sparsity borrowed from table {table}"
    return accel.read_sparsity(source, network), f"sparsity from {source}"

"""``nnperf accel``: CNNergy energy of a network on a CNN accelerator, its schedule, and design sweeps."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nnperf.cli._accel_source import add_source_arguments, source_options
from nnperf.cli._backend_args import Progress
from nnperf.errors import NnperfError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("accel", help="energy on a CNN accelerator (CNNergy), its schedule, design sweeps",
                       description="The analytical CNNergy model of NeuPart: energy per image of each conv and FC "
                                   "layer on a row-stationary accelerator (Eyeriss-like by default), with its "
                                   "breakdown and scheduling parameters, and design-space sweeps.")
    commands = p.add_subparsers(dest="accel_command", metavar="COMMAND", required=True)

    energy = commands.add_parser("energy", help="energy per layer and in total",
                                 description="Energy per image of each layer with its breakdown (MAC, RF, inter-PE, "
                                             "GLB, DRAM, clock, other control) and the cumulative energy.")
    add_source_arguments(energy, default_bits=16, bits_reason="the CNNergy reference model's width")
    energy.add_argument("--explain", action="store_true",
                        help="print each layer's scheduling parameters and the exception rules that fired")
    energy.add_argument("--blocks", action="store_true",
                        help="sum rows into reporting layers (SqueezeNet fire expand, inception modules)")
    energy.add_argument("--plot", type=Path, metavar="FILE.png", help="write the energy per layer as a figure")
    energy.add_argument("--json", action="store_true", help="print JSON (energies in joules) instead of tables")
    energy.set_defaults(run=run_energy)

    sweep = commands.add_parser("sweep", help="energy over GLB sizes, PE arrays and register files",
                                description="Design-space exploration (NeuPart VIII-B, Fig. 13(c)): the network's "
                                            "energy at every GLB size, PE array and register-file scale, the optimum "
                                            "and the smallest GLB within 2% of it. Every point re-schedules with the "
                                            "model's own batch choice.")
    add_source_arguments(sweep, default_bits=8, bits_reason="NeuPart's design sweep, Fig. 13(c)")
    sweep.add_argument("--glb", default="4,8,16,24,32,48,64,88,100,128,192,256,384,512", metavar="KB,...",
                       help="GLB sizes in kB (default 4 to 512)")
    sweep.add_argument("--pe", default=None, metavar="JxK,...", help="PE arrays, e.g. 12x14,16x16 (default the spec's)")
    sweep.add_argument("--rf-scale", default="1", metavar="X,...",
                       help="register files as multiples of the spec's, e.g. 0.5,1,2 (default 1)")
    sweep.add_argument("--glb-law", choices=("sqrt", "constant"), default="sqrt",
                       help="GLB energy per access vs size: 'sqrt' (CACTI-like, default) or 'constant' (the public "
                            "model, which cannot show an optimum)")
    sweep.add_argument("--plot", type=Path, metavar="FILE.png", help="write energy vs GLB size as a figure")
    sweep.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sweep.set_defaults(run=run_sweep)

    spec = commands.add_parser("spec", help="print an accelerator spec as YAML (the defaults, or a file's)",
                               description="Print a complete accelerator spec as YAML (or JSON): a starting point "
                                           "for your own.")
    spec.add_argument("--bits", type=int, choices=(16, 8), default=16, help="data width of the defaults (16)")
    spec.add_argument("--spec", type=Path, metavar="SPEC.yaml", help="print this file's spec with defaults filled in")
    spec.add_argument("--json", action="store_true", help="print the spec as JSON instead of YAML")
    spec.set_defaults(run=run_spec)


def run_energy(args: argparse.Namespace) -> int:
    from nnperf.api import accel_energy
    from nnperf.report import console
    from nnperf.report.accel import energy_table, explain_table

    with Progress(not args.json, "measuring sparsity") as progress:
        result = accel_energy(args.model, args.spec, **source_options(args), plot=args.plot, progress=progress)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    out = console()
    out.print(energy_table(result.energy, by_block=args.blocks))
    if args.explain:
        out.print(explain_table(result.energy))
    if result.sparsity_source:
        out.print(result.sparsity_source)
    for path in result.files:
        out.print(f"wrote {path}")
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    from nnperf.api import accel_sweep
    from nnperf.report import console
    from nnperf.report.accel import sweep_report

    glb = _numbers(args.glb, "--glb")
    scales = _numbers(args.rf_scale, "--rf-scale")
    arrays = [_array(text) for text in args.pe.split(",")] if args.pe else None
    with Progress(not args.json, "design sweep") as progress:
        result = accel_sweep(args.model, args.spec, glb_kb=glb, pe_arrays=arrays, rf_scales=scales,
                             glb_law=args.glb_law, **source_options(args), plot=args.plot, progress=progress)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    out = console()
    out.print(sweep_report(result.sweep))
    for path in result.files:
        out.print(f"wrote {path}")
    return 0


def run_spec(args: argparse.Namespace) -> int:
    from nnperf.api import accel_spec, accel_spec_yaml

    spec = accel_spec(args.spec, bits=args.bits)
    if args.json:
        print(json.dumps(spec.to_dict(), indent=1))
    else:
        print(accel_spec_yaml(spec), end="")
    return 0

def _numbers(text: str, option: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise NnperfError(f"{option}: {text!r} is not a comma-separated list of numbers") from None
    if not values or any(not v > 0 for v in values):
        raise NnperfError(f"{option}: every value must be > 0, got {text!r}")
    return values


def _array(text: str) -> tuple[int, int]:
    rows, _, cols = text.lower().partition("x")
    try:
        shape = int(rows), int(cols)
    except ValueError:
        raise NnperfError(f"--pe: {text!r} is not a PE array like 12x14") from None
    if min(shape) < 1:
        raise NnperfError(f"--pe: {text!r} needs at least one row and one column")
    return shape

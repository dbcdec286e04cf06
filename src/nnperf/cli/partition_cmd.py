"""``nnperf partition``: the energy-optimal split of a network between a client and the cloud (NeuPart)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nnperf.cli._accel_source import add_source_arguments, source_options
from nnperf.cli._backend_args import Progress
from nnperf.cli._store_arg import add_db_argument
from nnperf.cli._units import parse_bitrate_sweep


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("partition", help="where to split a network between the client and the cloud",
                       description="NeuPart: the client's energy cost (compute up to the split plus transmitting "
                                   "what is left, RLC-coded) at every split point, the energy-optimal one, the "
                                   "savings against fully cloud (FCC) and fully in situ (FISC) computation and the "
                                   "end-to-end delay. The client is the CNNergy accelerator (8-bit by default, as "
                                   "NeuPart evaluates) or, with --system, a calibrated CPU or GPU.")
    add_source_arguments(p, default_bits=8, bits_reason="NeuPart's partitioning results",
                         with_system=True)
    p.add_argument("--bitrate", default="60Mbps", help="effective uplink bit rate, e.g. 60Mbps (default)")
    p.add_argument("--tx-power", default="0.5W", help="transmit power, e.g. 0.5W or 500mW (default 0.5W)")
    coding = p.add_mutually_exclusive_group()
    coding.add_argument("--input-sparsity", type=float, default=None,
                        help="send the image RLC-coded with this zero fraction (default 0.608, NeuPart's median "
                             "JPEG sparsity)")
    coding.add_argument("--jpeg-bytes", type=float, default=None, help="send the image as a JPEG of this size")
    p.add_argument("--send", choices=("both", "ofmap", "next-input"), default="both",
                   help="for layer tables: send a layer's ofmap before pooling, the next layer's input after it, "
                        "or offer both split points where they differ (default)")
    p.add_argument("--cloud-tops", type=float, default=92.0,
                   help="cloud throughput in tera-operations/s, two per MAC (default 92, a TPU)")
    p.add_argument("--system", metavar="ID|KEY",
                   help="client = this stored system (see `nnperf systems`): per-layer latency (and energy, where "
                        "calibrated with a power meter) predicted by its calibration, for MODEL")
    p.add_argument("--client-power", default=None, metavar="W",
                   help="with --system and no energy calibration: the client's average power while computing, "
                        "e.g. 15W (energy = power x predicted latency)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="write fig10_energy_cost.png, fig12_savings.png, fig13a_delay.png and pareto.png here")
    p.add_argument("--sweep-bitrates", default="5:200:5", metavar="START:STOP:STEP",
                   help="bit rates in Mbit/s for the figures (default 5:200:5)")
    p.add_argument("--sweep-powers", default="", metavar="W,...",
                   help="more transmit powers for Fig. 12 and 13(a), drawn as context curves beside --tx-power "
                        "(default none; 0.5,1.3 are NeuPart's)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.api import partition
    from nnperf.report import console
    from nnperf.report.partition import partition_table, quartile_rich_table

    figures = {}
    if args.out:  # the figures' sweeps are read only when figures are asked for
        figures = {"out": args.out, "sweep_bitrates_bps": parse_bitrate_sweep(args.sweep_bitrates),
                   "sweep_powers_w": [p for p in args.sweep_powers.split(",") if p.strip()]}
    with Progress(not args.json, "measuring sparsity") as progress:
        found = partition(args.model, args.system, args.db, spec=args.spec, **source_options(args),
                          bitrate=args.bitrate, tx_power=args.tx_power, input_sparsity=args.input_sparsity,
                          jpeg_bytes=args.jpeg_bytes, send=args.send, cloud_tops=args.cloud_tops,
                          client_power=args.client_power, progress=progress, **figures)
    if args.json:
        print(json.dumps(found.to_dict(), indent=1))
        return 0
    out = console()
    out.print(partition_table(found.result, f"{found.network}: client {found.client}, input {found.input}"))
    if found.quartiles:
        out.print(quartile_rich_table(found.quartiles, "savings at NeuPart's input-sparsity quartile delimiters "
                                                       "(Table IV form; the paper averages over each quartile's "
                                                       "images)"))
    out.print(f"Pareto front (client energy vs end-to-end delay): {', '.join(found.pareto_front)}")
    if found.sparsity_source:
        out.print(found.sparsity_source)
    for path in found.files:
        out.print(f"wrote {path}")
    return 0

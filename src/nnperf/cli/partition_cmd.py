"""``nnperf partition``: the energy-optimal split of a network between a client and the cloud (NeuPart)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nnperf.cli._accel_source import add_source_arguments, load_source
from nnperf.cli._store_arg import add_db_argument, open_store
from nnperf.cli._units import parse_bitrate_sweep
from nnperf.errors import NnperfError


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
    p.add_argument("--sweep-powers", default="0.5,1.3", metavar="W,...",
                   help="transmit powers for the figures (default 0.5,1.3, NeuPart's)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    add_db_argument(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from nnperf.accel import network_energy
    from nnperf.optimize.partition import (
        NEUPART_INPUT_SPARSITIES,
        Channel,
        InputCoding,
        cloud_macs_per_s,
        network_points,
        pareto_front,
        parse_bitrate,
        parse_power,
        partition,
        quartile_table,
        table_points,
    )
    from nnperf.report import console
    from nnperf.report.partition import partition_table, quartile_rich_table

    channel = Channel(parse_bitrate(args.bitrate), parse_power(args.tx_power))
    input_sparsity = 0.608 if args.input_sparsity is None and args.jpeg_bytes is None else args.input_sparsity
    coding = InputCoding(sparsity=input_sparsity, jpeg_bytes=args.jpeg_bytes)
    cloud = cloud_macs_per_s(args.cloud_tops)
    if args.system is not None and not args.model:
        raise NnperfError("--system partitions an IR network: name a MODEL (zoo name, .onnx or .json)")
    source = load_source(args)
    energy = network_energy(source.rows, source.spec, source.name, batch=source.batch)
    client = f"CNNergy accelerator ({source.spec.name}, {source.spec.bits}-bit)"
    client_energy = {row.layer.name: row.energy_j for row in energy.layers}
    client_latency = {row.layer.name: row.latency_s for row in energy.layers}
    if args.system is not None:
        assert source.mapping is not None
        client, client_energy, client_latency = _system_client(args, source.mapping.network)

    def points_for(coding: InputCoding):  # type: ignore[no-untyped-def]
        if source.mapping is None:
            return table_points(energy, coding, args.send, cloud)
        assert source.sparsity is not None
        return network_points(source.mapping.network, client_energy, client_latency, source.sparsity, coding,
                              source.spec.rlc_factor, cloud)

    points = points_for(coding)
    result = partition(points, channel)
    quartiles = (quartile_table(lambda s: points_for(InputCoding(sparsity=s)), NEUPART_INPUT_SPARSITIES, channel)
                 if args.jpeg_bytes is None else [])
    files = _figures(args, points, result) if args.out else []
    if args.json:
        document = result.to_dict()
        document.update({"network": source.name, "client": client, "input": coding.label,
                         "pareto_front": [result.points[i].name for i in pareto_front(result)],
                         "quartiles": [vars(row) for row in quartiles], "files": [str(f) for f in files]})
        if source.sparsity_note:
            document["sparsity_source"] = source.sparsity_note
        print(json.dumps(document, indent=1))
        return 0
    out = console()
    out.print(partition_table(result, f"{source.name}: client {client}, input {coding.label}"))
    if quartiles:
        out.print(quartile_rich_table(quartiles, "savings at NeuPart's input-sparsity quartile delimiters "
                                                 "(Table IV form; the paper averages over each quartile's images)"))
    front = ", ".join(result.points[i].name for i in pareto_front(result))
    out.print(f"Pareto front (client energy vs end-to-end delay): {front}")
    if source.sparsity_note:
        out.print(source.sparsity_note)
    for path in files:
        out.print(f"wrote {path}")
    return 0


def _system_client(args: argparse.Namespace, network):  # type: ignore[no-untyped-def]
    from nnperf.optimize.partition import parse_power
    from nnperf.prediction import load_stored_model

    with open_store(args, create=False) as store:
        model = load_stored_model(store, args.system)
    prediction = model.predict(network)
    latency = {p.layer: p.latency_s for p in prediction.layers}
    if all(p.energy_j is not None for p in prediction.layers):
        energy = {p.layer: float(p.energy_j or 0.0) for p in prediction.layers}
        how = "energy predicted by its calibration"
    elif args.client_power is not None:
        power = parse_power(args.client_power)
        energy = {name: power * seconds for name, seconds in latency.items()}
        how = f"energy = {power:g} W x predicted latency"
    else:
        raise NnperfError(f"system {args.system} ({model.system_label}) was calibrated without a power meter, so it "
                          "predicts no energy: give the client's average power with --client-power W")
    return f"{model.system_label} (latency predicted per layer; {how})", energy, latency


def _figures(args: argparse.Namespace, points, result) -> list[Path]:  # type: ignore[no-untyped-def]
    from nnperf.optimize.partition import parse_power, sweep_channels
    from nnperf.report.partition import plot_delay, plot_energy_cost, plot_pareto, plot_savings

    bitrates = parse_bitrate_sweep(args.sweep_bitrates)
    powers = [parse_power(p) for p in args.sweep_powers.split(",")]
    sweep = sweep_channels(points, bitrates, powers)
    out: Path = args.out
    return [plot_energy_cost(result, out / "fig10_energy_cost.png"), plot_savings(sweep, out / "fig12_savings.png"),
            plot_delay(sweep, out / "fig13a_delay.png"), plot_pareto(result, out / "pareto.png")]

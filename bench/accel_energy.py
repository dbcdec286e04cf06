"""CNNergy energy, NeuPart partitioning and accelerator design sweeps.

Run: .venv/bin/python bench/accel_energy.py [--json bench/results/accel/accel_energy.json]
     [--figures bench/results/accel]

1. Energy per layer and in total of the public CNNergy model's four networks (the shipped tables), at
   16 and 8 bits, with the breakdown; the evaluation time per network (median of 50 evaluations).
2. NeuPart partitioning of the four networks with the 8-bit accelerator at 60 Mbit/s / 0.5 W and at
   100 Mbit/s / 1 W: the optimum, savings against FCC and FISC, at the three input-sparsity quartile
   delimiters (Table IV form); the runtime decision time (RuntimePartitioner.decide, median of 10,000).
3. The GLB-size sweep of AlexNet at 8 bits (Fig. 13(c)) with the constant and the sqrt GLB law.
4. The zoo networks through the IR path with sparsity measured on matplotlib's sample photograph.

Everything here is analytical except the timings and the measured sparsities. Stdout gets Markdown.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from _shared import markdown_table, pct, write_result

from nnperf import accel
from nnperf.api import load_model
from nnperf.optimize.partition import (
    NEUPART_INPUT_SPARSITIES,
    Channel,
    InputCoding,
    RuntimePartitioner,
    partition,
    quartile_table,
    table_points,
)

NETWORKS = ("alexnet", "vgg16", "squeezenet_v11", "googlenet_v1")
CHANNELS = ((60e6, 0.5), (60e6, 1.0), (100e6, 1.0))
"""Table IV uses 60 Mbit/s with 0.5 W (AlexNet, SqueezeNet) and 1 W (GoogLeNet); Fig. 10 uses 100 Mbit/s, 1 W."""
GLB_KB = (4, 8, 16, 24, 32, 48, 64, 88, 100, 128, 192, 256, 384, 512)
ZOO = (("alexnet", "alexnet"), ("vgg16", "vgg16"), ("squeezenet1_1", "squeezenet_v11"), ("googlenet", "googlenet_v1"),
       ("resnet18", None), ("mobilenet_v2", None))


def median_time_s(fn: Any, repeats: int) -> tuple[float, float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    q1, med, q3 = np.percentile(times, [25, 50, 75])
    return float(med), float(q1), float(q3)


def energies() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in NETWORKS:
        rows = accel.reference_network(name)
        for bits in (16, 8):
            spec = accel.eyeriss_spec(bits)
            energy = accel.network_energy(rows, spec, name)
            med, q1, q3 = median_time_s(lambda rows=rows, spec=spec: accel.network_energy(rows, spec), 50)
            out[f"{name}/{bits}"] = {
                "total_j": energy.total_j, "breakdown_j": energy.breakdown(),
                "blocks_j": {b: sum(r.energy_j for r in rs) for b, rs in energy.blocks()},
                "layers_j": {r.name: r.energy_j for r in energy.layers},
                "eval_time_s": {"median": med, "q1": q1, "q3": q3}}
    return out


def partitions() -> tuple[dict[str, Any], dict[str, float]]:
    out: dict[str, Any] = {}
    decide: dict[str, float] = {}
    for name in NETWORKS:
        energy = accel.network_energy(accel.reference_network(name), accel.eyeriss_spec(8), name)
        for bitrate, power in CHANNELS:
            channel = Channel(bitrate, power)
            rows = quartile_table(lambda s, energy=energy: table_points(energy, InputCoding(sparsity=s)),
                                  NEUPART_INPUT_SPARSITIES, channel)
            out[f"{name}/{bitrate / 1e6:g}Mbps/{power:g}W"] = [
                {"input_sparsity": r.input_sparsity, "best": r.best_name, "energy_cost_j": r.energy_cost_j,
                 "savings_vs_fcc": r.savings_vs_fcc, "savings_vs_fisc": r.savings_vs_fisc, "delay_s": r.delay_s}
                for r in rows]
        points = table_points(energy, InputCoding(sparsity=0.608))
        runtime = RuntimePartitioner.from_points(points)
        channel = Channel(60e6, 0.5)
        assert runtime.decide(channel) == partition(points, channel).best
        med, _, _ = median_time_s(lambda runtime=runtime, channel=channel: runtime.decide(channel, 7.0e5), 10_000)
        decide[name] = med
        decide[f"{name}/points"] = len(points)
    return out, decide


def glb_sweep(figures: Path | None) -> dict[str, Any]:
    from nnperf.report.accel import plot_sweep

    out: dict[str, Any] = {}
    rows = accel.reference_network("alexnet")
    for law in ("constant", "sqrt"):
        spec = replace(accel.eyeriss_spec(8), glb_energy_law=law)
        sweep = accel.sweep_design(rows, spec, GLB_KB, name="alexnet")
        out[law] = {"points": {p.glb_kb: p.energy_j for p in sweep.points}, "best_kb": sweep.best.glb_kb,
                    "within_2_percent_kb": sweep.smallest_near_best().glb_kb}
        if figures:
            plot_sweep(sweep, figures / f"fig13c_glb_{law}.png")
    return out


def zoo_ir() -> dict[str, Any]:
    out: dict[str, Any] = {}
    images = accel.sample_images()
    for zoo_name, table in ZOO:
        network = load_model(zoo_name)
        start = time.perf_counter()
        measured = accel.measure_sparsity(network, images)
        sparsity_s = time.perf_counter() - start
        entry: dict[str, Any] = {"rows": len(accel.energy_layers(network)), "measure_sparsity_s": sparsity_s}
        for label, sparsity in (("measured", measured),) + ((("table", accel.table_sparsity(
                network, accel.reference_network(table))),) if table else ()):
            mapping = accel.map_network(network, sparsity)
            energy = accel.network_energy(mapping.rows, accel.eyeriss_spec(16), zoo_name, batch="model")
            entry[f"{label}_total_j"] = energy.total_j
            entry[f"{label}_mean_ofmap_sparsity"] = float(np.mean([r.ofmap_sparsity for r in mapping.rows]))
        out[zoo_name] = entry
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = ["### Energy per image of the four reference networks (mJ)", ""]
    rows = []
    for name in NETWORKS:
        e16, e8 = report["energy"][f"{name}/16"], report["energy"][f"{name}/8"]
        t = e16["eval_time_s"]
        rows.append([name, f"{e16['total_j'] * 1e3:.3f}", f"{e8['total_j'] * 1e3:.3f}",
                     pct(e16["breakdown_j"]["dram"] / e16["total_j"]),
                     f"{t['median'] * 1e3:.2f} ms ({t['q1'] * 1e3:.2f}-{t['q3'] * 1e3:.2f})"])
    lines.append(markdown_table(["network", "16-bit", "8-bit", "16-bit DRAM share", "evaluation time (median, IQR)"],
                                rows))
    for name in NETWORKS:
        e16, e8 = report["energy"][f"{name}/16"], report["energy"][f"{name}/8"]
        lines += ["", f"{name}, per reporting layer (uJ, 16-bit / 8-bit): " + ", ".join(
            f"{b} {e16['blocks_j'][b] * 1e6:.1f}/{e8['blocks_j'][b] * 1e6:.1f}" for b in e16["blocks_j"])]
    lines += ["", "### Partitioning, 8-bit accelerator client (input RLC-coded at the quartile delimiters)", ""]
    rows = []
    for key, found in report["partition"].items():
        name, rate, power = key.split("/")
        rows.append([name, f"{rate}, {power}", *(f"{r['best']}, {pct(r['savings_vs_fcc'])}" for r in found),
                     pct(found[0]["savings_vs_fisc"]), f"{found[1]['delay_s'] * 1e3:.2f} ms"])
    lines.append(markdown_table(["network", "channel", "s_in 51.99%: optimum, vs FCC", "60.80%", "69.09%",
                                 "vs FISC at 51.99%", "delay at 60.80%"], rows))
    lines += ["", "Runtime decision (RuntimePartitioner.decide, median of 10,000): " + ", ".join(
        f"{n} {report['decide_s'][n] * 1e6:.1f} us ({report['decide_s'][n + '/points']} points)" for n in NETWORKS)]
    lines += ["", "### GLB sweep, AlexNet 8-bit (total mJ)", "",
              markdown_table(["GLB kB", *map(str, GLB_KB)],
                             [[law, *(f"{data['points'][float(g)] * 1e3:.3f}" for g in GLB_KB)]
                              for law, data in report["glb_sweep"].items()])]
    for law, data in report["glb_sweep"].items():
        lines.append(f"\n{law}: optimum {data['best_kb']:g} kB, smallest within 2%: {data['within_2_percent_kb']:g} kB")
    lines += ["", "### Zoo networks through the IR (16-bit, model's batch choice)", "",
              markdown_table(["network", "rows", "measured sparsity: mean s_of, total mJ", "table sparsity: total mJ",
                              "measuring took"],
                             [[name, e["rows"], (f"{pct(e['measured_mean_ofmap_sparsity'])}, "
                               f"{e['measured_total_j'] * 1e3:.3f}"),
                               f"{e['table_total_j'] * 1e3:.3f}" if "table_total_j" in e else "-",
                               f"{e['measure_sparsity_s']:.2f} s"] for name, e in report["zoo_ir"].items()])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="write the result file here (bench/results/accel/accel_energy.json)")
    parser.add_argument("--figures", type=Path, help="write the GLB sweep figures here")
    args = parser.parse_args()
    if args.figures:
        args.figures.mkdir(parents=True, exist_ok=True)
    partition_rows, decide = partitions()
    report = {"energy": energies(), "partition": partition_rows, "decide_s": decide,
              "glb_sweep": glb_sweep(args.figures), "zoo_ir": zoo_ir()}
    if args.json:
        write_result(args.json, method="accel", concern="CNNergy energy, NeuPart partitioning, GLB sweep",
                     values=report)
    print(markdown(report))


if __name__ == "__main__":
    main()

"""Fit Lin, NN1 and NN2 on the profiled primitive dataset and print their test MdRAE (Mulder et al. Fig. 4-6).

Run: PYTHONPATH=src .venv/bin/python bench/primitive_models.py [--db bench/results/primitives.db] [--threads 1]
     [--seeds 0] [--json bench/results/primitive_models.json]

Profile the dataset first (bench/primitive_dataset.py). The dataset is split 80/10/10 (configurations and
activations shuffled separately, per seed); each model is fitted on the training part with early stopping on
the validation part and scored on the test part: the median relative absolute error |predicted - measured| /
measured of every primitive and layout transformation. With several --seeds the split and the weights change
and the table gives the median over seeds. Table 4's counterpart follows: for every zoo network, the time to
predict every primitive on every convolution in one call, against the time its configurations took to profile.
Stdout gets Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from nnperf.campaign import PRIMITIVE_CAMPAIGN, load_primitive_dataset, primitive_system
from nnperf.measure import host_info
from nnperf.prediction.primitives import PrimitiveCostModel, relative_errors, split_dataset
from nnperf.primitives import config_key, conv_layer_configs, get_primitive
from nnperf.store import Store
from nnperf.zoo import names, zoo_network

KINDS = ("lin", "nn1", "nn2")

GRID: dict[str, list[dict[str, object]]] = {
    "nn2": [{"hidden": (128, 512, 512, 128), "learning_rate": 1e-3}, {"hidden": (64, 256, 256, 64), "learning_rate": 1e-3},
            {"hidden": (32, 64, 64, 32), "learning_rate": 3e-3}],
}
"""The retuning grid (--tune): Table 3's settings first; the one with the lowest validation MdRAE wins."""


def _median_error(model: PrimitiveCostModel, part) -> float:  # type: ignore[no-untyped-def]
    return float(np.median([np.median(e) for e in relative_errors(model, part).values() if len(e)]))


def tune(kind: str, train, validation, seed: int) -> tuple[dict[str, object], list[tuple[dict[str, object], float]]]:  # type: ignore[no-untyped-def]
    """The grid point of ``kind`` with the lowest median (over columns) validation MdRAE, and every point's."""
    scored = []
    for params in GRID[kind]:
        model = PrimitiveCostModel(kind, seed=seed, **params).fit(train, validation)  # type: ignore[arg-type]
        scored.append((params, _median_error(model, validation)))
    return min(scored, key=lambda item: item[1])[0], scored


def _family(name: str) -> str:
    return "layout" if "->" in name else get_primitive(name).family.value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=Path("bench/results/primitives.db"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    parser.add_argument("--tune", action="store_true",
                        help="also retune NN2 on the validation part (first seed) over a small grid of widths")
    args = parser.parse_args()
    host = host_info()
    with Store(args.db, create=False) as store:
        system = store.find_system(primitive_system(args.threads).key)
        if system is None:
            raise SystemExit(f"{args.db} holds no primitives profiled with {args.threads} thread(s) on this host")
        dataset = load_primitive_dataset(store, system.id)
        runs = {r.network_hash: r for r in store.runs(system_id=system.id) if r.campaign.startswith(PRIMITIVE_CAMPAIGN)}
    print(f"{host.cpu_model}, {host.logical_cores} logical cores, {args.threads} thread(s); dataset: "
          f"{len(dataset.conv)} configurations, {len(dataset.layout)} activations, {dataset.n_samples} samples\n")

    variants: dict[str, tuple[str, dict[str, object]]] = {kind: (kind, {}) for kind in KINDS}
    if args.tune:
        train, validation, _ = split_dataset(dataset, seed=args.seeds[0])
        for kind in GRID:
            best, scored = tune(kind, train, validation, args.seeds[0])
            print(f"{kind} retuning (validation MdRAE, median over columns): "
                  + "; ".join(f"{p} {e * 100:.1f}%" for p, e in scored) + f" -> {best}")
            variants[f"{kind}-tuned"] = (kind, best)
        print()
    variant_names = tuple(variants)
    errors: dict[str, dict[str, list[float]]] = {kind: {} for kind in variant_names}
    train_s: dict[str, list[float]] = {kind: [] for kind in variant_names}
    models: dict[str, PrimitiveCostModel] = {}
    for seed in args.seeds:
        train, validation, test = split_dataset(dataset, seed=seed)
        for kind, (base, params) in variants.items():
            start = time.perf_counter()
            model = PrimitiveCostModel(base, seed=seed, **params).fit(train, validation)  # type: ignore[arg-type]
            train_s[kind].append(time.perf_counter() - start)
            for name, e in relative_errors(model, test).items():
                if len(e):
                    errors[kind].setdefault(name, []).append(float(np.median(e)))
            models.setdefault(kind, model)
    sizes = split_dataset(dataset, seed=args.seeds[0])
    print(f"split: {', '.join(f'{len(part.conv)} {what}' for part, what in zip(sizes, ('train', 'validation', 'test'), strict=True))} "
          f"configurations; seeds {args.seeds}\n")
    columns = list(dataset.primitives) + list(dataset.transforms)
    print("| primitive | family | test times | " + " | ".join(f"{k} MdRAE" for k in variant_names) + " |")
    print("|---|---|---|" + "---|" * len(variant_names))
    test_counts = {name: len(e) for name, e in relative_errors(models["nn2"], sizes[2]).items()}
    summary: dict[str, dict[str, float]] = {kind: {} for kind in variant_names}
    for name in columns:
        cells = []
        for kind in variant_names:
            values = errors[kind].get(name)
            value = statistics.median(values) if values else None
            if value is not None:
                summary[kind][name] = value
            cells.append("-" if value is None else f"{value * 100:.1f}%")
        print(f"| {name} | {_family(name)} | {test_counts.get(name, 0)} | " + " | ".join(cells) + " |")
    for group, members in (("vendor primitives", [n for n in dataset.primitives if _family(n) == "vendor"]),
                           ("all primitives", list(dataset.primitives)),
                           ("transformations", list(dataset.transforms))):
        cells = []
        for kind in variant_names:
            values = [summary[kind][n] for n in members if n in summary[kind]]
            cells.append(f"{statistics.median(values) * 100:.1f}%" if values else "-")
        print(f"| **median over {group}** | | | " + " | ".join(cells) + " |")
    print("\n| model | training time (s), median over seeds |\n|---|---|")
    for kind in variant_names:
        print(f"| {kind} {variants[kind][1] or ''} | {statistics.median(train_s[kind]):.1f} |")

    print("\n| network | convolutions | NN2 prediction (ms) | profiling its configurations (s) |\n|---|---|---|---|")
    table4 = {}
    for network_name in names():
        layers = conv_layer_configs(zoo_network(network_name))
        if not layers:
            continue
        configs = list(layers.values())
        model = models["nn2-tuned" if "nn2-tuned" in models else "nn2"]
        model.predict(configs[:1], only_applicable=False)  # the first call pays NumPy's warm-up
        start = time.perf_counter()  # the model alone: `applies` of ort-nchwc asks ONNX Runtime once per shape
        model.predict(configs, only_applicable=False)
        model.predict_transforms([(c.batch, c.c, c.im) for c in configs])
        predict_ms = (time.perf_counter() - start) * 1e3
        profiled = [runs.get(config_key(c)) for c in dict.fromkeys(configs)]
        profile_s = sum(r.finished_at - r.started_at for r in profiled if r is not None and r.finished_at)
        complete = all(r is not None and r.finished_at for r in profiled)
        table4[network_name] = {"convolutions": len(configs), "predict_ms": predict_ms, "profile_s": profile_s}
        print(f"| {network_name} | {len(configs)} | {predict_ms:.1f} | {profile_s:.0f}{'' if complete else ' (partly profiled)'} |")
    if args.json:
        args.json.write_text(json.dumps({"host": host.cpu_model, "threads": args.threads, "seeds": args.seeds,
                                         "variants": {k: [b, {n: list(v) if isinstance(v, tuple) else v for n, v in p.items()}]
                                                      for k, (b, p) in variants.items()},
                                         "mdrae": summary, "train_s": train_s, "table4": table4}, indent=1))


if __name__ == "__main__":
    main()

"""Fit the primitive cost models on a profiled dataset and score their times and ratios (Mulder et al. Fig. 4-6).

Run: .venv/bin/python bench/primitive_models.py --db STORE [--system ID] [--seeds 0]
     [--variants nn2/absolute lin/relative nn2/relative gb/relative ens/relative auto/auto] [--network paper|small]
     [--repeat-db STORE] [--threads 1] [--no-table4] [--json PATH]

The dataset is the primitive system of STORE with the most configurations (or --system), split 80/10/10
(configurations and activations shuffled separately, per seed). Every variant ``kind/targets`` is fitted on the
training part; the validation part stops its networks and, for ``auto``, chooses among lin, nn2, gb and ens with
absolute and relative targets; the test part scores it, with
``nnperf.prediction.primitives.evaluate``: per primitive and transformation the MdRAE of its time and of its
ratio to the reference primitive of the same configuration (``DATASET_REFERENCE``, the primitive the dataset
pairs its rounds to, when the dataset has it; transformations to the one timed on the most activations, for
every model alike). With
several --seeds the split, weights and trees change and every figure is the median over seeds.

--network paper uses Table 3's NN2 (128-512-512-128, lr 1e-3) for every network; small uses 32-64-64-32 at lr
3e-3, which scored the same on the first dataset and trains several times faster. nn2/absolute is always the
paper's model (Table 3, absolute log times): the baseline.

--repeat-db: a second profile of some of the same configurations on the same machine (another store); the
per-primitive table then shows the measurement's own repeat-to-repeat MdRAE of times and of ratios beside the
models'. Table 4's counterpart follows (--no-table4 leaves it out): for every zoo network, the time to predict
every primitive on every convolution in one call, against the time its configurations took to profile. Stdout
gets Markdown.

Cost: on 502 training configurations, one core of this VM shared with other work, the default variants took
3.1 min per seed (NN2 of Table 3 13-23 s, GB 7-10 s, the ensemble 40-59 s, auto 73-94 s).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _shared import pct, print_table, write_result

from nnperf.campaign import DATASET_REFERENCE, PRIMITIVE_CAMPAIGN, load_primitive_dataset, primitive_systems
from nnperf.measure import host_info
from nnperf.prediction.primitives import Evaluation, PrimitiveCostModel, evaluate, split_dataset
from nnperf.primitives import PrimitiveDataset, PrimitiveError, config_key, conv_layer_configs, get_primitive
from nnperf.registry import UnknownPluginError
from nnperf.store import Store, SystemRecord
from nnperf.zoo import names, zoo_network

VARIANTS = ("nn2/absolute", "lin/relative", "nn2/relative", "gb/relative", "ens/relative", "auto/auto")
"""The paper's NN2 first (the baseline), then the relative models and the choice on validation data."""

NETWORKS: dict[str, dict[str, Any]] = {"paper": {}, "small": {"hidden": (32, 64, 64, 32), "learning_rate": 3e-3}}
"""--network: Table 3's NN2, or the narrow one."""


def family(name: str) -> str:
    """The family of a primitive (``layout`` for a transformation, ``?`` for a name the registry lost)."""
    if "->" in name:
        return "layout"
    try:
        return get_primitive(name).family.value
    except (UnknownPluginError, PrimitiveError):
        return "?"


def load(db: Path, chosen: str | None = None, avoid: SystemRecord | None = None,
         level: bool = True) -> tuple[SystemRecord, PrimitiveDataset]:
    """The primitive system ``chosen`` (id or key prefix) of ``db``, else its one with the most configurations
    (another than ``avoid`` when there is one), and its dataset (levelled by its machine-speed readings unless not
    ``level``); the store is opened read-only."""
    with Store(db, create=False) as store:
        if chosen is not None:
            record = store.system(chosen)
            return record, load_primitive_dataset(store, record.id, level)
        found = [(s, load_primitive_dataset(store, s.id, level)) for s in primitive_systems(store)]
    if not found:
        raise SystemExit(f"{db} holds no profiled primitives")
    others = [(s, d) for s, d in found if avoid is None or s.key != avoid.key] or found
    return max(others, key=lambda item: len(item[1].conv))


def reference_of(dataset: PrimitiveDataset) -> str | None:
    """The dataset's pairing reference when it timed it, else None (the models take their most timed one)."""
    return DATASET_REFERENCE if DATASET_REFERENCE in dataset.primitives else None


def transform_reference_of(dataset: PrimitiveDataset) -> str | None:
    """The transformation timed on the most activations (the first on a tie): every model's transformation
    ratios are scored against it, whatever its own reference."""
    counts = dataset.counts()
    return max(dataset.transforms, key=lambda t: (counts[t], -dataset.transforms.index(t))) if dataset.transforms \
        else None


def variant_model(variant: str, seed: int, network: dict[str, Any], reference: str | None,
                  threads: int = 1) -> PrimitiveCostModel:
    """The unfitted model of ``kind/targets``; nn2/absolute is Table 3's NN2 whatever ``network`` says."""
    kind, targets = variant.split("/")
    params = {} if variant == "nn2/absolute" else dict(network)
    return PrimitiveCostModel(kind, seed=seed, targets=targets, reference=reference if targets != "absolute" else None,
                              threads=threads, **params)


@dataclass(frozen=True)
class Fitted:
    """One variant fitted on one seed's split: its test evaluation, fitting time and what auto chose."""

    evaluation: Evaluation
    train_s: float
    chosen: dict[str, str]
    validation: dict[str, dict[str, float]]


def fit_variant(variant: str, parts: tuple[PrimitiveDataset, ...], seed: int, network: dict[str, Any],
                reference: str | None, threads: int) -> tuple[PrimitiveCostModel, Fitted]:
    train, validation, test = parts
    layout_reference = transform_reference_of(train)
    start = time.perf_counter()
    model = variant_model(variant, seed, network, reference, threads).fit(train, validation)
    train_s = time.perf_counter() - start
    layout = model.transform_model_
    chosen = {"primitives": f"{model.conv_model_.kind}/{'relative' if model.reference_ else 'absolute'}",
              "transforms": f"{layout.kind}/{'relative' if layout.reference else 'absolute'}" if layout else "-"}
    return model, Fitted(evaluate(model, test, reference, layout_reference), train_s, chosen, model.selection_)


def median_or_none(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def column_medians(runs: Sequence[Fitted], ratio: bool) -> dict[str, float]:
    """Per column, the median over seeds of its MdRAE (time, or ratio where it has one)."""
    names = {n for run in runs for n in run.evaluation.columns}
    out = {}
    for name in names:
        values = [getattr(run.evaluation.columns[name], "ratio" if ratio else "absolute")
                  for run in runs if name in run.evaluation.columns]
        value = median_or_none(values)
        if value is not None:
            out[name] = value
    return out


def repeat_noise(dataset: PrimitiveDataset, repeat: PrimitiveDataset, reference: str | None
                 ) -> tuple[dict[str, float], dict[str, float], int]:
    """Per primitive and transformation, the median |b - a| / a of its time and of its ratio to the reference
    between the dataset and a repeat profile, over the configurations (activations) both timed, and their
    number."""
    pairs = []
    a_conv = {s.config: s.times_s for s in dataset.conv}
    pairs += [(a_conv[s.config], s.times_s, reference) for s in repeat.conv if s.config in a_conv]
    a_layout = {(s.batch, s.c, s.im): s.times_s for s in dataset.layout}
    layout_ref = transform_reference_of(dataset)
    pairs += [(a_layout[(s.batch, s.c, s.im)], s.times_s, layout_ref) for s in repeat.layout
              if (s.batch, s.c, s.im) in a_layout]
    times: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    for a, b, ref in pairs:
        for name, ta in a.items():
            if name not in b:
                continue
            times.setdefault(name, []).append(abs(b[name] - ta) / ta)
            if ref is not None and name != ref and ref in a and ref in b:
                ra, rb = ta / a[ref], b[name] / b[ref]
                ratios.setdefault(name, []).append(abs(rb - ra) / ra)
    shared = sum(1 for s in repeat.conv if s.config in a_conv)
    return ({n: statistics.median(v) for n, v in times.items()}, {n: statistics.median(v) for n, v in ratios.items()},
            shared)


def print_summary(variants: Sequence[str], runs: dict[str, list[Fitted]], families: list[str]) -> None:
    rows = []
    for variant in variants:
        absolute, ratio = column_medians(runs[variant], False), column_medians(runs[variant], True)
        cells = []
        for group in (*families, "primitives", "layout"):
            members = [n for n in absolute if (family(n) == group or (group == "primitives" and "->" not in n))]
            cells.append(f"{pct(median_or_none([absolute[n] for n in members]))} / "
                         f"{pct(median_or_none([ratio.get(n) for n in members]))}")
        train_s = statistics.median(r.train_s for r in runs[variant])
        rows.append([variant, *cells, f"{train_s:.1f}"])
    print_table(["model", *(f"{f} time / ratio" for f in families), "all primitives time / ratio",
                 "transforms time / ratio", "train s"], rows)


def print_columns(variants: Sequence[str], runs: dict[str, list[Fitted]], counts: dict[str, int],
                  noise: tuple[dict[str, float], dict[str, float], int] | None) -> None:
    headers = ["column", "family", "test times", *(f"{v} time / ratio" for v in variants)]
    if noise is not None:
        headers.append(f"repeat ({noise[2]} configurations) time / ratio")
    rows = []
    medians = {v: (column_medians(runs[v], False), column_medians(runs[v], True)) for v in variants}
    for name, count in counts.items():
        cells = [f"{pct(medians[v][0].get(name))} / {pct(medians[v][1].get(name))}" for v in variants]
        if noise is not None:
            cells.append(f"{pct(noise[0].get(name))} / {pct(noise[1].get(name))}")
        rows.append([name, family(name), count, *cells])
    print_table(headers, rows)


def print_table4(db: Path, system_id: int, model: PrimitiveCostModel) -> dict[str, dict[str, float]]:
    """For every zoo network: the time to predict all primitives and transformations of its convolutions in one
    call, against the time its configurations took to profile (Table 4): per configuration, from the first timed
    block of its measurements to the last (warm-ups and the rounds; not the preparation before them)."""
    with Store(db, create=False) as store:
        keys = {r.id: r.network_hash for r in store.runs(system_id=system_id) if r.campaign.startswith(PRIMITIVE_CAMPAIGN)}
        windows: dict[int, list[float]] = {}
        for m in store.layer_measurements(system_id=system_id):
            if m.run_id in keys and m.timing.started_at > 0:
                window = windows.setdefault(m.run_id, [m.timing.started_at, m.timing.ended_at])
                window[0], window[1] = min(window[0], m.timing.started_at), max(window[1], m.timing.ended_at)
    spans: dict[str, list[float]] = {}  # a configuration profiled in two runs (merged stores) counts one of them
    for run_id, window in windows.items():
        if keys[run_id] not in spans or window[1] - window[0] < spans[keys[run_id]][1] - spans[keys[run_id]][0]:
            spans[keys[run_id]] = window
    table4, rows = {}, []
    for network_name in names():
        configs = list(conv_layer_configs(zoo_network(network_name)).values())
        if not configs:
            continue
        model.predict(configs[:1], only_applicable=False)  # the first call pays NumPy's warm-up
        start = time.perf_counter()
        model.predict(configs, only_applicable=False)
        if model.transform_model_ is not None:
            model.predict_transforms([(c.batch, c.c, c.im) for c in configs])
        predict_ms = (time.perf_counter() - start) * 1e3
        profiled = [spans.get(config_key(c)) for c in dict.fromkeys(configs)]
        profile_s = sum(end - start for start, end in (p for p in profiled if p is not None))
        complete = all(p is not None for p in profiled)
        table4[network_name] = {"convolutions": len(configs), "predict_ms": predict_ms, "profile_s": profile_s}
        rows.append([network_name, len(configs), f"{predict_ms:.1f}",
                     f"{profile_s:.0f}{'' if complete else ' (partly profiled)'}"])
    print()
    print_table(["network", "convolutions", "prediction (ms)", "profiling its configurations (s)"], rows)
    return table4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, required=True, help="the store holding the profiled dataset")
    parser.add_argument("--system", default=None, help="primitive system id or key prefix (default: the largest)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="KIND/TARGETS")
    parser.add_argument("--network", choices=tuple(NETWORKS), default="paper")
    parser.add_argument("--repeat-db", type=Path, default=None, help="a repeat profile of the same system")
    parser.add_argument("--threads", type=int, default=1, help="torch threads while training (default 1)")
    parser.add_argument("--no-table4", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the result file here "
                        "(bench/results/primitives/primitive_models_grid.json)")
    args = parser.parse_args()
    begin = time.perf_counter()
    system, dataset = load(args.db, args.system)
    reference = reference_of(dataset)
    network = NETWORKS[args.network]
    host = host_info()
    print(f"{host.cpu_model}, {host.logical_cores} logical cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f"; {args.db} system {system.id}: {len(dataset.conv)} configurations, {len(dataset.layout)} activations, "
          f"{dataset.n_samples} times; ratios to {reference or 'the most timed primitive'}; networks "
          f"{args.network} {network or '(Table 3)'}; seeds {args.seeds}\n")
    runs: dict[str, list[Fitted]] = {v: [] for v in args.variants}
    first_models: dict[str, PrimitiveCostModel] = {}
    for seed in args.seeds:
        parts = split_dataset(dataset, seed=seed)
        for variant in args.variants:
            model, fitted = fit_variant(variant, parts, seed, network, reference, args.threads)
            runs[variant].append(fitted)
            first_models.setdefault(variant, model)
            print(f"# seed {seed} {variant}: {fitted.train_s:.1f} s, chose {fitted.chosen} "
                  f"({time.perf_counter() - begin:.0f} s)", flush=True)
    sizes = split_dataset(dataset, seed=args.seeds[0])
    print(f"\nsplit: {', '.join(f'{len(p.conv)} {w}' for p, w in zip(sizes, ('train', 'validation', 'test'), strict=True))}"
          " configurations\n")
    families = sorted({family(n) for n in dataset.primitives})
    print("MdRAE on the test part, time / ratio to the reference (median over each group's columns, then seeds):\n")
    print_summary(args.variants, runs, families)
    for variant in args.variants:
        for fitted in runs[variant]:
            if fitted.validation:
                scores = "; ".join(f"{label} {pct(v)}" for label, v in fitted.validation["primitives"].items())
                print(f"\n{variant} chose {fitted.chosen['primitives']} for the primitives and "
                      f"{fitted.chosen['transforms']} for the transformations (validation score, time + ratio MdRAE: {scores})")
    noise = None
    if args.repeat_db is not None:
        noise = repeat_noise(dataset, load(args.repeat_db, system.key[:16])[1], reference)
    counts = {n: c.count for n, c in runs[args.variants[0]][0].evaluation.columns.items()}
    print("\nPer column (median over seeds):\n")
    print_columns(args.variants, runs, counts, noise)
    table4 = {} if args.no_table4 else print_table4(args.db, system.id, first_models[args.variants[-1]])
    print(f"\nran in {(time.perf_counter() - begin) / 60:.1f} min")
    if args.json:
        write_result(args.json, method="primitives", concern="primitive cost models", values={
            "db": str(args.db), "system_id": system.id, "configurations": len(dataset.conv),
            "reference": reference, "network": args.network, "seeds": args.seeds,
            "variants": {v: [{"time": column_medians([r], False), "ratio": column_medians([r], True),
                              "train_s": r.train_s, "chosen": r.chosen, "validation": r.validation} for r in runs[v]]
                         for v in args.variants},
            "repeat": None if noise is None else {"time": noise[0], "ratio": noise[1], "configurations": noise[2]},
            "table4": table4})


if __name__ == "__main__":
    main()

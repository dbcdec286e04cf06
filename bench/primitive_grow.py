"""Grow the primitive dataset in the background, a batch at a time, each batch chosen where the cost model is least
sure (active learning), from a pool far larger than the paper's grid and beyond its 2 GMACs.

Run (on the idle core, at low priority; stop it any time and run it again to resume):

    nice -n 10 .venv/bin/python bench/primitive_grow.py --db /work/data/grow.db \\
        --start bench/results/primitives/datasets/grid-amd-epyc-1thread.json.gz \\
        --export bench/results/primitives/datasets/grown-amd-epyc-1thread.json.gz [--pool 5000] [--batch 40]
        [--max-gmacs 8] [--hours 2] [--network small]

Each round:

1. the store's dataset (``--start`` imported into it on the first round; every primitive system of the store,
   merged) fits the ensemble on relative targets (``ens/relative``, ``--network`` sized networks);
2. a pool of ``--pool`` configurations is drawn, seeded by the round: random configurations around the zoo's
   convolutions and the paper's grid (``nnperf.primitives.sample_configs``), and the grid's own configurations,
   all up to ``--max-gmacs`` billion MACs, less those already profiled;
3. the ``--batch`` with the largest committee spread per estimated profiling second (over every primitive's
   column: asking each whether it applies builds a graph per configuration, too slow for the pool)
   (``nnperf.prediction.primitives.config_spread``, ``most_uncertain`` with crowding; the cost estimate as
   ``bench/primitive_active.py`` makes it, from the model's predicted times) are profiled with
   ``nnperf.campaign.profile_primitives`` (its default stopping rule), each stored as it is taken, so a kill
   loses at most the configuration in progress;
4. the profiled system's dataset is written to ``--export`` (a dataset file, to commit as it grows).

Stops after ``--hours`` of rounds (checked before each round) or ``--rounds``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _shared import log
from primitive_active import cost_model
from primitive_models import NETWORKS, reference_of, variant_model

from nnperf.api import dataset_configs, import_primitive_dataset
from nnperf.campaign import export_primitive_dataset, load_primitive_dataset, primitive_systems, profile_primitives
from nnperf.prediction.primitives import config_spread, conv_features, most_uncertain
from nnperf.primitives import ConvConfig, PrimitiveDataset, paper_grid, sample_configs
from nnperf.store import Store

VARIANT = "ens/relative"


def merged(store: Store) -> PrimitiveDataset:
    """Every primitive system's dataset in the store as one (a configuration in several keeps the first's)."""
    parts = [load_primitive_dataset(store, s.id) for s in primitive_systems(store)]
    if not parts:
        raise SystemExit("the store holds no profiled primitives; give --start a dataset file")
    conv = list({s.config: s for part in reversed(parts) for s in part.conv}.values())
    layout = list({(s.batch, s.c, s.im): s for part in reversed(parts) for s in part.layout}.values())
    primitives = tuple(dict.fromkeys(p for part in parts for p in part.primitives))
    transforms = tuple(dict.fromkeys(t for part in parts for t in part.transforms))
    return PrimitiveDataset(parts[0].system_key, primitives, transforms, tuple(conv), tuple(layout))


def pool(size: int, max_macs: float, seed: int, zoo: list[ConvConfig], known: set[ConvConfig]) -> list[ConvConfig]:
    """``size`` configurations drawn around the ``zoo``'s convolutions and the grid, and the grid's own, all at most
    ``max_macs`` MACs, none in ``known``."""
    grid = paper_grid(max_macs=int(max_macs), seed=seed)
    drawn = [c for c in sample_configs(zoo + grid, size, seed=seed) if c.macs <= max_macs]
    return [c for c in dict.fromkeys(drawn + grid) if c not in known][:size]


def one_round(store: Store, args: argparse.Namespace, cost: tuple[float, float], zoo: list[ConvConfig]) -> int:
    """Fits, chooses and profiles one batch; returns how many configurations it stored. The round is seeded by the
    configurations the store holds, so a resumed run draws another pool."""
    dataset = merged(store)
    k = len(dataset.conv)
    started = time.perf_counter()
    model = variant_model(VARIANT, k, NETWORKS[args.network], reference_of(dataset), 1).fit(dataset)
    candidates = pool(args.pool, args.max_gmacs * 1e9, k, zoo, {s.config for s in dataset.conv})
    predicted = np.nansum(model.predict(candidates, only_applicable=False), axis=1)
    cost_s = cost[0] + cost[1] * predicted
    fitted = model.conv_model_
    features = fitted.features.transform(conv_features(candidates, fitted.feature_set))
    spread = config_spread(model, candidates, only_applicable=False)
    picked = most_uncertain(spread, args.batch, features=features, cost_s=cost_s)
    batch = [candidates[i] for i in picked]
    log(f"fitted on {k} configurations in {time.perf_counter() - started:.0f} s; pool {len(candidates)}, spread "
        f"median {np.median(spread):.3f}, the batch's {np.median(spread[picked]):.3f}; {len(batch)} configurations, "
        f"estimated {cost_s[picked].sum() / 60:.1f} min of profiling")
    report = profile_primitives(store, batch, args.threads)
    export_primitive_dataset(store, report.system_id, args.export)
    log(f"profiled {report.measured} configurations; {args.export} written")
    return report.measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--start", type=Path, default=None, help="a dataset file to import on the first round")
    parser.add_argument("--export", type=Path, required=True, help="the dataset file the profiled system is written to")
    parser.add_argument("--pool", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=40)
    parser.add_argument("--max-gmacs", type=float, default=8.0)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--network", choices=tuple(NETWORKS), default="small")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cost-from", type=Path, default=Path("bench/results/primitives/primitive_cost.json"))
    args = parser.parse_args()
    if args.batch < 1 or args.pool < args.batch:
        parser.error(f"--batch must be at least 1 and at most --pool, got {args.batch} and {args.pool}")
    with Store(args.db) as store:
        if args.start is not None and not primitive_systems(store):
            import_primitive_dataset(args.start, store)
        cost = cost_model(args.cost_from, merged(store))[:2]
        zoo, begin, rounds = dataset_configs(), time.monotonic(), 0
        while time.monotonic() - begin < args.hours * 3600 and (args.rounds is None or rounds < args.rounds):
            one_round(store, args, cost, zoo)
            rounds += 1


if __name__ == "__main__":
    main()

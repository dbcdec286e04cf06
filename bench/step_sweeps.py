"""Step-model measurements: the sweeps that bench/step_models.py evaluates, into one store.

Run: .venv/bin/python bench/step_sweeps.py --db bench/results/steps/steps.db [--backends torch,onnxruntime]
     [--device cuda] [--rounds 3] [--channel-step 2]   (about 25 minutes per CPU backend here)

Per backend, on conv2d at size 28, kernel 3 (the paper used 256x256 on a GPU; 28x28 keeps a 521-point
sweep to minutes on this CPU):
1. the surround choice (Osterwind 3.3.1) at the default layer;
2. the full channel sweep 10:530:1 at 128 filters (the paper's Table 3.1 range) and the filter sweep
   1:530:2 at 128 channels (every second value, to keep the run under half an hour);
3. held-out sweeps in the paper's design (3.4.3): channels 120:219:3 at filters 100, 116, ..., 228, 244
   (9 sweeps), and filters 120:219:3 at channels 100, 164, 228 (nnperf's addition);
4. the dimensions the composition needs: size 7:64:3 and kernel 1,3,5,7 at the default layer, and
   20 random conv2d configurations (channels and filters 16-384, size 7-56, kernel 1/3/5) for the
   composed model's held-out error.

Every sweep passes over its values --rounds times (default 3) and takes each point's median over the rounds
(`nnperf sweep --rounds`), so that a burst of contention on this shared VM lands on one round only. Every point
is committed as it is measured; re-running the script resumes or reuses what is stored, the surround choice
included.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from _shared import log

from nnperf.campaign import find_surround, run_sweep
from nnperf.measure.backends import BackendOptions, create_backend
from nnperf.measure.sweep import SWEEP_HARNESS, LayerConfig, SweepSpec
from nnperf.store import Store

BASE = {"size": 28, "kernel": 3}
HELD_OUT_VALUES = tuple(range(120, 220, 3))
HELD_OUT_OTHER = tuple(range(100, 245, 16))
HELD_OUT_FILTER_OTHER = (100, 164, 228)
RANDOM_CONFIGS = 20


def random_configs(seed: int = 6) -> list[LayerConfig]:
    rng = np.random.default_rng(seed)
    configs = []
    while len(configs) < RANDOM_CONFIGS:
        kernel = int(rng.choice([1, 3, 5]))
        size = int(rng.integers(7, 57))
        if kernel > size:
            continue
        configs.append(LayerConfig.of("conv2d", {"channels": int(rng.integers(16, 385)),
                                                 "filters": int(rng.integers(16, 385)), "size": size,
                                                 "kernel": kernel}))
    return configs


def sweeps(surround: int, channel_step: int = 1, rounds: int = 1) -> list[tuple[str, SweepSpec]]:
    base = LayerConfig.of("conv2d", BASE)

    def spec(config: LayerConfig, parameter: str, values: tuple[int, ...]) -> SweepSpec:
        return SweepSpec(config, parameter, values, surround, SWEEP_HARNESS, rounds)

    out = [("full", spec(base, "channels", tuple(range(10, 531, channel_step)))),
           ("full", spec(base, "filters", tuple(range(1, 531, 2)))),
           ("dimension", spec(base, "size", tuple(range(7, 65, 3)))),
           ("dimension", spec(base, "kernel", (1, 3, 5, 7)))]
    for other in HELD_OUT_OTHER:
        out.append(("held-out", spec(base.with_value("filters", other), "channels", HELD_OUT_VALUES)))
    for other in HELD_OUT_FILTER_OTHER:
        out.append(("held-out", spec(base.with_value("channels", other), "filters", HELD_OUT_VALUES)))
    for config in random_configs():
        out.append(("random", spec(config, "channels", (config["channels"],))))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=Path("bench/results/steps/steps.db"))
    parser.add_argument("--backends", default="torch,onnxruntime")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--roles", default="full,dimension,held-out,random",
                        help="which sweeps to measure (a comma list of full, dimension, held-out, random)")
    parser.add_argument("--held-out", type=int, default=None, help="measure only the first N held-out sweeps")
    parser.add_argument("--channel-step", type=int, default=1, help="step of the full channel sweep (default 1)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved passes per sweep (default 3)")
    args = parser.parse_args()
    args.db.parent.mkdir(parents=True, exist_ok=True)
    with Store(args.db) as store:
        for name in args.backends.split(","):
            backend = create_backend(name, BackendOptions(device=args.device))
            began = time.perf_counter()
            choice = find_surround(backend, store, LayerConfig.of("conv2d", BASE))
            log(f"{name}: surround {choice.chosen} (converged {choice.converged}); "
                f"{[round(t * 1e3, 3) for t in choice.latency_s]} ms")
            roles = set(args.roles.split(","))
            plan = [(role, spec) for role, spec in sweeps(choice.chosen, args.channel_step, args.rounds)
                    if role in roles]
            if args.held_out is not None:
                held = [p for p in plan if p[0] == "held-out"][:args.held_out]
                plan = [p for p in plan if p[0] != "held-out"] + held
            for i, (role, spec) in enumerate(plan):
                t0 = time.perf_counter()
                sweep = run_sweep(backend, store, spec)
                if role != "random":
                    log(f"{name}: [{i + 1}/{len(plan)}] {role} {spec.label} {spec.values[0]}..{spec.values[-1]}: "
                        f"{len(sweep.timings)} points, {time.perf_counter() - t0:.0f} s"
                        + (" (reused)" if sweep.reused else ""))
            log(f"{name}: all sweeps in {time.perf_counter() - began:.0f} s")
            backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

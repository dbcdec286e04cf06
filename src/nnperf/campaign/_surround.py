"""The surround choice's stored parts: the width sweep measured into a campaign, and the recorded choice.

The widths are measured in interleaved rounds like any sweep (campaign
``surround|KEY``, points ``surround=WIDTH``; an interrupted sweep resumes and
a finished one is reused unless ``fresh``), and the choice is recorded per
system and layer kind as a model document of kind ``steps-surround``. Why the
rounds, and the rule that chooses (Osterwind 3.3.1), are in
``nnperf.measure.sweep`` with :func:`choose_width`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

import numpy as np

from nnperf.campaign._campaign import Progress, open_campaign
from nnperf.campaign._items import Measurer, runner_for
from nnperf.campaign._sweep import measure_rounds
from nnperf.measure import HarnessConfig, Method
from nnperf.measure.sweep import (
    SURROUND_KIND,
    SURROUND_MARGIN,
    SURROUND_ROUNDS,
    SURROUND_WIDTHS,
    SWEEP_HARNESS,
    LayerConfig,
    SurroundChoice,
    SweepInputError,
    choose_width,
    profiling_network,
)
from nnperf.store import Store


def find_surround(measurer: Measurer, store: Store, config: LayerConfig,
                  widths: tuple[int, ...] = SURROUND_WIDTHS, margin: float = SURROUND_MARGIN,
                  harness: HarnessConfig = SWEEP_HARNESS, progress: Progress | None = None,
                  rounds: int = SURROUND_ROUNDS, fresh: bool = False) -> SurroundChoice:
    """Sweeps the surround width for ``config`` on ``measurer`` (a backend or a runner) in ``rounds`` interleaved
    passes, stores every point and
    records the choice. A finished surround sweep with the same settings on this system is reused unless
    ``fresh``."""
    if not 0 < margin < 1:
        raise SweepInputError(f"the surround margin must be a fraction in (0, 1), got {margin}")
    if rounds < 1:
        raise SweepInputError(f"a surround sweep needs at least one round, got {rounds}")
    widths = tuple(sorted(set(widths)))
    settings = {"config": config.describe(), "widths": list(widths), "harness": asdict(harness), "rounds": rounds}
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    runner = runner_for(measurer)
    with open_campaign(store, runner.system(), f"surround|{key}", f"surround:{config.kind}", key,
                       Method.PROFILER.value, settings, reuse=not fresh) as campaign:
        by_width = measure_rounds(campaign, runner, config.kind, "surround", widths, rounds,
                                  lambda width: profiling_network(config, width), harness, progress)
    latency = [float(np.median([t.stats.median_s for t in by_width[w]])) for w in widths]
    chosen, converged = choose_width(widths, tuple(latency), margin)
    choice = SurroundChoice(config.kind, config, widths, tuple(latency), margin, chosen, converged)
    store.save_model(campaign.system.id, SURROUND_KIND, choice.to_dict())
    return choice


def surround_width(store: Store, system_id: int, kind: str) -> int:
    """The recorded surround width for ``kind`` on this system, or 1 when none was chosen yet."""
    choice = recorded_surround(store, system_id, kind)
    return choice.chosen if choice is not None else 1


def recorded_surround(store: Store, system_id: int, kind: str) -> SurroundChoice | None:
    """The latest surround choice recorded for ``kind`` on this system, or None."""
    for doc in store.models(system_id, SURROUND_KIND):
        if doc.get("kind") == kind:
            return SurroundChoice.from_dict(doc)
    return None

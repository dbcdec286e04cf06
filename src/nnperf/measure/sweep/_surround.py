"""Choosing the profiling network's surrounding layers (Osterwind 3.3.1).

"To decrease overhead of the surrounding layers, we can perform sweeps to
determine how the input and output layers affect the layer under test. If
these sweeps show a convergence, the smallest layer combination, which is
within a margin of the convergence point, can be selected."

nnperf sweeps the surround width w (the channels the profiling network takes
in and gives out) over ``SURROUND_WIDTHS``, times the layer under test at each,
takes the time at the widest surround as the convergence point, and chooses
the smallest w from which every wider surround stays within ``margin`` of it.
The widths are measured in ``SURROUND_ROUNDS`` interleaved passes and each
width's time is the median of its passes: on this shared VM the same layer
drifted by 7% between neighbouring single measurements, more than the margin,
and one such drift alone decided the choice. Every point is stored (campaign
``surround|...``; an interrupted sweep resumes and a finished one is reused
unless ``fresh``), and the choice is recorded per system and layer kind as a
model document of kind ``steps-surround``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.measure._harness import HarnessConfig
from nnperf.measure._types import LayerMeasurement, Method
from nnperf.measure.backends._base import Backend
from nnperf.measure.sweep._config import LayerConfig, SweepInputError
from nnperf.measure.sweep._network import UNDER_TEST, profiling_network, time_in_context
from nnperf.measure.sweep._sweep import SWEEP_HARNESS, point_name

if TYPE_CHECKING:
    from nnperf.store import Store

Progress = Callable[[str, int, int], None]

SURROUND_WIDTHS = (1, 2, 4, 8, 16, 32, 64, 128)
SURROUND_MARGIN = 0.03
SURROUND_ROUNDS = 3
SURROUND_KIND = "steps-surround"


@dataclass(frozen=True)
class SurroundChoice:
    """The surround sweep of one layer kind on one system and the width it chose.

    ``latency_s[i]`` is the layer under test's median time with surround
    ``widths[i]``; ``converged`` is False when the two widest surrounds still
    differ by more than ``margin`` (the widest is then chosen).
    """

    kind: str
    config: LayerConfig
    widths: tuple[int, ...]
    latency_s: tuple[float, ...]
    margin: float
    chosen: int
    converged: bool

    @property
    def convergence_s(self) -> float:
        return self.latency_s[-1]

    def to_dict(self) -> dict[str, Any]:
        return {"format": SURROUND_KIND, "version": 1, "kind": self.kind, "config": dict(self.config.params),
                "widths": list(self.widths), "latency_s": list(self.latency_s), "margin": self.margin,
                "chosen": self.chosen, "converged": self.converged}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> SurroundChoice:
        return cls(doc["kind"], LayerConfig.of(doc["kind"], doc["config"]), tuple(doc["widths"]),
                   tuple(doc["latency_s"]), float(doc["margin"]), int(doc["chosen"]), bool(doc["converged"]))


def choose_width(widths: tuple[int, ...], latency_s: tuple[float, ...], margin: float) -> tuple[int, bool]:
    """The smallest width from which every wider surround is within ``margin`` of the widest one's time."""
    if len(widths) != len(latency_s) or len(widths) < 2:
        raise SweepInputError("a surround sweep needs at least two widths, each with a time")
    target = latency_s[-1]
    within = [abs(t - target) <= margin * target for t in latency_s]
    converged = abs(latency_s[-2] - target) <= margin * target
    chosen = len(widths) - 1
    while chosen > 0 and within[chosen - 1]:
        chosen -= 1
    return widths[chosen], converged


def find_surround(backend: Backend, store: Store, config: LayerConfig,
                  widths: tuple[int, ...] = SURROUND_WIDTHS, margin: float = SURROUND_MARGIN,
                  harness: HarnessConfig = SWEEP_HARNESS, progress: Progress | None = None,
                  rounds: int = SURROUND_ROUNDS, fresh: bool = False) -> SurroundChoice:
    """Sweeps the surround width for ``config`` in ``rounds`` interleaved passes, stores every point and
    records the choice. A finished surround sweep with the same settings on this system is reused unless
    ``fresh``."""
    if not 0 < margin < 1:
        raise SweepInputError(f"the surround margin must be a fraction in (0, 1), got {margin}")
    if rounds < 1:
        raise SweepInputError(f"a surround sweep needs at least one round, got {rounds}")
    widths = tuple(sorted(set(widths)))
    system = store.add_system(backend.system())
    settings = {"config": config.describe(), "widths": list(widths), "harness": asdict(harness), "rounds": rounds}
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    campaign = f"surround|{key}"
    finished = None if fresh else store.finished_run(system.id, campaign)
    run = finished or store.start_run(system.id, campaign, f"surround:{config.kind}", key, Method.PROFILER.value,
                                      settings)
    done = {r.layer: r.timing for r in store.layer_measurements(run_id=run.id)}
    report = progress or (lambda what, done_, total: None)
    total = len(widths) * rounds
    by_width: dict[int, list[float]] = {w: [] for w in widths}
    try:
        for round_ in range(1, rounds + 1):
            for i, width in enumerate(widths):
                name = point_name("surround", width, round_)
                report(name.replace("#", " round "), (round_ - 1) * len(widths) + i, total)
                timing = done.get(name)
                if timing is None:
                    timing = time_in_context(backend, profiling_network(config, width), harness)
                    store.add_layer_measurement(run.id, LayerMeasurement(name, config.kind, Method.PROFILER,
                                                                         timing, UNDER_TEST))
                by_width[width].append(timing.stats.median_s)
        report("done", total, total)
        if run.status != "done":
            store.finish_run(run.id, "done")
    except BaseException:
        if run.status != "done":
            store.finish_run(run.id, "failed")
        raise
    latency = [float(np.median(by_width[w])) for w in widths]
    chosen, converged = choose_width(widths, tuple(latency), margin)
    choice = SurroundChoice(config.kind, config, widths, tuple(latency), margin, chosen, converged)
    store.save_model(system.id, SURROUND_KIND, choice.to_dict())
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

"""Calibration by sampling, the campaign: convolution and pooling configurations measured alone within a time
budget, placed where the kernel models are weakest (``nnperf.prediction.kernel``'s sampling says where:
:func:`~nnperf.prediction.kernel.draw` for the first round, :func:`~nnperf.prediction.kernel.next_round` after).

Each sample is a layer run alone, stored as it is taken in one run of the store (campaign ``kernel-samples``),
named by its configuration (:meth:`ConvSample.name`, :meth:`PoolSample.name`), so an interrupted sampling resumes
and a finished one is read back.

**Drift.** This machine's speed can move by tens of percent within minutes, and samples taken in a slow phase
teach the models slow convolutions. So the drift sentinel of the profiled networks (``nnperf.campaign.SENTINEL``)
is also read before the first sample, every :data:`SENTINEL_EVERY` samples and after the last, and stored in
the same run (``sentinel@N``: read before sample N). Given the sentinel's time during the calibration's own
networks (``reference_s``), each sample's time is scaled by ``reference_s`` over the sentinel's time when it was
taken (interpolated between the readings around it), so every sample speaks of the machine the calibration
networks were measured on.

**One path.** Each round's samples (and the sentinel readings between them) are items
(:class:`~nnperf.campaign.LayerItem`, :class:`~nnperf.campaign.SentinelItem`) run by one runner and stored as
they come back. In this process the budget is checked before each sample; a fleet measures a round at once on
its nodes of the system, so the budget is checked between rounds there. The sentinel is not read on a fleet:
its time on one node says nothing of another's, so samples measured on a fleet are used as measured.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nnperf.campaign._campaign import Progress, open_campaign
from nnperf.campaign._items import LayerItem, Measurer, SentinelItem, runner_for
from nnperf.errors import NnperfError
from nnperf.ir import Layer
from nnperf.measure import HarnessConfig, LayerMeasurement, Method, fixed_timing
from nnperf.prediction.kernel import ROUND, Drawer, Sample, next_round, sample_from_name, zoo_prior
from nnperf.store import Store

SAMPLE_CAMPAIGN = "kernel-samples"

SENTINEL_EVERY = 16
"""Samples between two readings of the drift sentinel (each reading takes about as long as 3-4 samples)."""

SENTINEL_PREFIX = "sentinel@"
"""The stored name of a sentinel reading, followed by the number of samples taken before it."""


def sample_layers(measurer: Measurer, store: Store, budget_s: float, harness: HarnessConfig, seed: int = 0,
                  progress: Progress | None = None, reference_s: float | None = None,
                  prior: Drawer | None = None) -> list[tuple[Layer, float]]:
    """Measures layers drawn from ``prior`` (default: :func:`~nnperf.prediction.kernel.zoo_prior`) alone for about
    ``budget_s`` seconds (see the module docstring) and returns every sample of the run with its median time
    (seconds), those measured before included; with ``reference_s`` (the drift sentinel's time during the
    calibration networks) each time is scaled to that speed. ``measurer`` is a backend or a runner; on a fleet's
    runner each round is measured at once on its nodes, without the sentinel."""
    if budget_s < 0:
        raise NnperfError(f"the sampling budget must be >= 0 s, got {budget_s}")
    if reference_s is not None and not reference_s > 0:
        raise NnperfError(f"the sentinel's reference time must be positive, got {reference_s}")
    runner = runner_for(measurer)
    rng = np.random.default_rng(seed)
    prior = prior if prior is not None else zoo_prior()
    config = {"budget_s": budget_s, "seed": seed, "prior": prior.fingerprint,
              "harness": {"target_ci": harness.target_ci, "budget_s": harness.budget_s}}
    key = f"{SAMPLE_CAMPAIGN}|budget={budget_s:g}|seed={seed}|kinds={','.join(prior.kinds)}|prior={prior.fingerprint}"
    with open_campaign(store, runner.system(), key, SAMPLE_CAMPAIGN, "", Method.ISOLATED.value, config,
                       reuse=True) as campaign:
        readings = {int(name.removeprefix(SENTINEL_PREFIX)): timing.stats.median_s
                    for name, timing in campaign.done.items() if name.startswith(SENTINEL_PREFIX)}
        measured = {sample_from_name(name): timing.stats.median_s for name, timing in campaign.done.items()
                    if not name.startswith(SENTINEL_PREFIX)}
        if campaign.reused:
            return _at_reference_speed(measured, readings, reference_s)
        start_s = time.perf_counter()

        def spent() -> float:
            return time.perf_counter() - start_s

        def store_sentinel(seconds: float) -> None:
            campaign.add_layer(LayerMeasurement(f"{SENTINEL_PREFIX}{len(measured)}", "sentinel", Method.ISOLATED,
                                                fixed_timing([seconds])))
            readings[len(measured)] = seconds

        queue = prior.first_round(rng)  # kinds interleaved: a short budget still reaches every kind
        while spent() < budget_s:
            later = queue or next_round(measured, rng, prior, round_size(len(measured)))
            batch = list(dict.fromkeys(s for s in later if s not in measured))
            queue = []
            items = _round_items(batch, len(measured), readings, harness, sentinel=runner.one_machine)
            with contextlib.closing(runner.run(items)) as results:
                for _ in items:
                    if runner.lazy and spent() >= budget_s:  # a fleet finishes the round it started
                        break
                    index, result = next(results)
                    item = items[index]
                    if not isinstance(item, _SampleItem):  # a sentinel reading
                        store_sentinel(result)
                        continue
                    campaign.add_layer(result)
                    sample = item.sample
                    measured[sample] = result.timing.stats.median_s
                    if progress is not None:
                        progress(f"sampled {sample.name}", min(int(spent()), int(budget_s)), int(budget_s))
        if measured and runner.one_machine and len(measured) not in readings:
            store_sentinel(runner.run_one(SentinelItem(harness, warm=True)))  # after the last sample
    return _at_reference_speed(measured, readings, reference_s if runner.one_machine else None)


def round_size(measured: int) -> int:
    """The samples of a later round once ``measured`` are taken: :data:`~nnperf.prediction.kernel.ROUND`, growing
    with the samples past 16 rounds' worth (each round cross-validates every kind's models once, which a long
    sampling, as an adaptation's, would otherwise spend much of its budget on)."""
    return max(ROUND, measured // 16)


@dataclass(frozen=True, kw_only=True)
class _SampleItem(LayerItem):
    """A sample measured alone: a :class:`LayerItem` that remembers its sample."""

    sample: Sample


def _round_items(batch: Sequence[Sample], before: int, readings: dict[int, float], harness: HarnessConfig,
                 sentinel: bool) -> list[_SampleItem | SentinelItem]:
    """A round's samples as items, with a sentinel reading before every :data:`SENTINEL_EVERY` th sample (of the
    ``before`` measured so far and those of the round) not read yet when ``sentinel``."""
    items: list[_SampleItem | SentinelItem] = []
    for i, sample in enumerate(batch):
        count = before + i
        if sentinel and count % SENTINEL_EVERY == 0 and count not in readings:
            items.append(SentinelItem(harness, warm=count > 0))
        items.append(_SampleItem(sample.layer(), harness, sample=sample))
    return items


def _at_reference_speed(measured: dict[Sample, float], readings: dict[int, float],
                        reference_s: float | None) -> list[tuple[Layer, float]]:
    """Every sample with its time, scaled by ``reference_s`` over the sentinel's time when it was taken (sample
    ``i`` taken between the readings before sample ``i`` and before sample ``i + 1``); unscaled without a
    reference or readings (a sampling stored before the sentinel was read)."""
    if reference_s is None or not readings:
        return [(s.layer(), t) for s, t in measured.items()]
    at, seconds = zip(*sorted(readings.items()), strict=True)
    speed = np.interp(np.arange(len(measured)) + 0.5, np.array(at, dtype=float), np.array(seconds))
    return [(s.layer(), t * reference_s / float(v)) for (s, t), v in zip(measured.items(), speed, strict=True)]



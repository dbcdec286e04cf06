"""Which runtime to ship: a model's predicted latency on every calibrated system side by side, ranked, and, with
``verify``, measured on each, interleaved across the runtimes in one run (``nnperf runtimes``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._predict import Progress
from nnperf.api._session import StoreLike, opened_store
from nnperf.errors import NnperfError
from nnperf.measure import RoundsConfig, System
from nnperf.measure.backends import Backend
from nnperf.report.runtimes import RuntimeLatency, RuntimeRanking, Skipped

if TYPE_CHECKING:
    from nnperf.ir import Network
    from nnperf.store import SystemRecord

VERIFY_RUNTIME_ROUNDS = RoundsConfig(min_rounds=10, max_rounds=40, target_ci=0.02, budget_s=60.0)
"""Rounds of the measured ranking: each round times every runtime once, in a new random order, so a slow spell
of the machine falls on all of them alike; stopped once each runtime's ratio to the first is known within 2%."""


def rank_runtimes(model: ModelLike, store: StoreLike = None, *, systems: Sequence[int | str] | None = None,
                  verify: bool = False, input_shape: InputShape | None = None,
                  rounds: RoundsConfig = VERIFY_RUNTIME_ROUNDS, progress: Progress | None = None) -> RuntimeRanking:
    """``model``'s predicted latency on every calibrated system of ``store`` (or on ``systems``, stored ids or key
    prefixes), fastest first: which runtime to ship.

    With ``verify``, the network is also measured on each system this host can run (its backend installed, the
    same CPU and software as when it was calibrated), whole, every runtime once per round in a new random order
    (:func:`nnperf.measure.measure_interleaved`), so that the measured order is not an artefact of the machine's
    drift between runtimes. The measured times are raw (not scaled to each calibration's machine speed): the
    order is what they are for. Systems that cannot take the network are listed in ``skipped`` with the reason.

    Raises
    ------
    MissingStoreError, NnperfError
        No store; no calibrated system in it (or none of ``systems``); no system that can predict the network.
    """
    from nnperf.prediction import MODEL_KIND, load_stored_model

    network = load_model(model, input_shape)
    ranked: list[RuntimeLatency] = []
    skipped: list[Skipped] = []
    with opened_store(store, create=False) as opened:
        ids = [opened.system(s).id for s in systems] if systems else opened.modelled_systems(MODEL_KIND)
        if not ids:
            raise NnperfError(f"{opened.path} has no calibrated system: run `nnperf calibrate --backend NAME` for "
                              "each runtime to compare (see `nnperf backends`)")
        records = {record.id: record for record in opened.systems()}
        for system_id in ids:
            record = records[system_id]
            try:
                predicted = load_stored_model(opened, system_id).predict(network).latency_s
            except NnperfError as exc:
                skipped.append(Skipped(system_id, record.label, str(exc)))
                continue
            ranked.append(RuntimeLatency(system_id, record.label, record.backend, predicted))
    if not ranked:
        raise NnperfError(f"{network.name}: no calibrated system can predict it: "
                          + "; ".join(f"{s.label}: {s.reason}" for s in skipped))
    ranked.sort(key=lambda r: r.predicted_s)
    if not verify:
        return RuntimeRanking(network.name, tuple(ranked), tuple(skipped), False)
    return _verified(network, ranked, skipped, records, rounds, progress)


def _verified(network: Network, ranked: list[RuntimeLatency], skipped: list[Skipped],
              records: dict[int, SystemRecord], rounds: RoundsConfig, progress: Progress | None) -> RuntimeRanking:
    """``ranked`` with each runtime this host can run measured, interleaved in one run."""
    import numpy as np

    from nnperf.measure import measure_interleaved

    opened: dict[int, Backend] = {}
    timers = {}
    try:
        for runtime in ranked:
            try:
                backend = _open_here(records[runtime.system_id])
                opened[runtime.system_id] = backend
                timers[runtime.label] = backend.network_timer(network)
            except NnperfError as exc:
                skipped.append(Skipped(runtime.system_id, runtime.label, f"not measured: {exc}"))
        if len(timers) < 2:
            raise NnperfError(f"{network.name}: verifying a ranking needs two or more runtimes measurable here, got "
                              f"{len(timers)}" + "".join(f"; {s.label}: {s.reason}" for s in skipped))

        def rounds_done(done: int, most: int) -> None:
            if progress is not None:
                progress(f"{len(timers)} runtimes, interleaved", done, most)

        measured = measure_interleaved(timers, rounds, rounds_done)
    finally:
        for backend in opened.values():
            backend.close()
    verified = []
    for runtime in ranked:
        if runtime.label not in timers:
            verified.append(runtime)
            continue
        times = measured.times(runtime.label)
        q1, q3 = np.percentile(times, [25, 75])
        median = float(np.median(times))
        verified.append(RuntimeLatency(runtime.system_id, runtime.label, runtime.backend, runtime.predicted_s,
                                       median, float(q3 - q1) / median))
    return RuntimeRanking(network.name, tuple(verified), tuple(skipped), True, measured.rounds)


def _open_here(record: SystemRecord) -> Backend:
    """The backend of stored system ``record`` on this host, refused when what it measures here is not that
    system (another CPU, other software versions or settings)."""
    options = dict(record.options)
    threads = int(options.pop("threads", "1"))
    backend = System(record.backend, record.device, threads, tuple(options.items())).open()
    spec = backend.system()
    if record.key not in (spec.key, spec.legacy_key):
        backend.close()
        raise NnperfError(f"this host measures {spec.label} as another system (CPU, software versions or "
                          "allocator settings differ from the calibration's)")
    return backend

"""The one campaign mechanism: the run bookkeeping that every measuring activity shares.

A campaign is a run in the store, named by its system, a campaign key (which
holds every setting that changes what is measured) and a hash of what is
measured. :func:`open_campaign`

1. reuses the newest finished ('done') run of the campaign when ``reuse``: the
   caller reads it back and measures nothing;
2. otherwise resumes an interrupted run ('failed', or 'running' by a process
   that is gone), or starts a new one, also while another live process runs
   the same campaign: each run has one owner (:meth:`Store.start_run`);
3. reads the points the run already holds, with their stored timings, so the
   caller skips them;
4. finishes the run 'done' when the ``with`` block ends normally and 'failed'
   when it raises anything, KeyboardInterrupt included, and leaves a reused
   run as it was (it finished before).

Profiling campaigns (:func:`profile_network`, which calibration and evaluation
call), parameter sweeps (:func:`run_sweep`, also the four-point
characterisation) and surround sweeps (:func:`find_surround`) all open their
runs here and nowhere else.

It lives in ``campaign``, not in ``store``: the store keeps rows (systems, runs,
measurements) through small primitives and knows no activity, while reuse,
resume, skip and finish are the protocol that measuring activities agree on
with the store, and this package is the one place that sees both sides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from nnperf.errors import NnperfError
from nnperf.measure import LayerMeasurement, NetworkMeasurement, SystemSpec, Timing
from nnperf.store import RunRecord, Store, SystemRecord

Progress = Callable[[str, int, int], None]
"""Called with (what is being measured, done, total)."""


def no_progress(what: str, done: int, total: int) -> None:
    """A :data:`Progress` that reports nothing."""


@dataclass(frozen=True)
class Campaign:
    """An open campaign: its system and run, whether the run was reused, and what it already holds.

    ``done`` maps the name of every layer (or sweep point) the run held when it
    was opened, measured with the run's ``method``, to its stored timing
    (seconds): the caller skips those. ``reused`` is True when the run is a
    finished one read back (nothing may be added to it); ``resumed`` when an
    interrupted run was reopened.
    """

    store: Store
    system: SystemRecord
    run: RunRecord
    reused: bool
    done: Mapping[str, Timing]

    @property
    def resumed(self) -> bool:
        return self.run.resumed

    def add_layer(self, measurement: LayerMeasurement) -> None:
        """Store one layer measurement in the run now (it survives a crash right after)."""
        self._check_open()
        self.store.add_layer_measurement(self.run.id, measurement)

    def add_layers(self, measurements: Sequence[LayerMeasurement]) -> None:
        """Store several layer measurements in the run now, in one transaction: a crash keeps all or none."""
        self._check_open()
        self.store.add_layer_measurements(self.run.id, measurements)

    def add_network(self, measurement: NetworkMeasurement) -> None:
        """Store one whole-network measurement in the run now."""
        self._check_open()
        self.store.add_network_measurement(self.run.id, measurement)

    def _check_open(self) -> None:
        if self.reused:
            raise NnperfError(f"run {self.run.id} ({self.run.campaign}) finished before and was reused: "
                              "measure it again with a fresh campaign instead of adding to it")


@contextmanager
def open_campaign(store: Store, system: SystemSpec, campaign: str, model: str, network_hash: str, method: str,
                  config: Mapping[str, Any], reuse: bool = False) -> Iterator[Campaign]:
    """Opens the run of ``campaign`` on ``system`` (stored if new), reusing a finished one when ``reuse``.

    ``model``, ``network_hash``, ``method`` and ``config`` are stored with a new
    run (``config`` must have a JSON form). The run finishes 'done' when the
    block ends normally and 'failed' when it raises; a reused run is left as is.
    """
    record = store.add_system(system)
    finished = store.finished_run(record.id, campaign) if reuse else None
    run = finished or store.start_run(record.id, campaign, model, network_hash, method, config)
    try:
        done = {r.layer: r.timing for r in store.layer_measurements(run_id=run.id) if r.method.value == method}
        yield Campaign(store, record, run, finished is not None, done)
    except BaseException:
        if finished is None:
            store.finish_run(run.id, "failed")
        raise
    if finished is None:
        store.finish_run(run.id, "done")

"""Measuring items: a campaign's work cut into pure functions of (system, item) that return measurements.

An item is a frozen, picklable description of one thing to measure (one layer alone, the whole network with the
drift sentinel around it, a network's profiler passes, one sweep point). ``item.measure(backend)`` takes the
measurement on a backend built from the system's settings and returns it; it stores nothing. The campaign that
made the items stores each result as it comes back, so the same items run in this process
(:class:`LocalRunner`) or on a fleet of machines (``nnperf.fleet``), and a result that never came back (a worker
killed) is measured again without ever being stored twice.

An :class:`ItemRunner` runs items on one system. The campaigns here (:func:`profile_network`, :func:`run_sweep`)
take one where they take a backend: a backend measures in this process exactly as before, a runner fans the items
out.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self

from nnperf.errors import NnperfError
from nnperf.ir import Layer, Network
from nnperf.measure import HarnessConfig, LayerMeasurement, Method, NetworkMeasurement, SystemSpec
from nnperf.measure.backends import Backend, ProfileResult

ItemProgress = Callable[[str, int, int], None]
"""Called with (the item that came back, items done, items in all)."""


class Item(Protocol):
    """One thing to measure on a system: ``measure(backend)`` returns its measurement and stores nothing."""

    @property
    def label(self) -> str: ...

    def measure(self, backend: Backend) -> Any: ...


@dataclass(frozen=True)
class LayerItem:
    """One layer timed alone on its real input shapes (PreVIous IV-C2); gives a :class:`LayerMeasurement`."""

    layer: Layer
    harness: HarnessConfig
    gap_s: float = 0.0

    @property
    def label(self) -> str:
        return self.layer.name

    def measure(self, backend: Backend) -> LayerMeasurement:
        from nnperf.campaign._profile import measure_isolated_layer

        return measure_isolated_layer(backend, self.layer, self.harness, gap_s=self.gap_s)


@dataclass(frozen=True)
class WholeItem:
    """The whole network between two drift-sentinel readings; gives a :class:`NetworkMeasurement` whose extras hold
    the sentinel times and the drift (over this item, not over the whole campaign as in one process)."""

    network: Network
    harness: HarnessConfig

    @property
    def label(self) -> str:
        return "whole network"

    def measure(self, backend: Backend) -> NetworkMeasurement:
        from nnperf.campaign._profile import measure_whole_with_sentinel

        return measure_whole_with_sentinel(backend, self.network, self.harness)


@dataclass(frozen=True)
class ProfilerItem:
    """``runs`` whole-network passes under the framework's profiler; gives a :class:`ProfileResult`."""

    network: Network
    runs: int

    @property
    def label(self) -> str:
        return f"profiler runs ({self.runs})"

    def measure(self, backend: Backend) -> ProfileResult:
        return backend.profile(self.network, self.runs)


@dataclass(frozen=True)
class SweepPointItem:
    """One sweep point: the layer under test timed inside its profiling network; gives a :class:`LayerMeasurement`
    named ``name`` (method 'profiler', group the layer under test)."""

    name: str
    kind: str
    network: Network
    harness: HarnessConfig

    @property
    def label(self) -> str:
        return self.name.replace("#", " round ")

    def measure(self, backend: Backend) -> LayerMeasurement:
        from nnperf.measure.sweep import UNDER_TEST, time_in_context

        return LayerMeasurement(self.name, self.kind, Method.PROFILER,
                                time_in_context(backend, self.network, self.harness), UNDER_TEST)


class ItemRunner(abc.ABC):
    """Runs measuring items on one system and hands their results back as each one ends.

    ``run`` yields (index in ``items``, result) in the order the items finish, each item exactly once; the
    caller stores a result as soon as it has it. An item that raises stops the run with its error.
    """

    @abc.abstractmethod
    def system(self) -> SystemSpec:
        """The system every item is measured on."""

    @abc.abstractmethod
    def run(self, items: Sequence[Item], progress: ItemProgress | None = None) -> Iterator[tuple[int, Any]]:
        """Measures ``items``; yields (index, result) as each ends."""

    def run_one(self, item: Item) -> Any:
        """Measures one item and returns its result."""
        results = dict(self.run([item]))
        if 0 not in results:
            raise NnperfError(f"the item {item.label!r} gave no result")
        return results[0]

    def close(self) -> None:
        """Releases what the runner holds (its backend, its connection)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalRunner(ItemRunner):
    """Runs items one after the other in this process, on ``backend``."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def system(self) -> SystemSpec:
        return self.backend.system()

    def run(self, items: Sequence[Item], progress: ItemProgress | None = None) -> Iterator[tuple[int, Any]]:
        for i, item in enumerate(items):
            result = item.measure(self.backend)
            if progress is not None:
                progress(item.label, i + 1, len(items))
            yield i, result

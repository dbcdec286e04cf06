"""What a fleet measures: a system's settings, the Ray resource that names a system, and the fleet's errors.

A node of the fleet advertises each system it measures as a Ray custom resource ``nnperf-system-KEY`` whose
amount is its number of measuring slots (one per node: two measurements at once on the same cores would disturb
each other). ``KEY`` is nnperf's own system key (:attr:`nnperf.measure.SystemSpec.key`: backend, device, CPU model,
options with the thread count, package versions, allocator environment), so an item asking for one slot of that
resource runs only on a node of its system, one at a time per node.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from nnperf.fleet._errors import CORES_MARKER, FleetError
from nnperf.measure import System, SystemSpec
from nnperf.measure.backends import Backend

RESOURCE_PREFIX = "nnperf-system-"
"""The prefix of the Ray custom resource a node advertises for each system it measures."""

OMP_MARKER = "NNPERF_FLEET_OMP_NUM_THREADS"
"""Set on a node by ``nnperf fleet up``: the ``OMP_NUM_THREADS`` the node's user had ('' when unset).

Ray sets ``OMP_NUM_THREADS`` (to 1 for a task without CPUs) in a worker where it is unset, and the variable is
part of a system's key; a worker puts the user's value back while it measures, so a node measures the system it
advertises and the same system as in one process."""


@dataclass(frozen=True)
class SystemSettings(System):
    """A :class:`~nnperf.measure.System` as a fleet measures it: the settings that make a backend, hence a system,
    on any node, and how a simulated one takes time.

    ``wall_scale`` concerns the ``fake`` backend only: its modelled times are also slept, scaled by it, so that a
    simulated fleet (tests, ``bench/fleet_scale.py``) has items that take real time. Its times stay a formula.

    The backend ``primitives`` (:data:`nnperf.campaign.PRIMITIVE_BACKEND`) is the system the primitive dataset is
    profiled on: its items (:class:`nnperf.campaign.PrimitiveItem`) call the libraries themselves and need no
    backend object, so :meth:`create` refuses it and :meth:`system` gives it directly.
    """

    wall_scale: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.wall_scale < 0:
            raise FleetError(f"wall_scale must be >= 0, got {self.wall_scale}")
        if self.wall_scale and self.backend != "fake":
            raise FleetError("wall_scale simulates measuring time on the fake backend only")

    @classmethod
    def of(cls, system: System, wall_scale: float = 0.0) -> SystemSettings:
        """``system`` as fleet settings (``system`` itself when it is already settings and no scale is given)."""
        if isinstance(system, SystemSettings) and not wall_scale:
            return system
        return cls(system.backend, system.device, system.threads, system.options, wall_scale)

    @property
    def measures_primitives(self) -> bool:
        """Whether these are the settings of the primitive-profiling system (no backend object)."""
        from nnperf.campaign import PRIMITIVE_BACKEND

        return self.backend == PRIMITIVE_BACKEND

    def system(self) -> SystemSpec:
        """The system these settings make on this machine."""
        if self.measures_primitives:
            from nnperf.campaign import primitive_system

            if self.device != "cpu" or self.options:
                raise FleetError(f"the primitives are profiled on the CPU with no options, not {self.label}")
            return primitive_system(self.threads)
        with self.create() as backend:
            return backend.system()

    def create(self) -> Backend:
        """The backend these settings describe, on this machine."""
        if self.measures_primitives:
            raise FleetError("the primitives system measures without a backend object: use SystemSettings.system()")
        backend = self.open()
        if self.wall_scale:
            backend.clock = SleepingClock(self.wall_scale)  # type: ignore[attr-defined]
        return backend


class SleepingClock:
    """The fake backend's clock, sleeping every modelled time times ``scale`` (seconds)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        time.sleep(seconds * self.scale)


def system_resource(key: str) -> str:
    """The Ray custom resource a node advertises for the system with ``key``."""
    return f"{RESOURCE_PREFIX}{key}"


def node_resources(settings: Sequence[SystemSettings], slots: int = 1) -> dict[str, float]:
    """The resources this machine advertises as a node measuring ``settings``: ``slots`` of each system."""
    if slots < 1:
        raise FleetError(f"a node needs at least one measuring slot, got {slots}")
    resources: dict[str, float] = {}
    for one in settings:
        resources[system_resource(one.system().key)] = float(slots)
    return resources


def node_environment(cores: str = "") -> dict[str, str]:
    """The variables a node's processes need: the user's ``OMP_NUM_THREADS`` (see :data:`OMP_MARKER`) and the
    node's core sets when it has several slots (``cores``, see ``_cores.py``)."""
    return {OMP_MARKER: os.environ.get("OMP_NUM_THREADS", ""), CORES_MARKER: cores}


@contextmanager
def measuring_environment(env: Mapping[str, str] | None = None) -> Iterator[None]:
    """Inside a Ray worker, the node user's ``OMP_NUM_THREADS`` in place of Ray's while measuring."""
    env = os.environ if env is None else env
    if OMP_MARKER not in env:
        yield
        return
    wanted, before = env[OMP_MARKER], os.environ.get("OMP_NUM_THREADS")
    _set("OMP_NUM_THREADS", wanted or None)
    try:
        yield
    finally:
        _set("OMP_NUM_THREADS", before)


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value

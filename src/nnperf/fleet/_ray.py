"""The fleet on Ray: connecting to a cluster, finding the nodes of a system, and running items there.

Ray is imported here only, inside functions: a campaign in one process never imports it. Each item is a Ray
task asking for one measuring slot (the custom resource of its system, see ``_settings.py``) and no CPU, so
a node runs one measuring item at a time and only items of its own system. The driver is the one writer of the
store: results come back to it as each item ends. An item whose worker died (process killed, node lost) is
submitted again, up to ``max_attempts`` times, so it is measured elsewhere or later, and stored once.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from nnperf.campaign import Item, ItemProgress, ItemRunner
from nnperf.errors import NnperfError
from nnperf.fleet._cores import core_sets, encode_core_sets
from nnperf.fleet._errors import FleetError, NoNodeForSystemError
from nnperf.fleet._ledger import save_placement
from nnperf.fleet._settings import RESOURCE_PREFIX, SystemSettings, node_environment, node_resources, system_resource
from nnperf.fleet._worker import measure_on_node, node_system
from nnperf.measure import System, SystemSpec
from nnperf.store import Store

ResultHook = Callable[[str, str], None]
"""Called with (the node that measured an item, the item's label) as each result comes back."""

CHECK_S = 5.0
"""How often (seconds) a runner waiting for results checks that a node of its system is still in the fleet."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise FleetError("the fleet runs on Ray, which is not installed here: pip install 'nnperf[fleet]'") from None
    return ray


def _node_name() -> str:
    import ray

    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


def _measure_task(settings: SystemSettings, system_key: str, item: Item) -> tuple[Any, str]:
    """A Ray task: the item measured on this node, and the node's name."""
    node = _node_name()
    return measure_on_node(settings, system_key, item, node), node


def _probe_task(settings: SystemSettings) -> SystemSpec:
    """A Ray task pinned to one node: the system ``settings`` make there."""
    return node_system(settings)


@dataclass(frozen=True)
class FleetNode:
    """A node of the fleet: Ray's id, a name (host/id prefix), its address, and the systems it advertises
    (system key -> measuring slots)."""

    node_id: str
    name: str
    address: str
    alive: bool
    cpus: float
    systems: dict[str, float] = field(default_factory=dict)


class Fleet:
    """A connection to a Ray cluster whose nodes measure systems; ``close`` disconnects (the cluster stays)."""

    def __init__(self, address: str | None = None) -> None:
        ray = _ray()
        self.address = address or "auto"
        self._owned = not ray.is_initialized()  # a driver already connected (a test, a notebook) stays connected
        if not self._owned:
            return
        try:
            ray.init(address=self.address, log_to_driver=False, logging_level="ERROR", namespace="nnperf")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise FleetError(f"no Ray cluster at {self.address}: {str(exc).splitlines()[0] if str(exc) else exc} "
                             "(start one with `nnperf fleet up`)") from None

    def nodes(self) -> list[FleetNode]:
        """Every node Ray knows, alive or not, with the systems it advertises."""
        found = []
        for n in _ray().nodes():
            resources = n.get("Resources", {})
            systems = {k.removeprefix(RESOURCE_PREFIX): v for k, v in resources.items() if k.startswith(RESOURCE_PREFIX)}
            found.append(FleetNode(n["NodeID"], f"{n.get('NodeManagerHostname', '?')}/{n['NodeID'][:8]}",
                                   n.get("NodeManagerAddress", ""), bool(n.get("Alive")), resources.get("CPU", 0.0),
                                   systems))
        return found

    def busy_slots(self) -> dict[str, float]:
        """Measuring slots in use now, by system key, over the whole fleet."""
        ray = _ray()
        total, free = ray.cluster_resources(), ray.available_resources()
        return {k.removeprefix(RESOURCE_PREFIX): v - free.get(k, 0.0) for k, v in total.items()
                if k.startswith(RESOURCE_PREFIX)}

    def runners(self, system: System, store: Store | None = None, max_attempts: int = 3,
                on_result: ResultHook | None = None) -> list[RayRunner]:
        """One runner per system that ``system``'s settings (a :class:`~nnperf.measure.System` or
        :class:`SystemSettings`) make on the fleet's nodes that advertise it.

        Each advertising node is asked which system ``settings`` make there; the nodes whose answer is a
        system they advertise measure it. Raises :class:`NoNodeForSystemError`, naming what the nodes advertise,
        when there is none. With ``store`` each runner records on which node it measured how many items.
        """
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        settings = SystemSettings.of(system)
        advertising = [n for n in self.nodes() if n.alive and n.systems]
        probe = ray.remote(_probe_task)
        asked = {n.node_id: probe.options(num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
            n.node_id, soft=False)).remote(settings) for n in advertising}
        members: dict[str, list[FleetNode]] = {}
        systems: dict[str, SystemSpec] = {}
        answers: list[str] = []
        for node in advertising:
            try:
                spec = ray.get(asked[node.node_id])
            except Exception as exc:  # noqa: BLE001 - a node that cannot build the backend measures nothing
                cause = getattr(exc, "cause", exc)
                answers.append(f"{node.name} cannot measure {settings.label}: {cause}")
                continue
            if spec.key in node.systems:
                members.setdefault(spec.key, []).append(node)
                systems[spec.key] = spec
            else:
                answers.append(f"{node.name} advertises {', '.join(sorted(node.systems))}, and {settings.label} is "
                               f"system {spec.key} there")
        if not members:
            listed = "; ".join(answers) or "no node advertises any system"
            raise NoNodeForSystemError(
                f"no node of the fleet at {self.address} measures {settings.label}: {listed}. Add one with "
                f"`nnperf fleet up --address ADDRESS --backend {settings.backend} --threads {settings.threads}`")
        return [RayRunner(settings, systems[key], nodes, store, max_attempts, on_result)
                for key, nodes in sorted(members.items())]

    def close(self) -> None:
        """Disconnects from the cluster (when this object connected); the cluster goes on."""
        if self._owned:
            _ray().shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RayRunner(ItemRunner):
    """Runs items as Ray tasks on the fleet's nodes of one system, streaming the results back.

    ``placements`` counts the items each node measured, ``requeued`` the items submitted again after their
    worker died. With a ``store``, :meth:`close` records the placements there (``nnperf systems`` shows them).
    """

    def __init__(self, settings: SystemSettings, system: SystemSpec, nodes: Sequence[FleetNode],
                 store: Store | None = None, max_attempts: int = 3, on_result: ResultHook | None = None) -> None:
        if max_attempts < 1:
            raise FleetError(f"an item needs at least one attempt, got {max_attempts}")
        self.settings, self._system, self.nodes = settings, system, tuple(nodes)
        self.store, self.max_attempts, self.on_result = store, max_attempts, on_result
        self.placements: dict[str, int] = {}
        self.requeued = 0
        self.resource = system_resource(system.key)

    def system(self) -> SystemSpec:
        return self._system

    def run(self, items: Sequence[Item], progress: ItemProgress | None = None) -> Iterator[tuple[int, Any]]:
        ray = _ray()
        from ray import exceptions as rex

        lost = (rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError, rex.LocalRayletDiedError)
        task = ray.remote(_measure_task).options(num_cpus=0, resources={self.resource: 1.0}, max_retries=0)
        pending: dict[Any, int] = {}
        attempts = [0] * len(items)

        def submit(i: int) -> None:
            attempts[i] += 1
            pending[task.remote(self.settings, self._system.key, items[i])] = i

        for i in range(len(items)):
            submit(i)
        done = 0
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=CHECK_S)
                if not ready:
                    self._check_nodes()
                    continue
                i = pending.pop(ready[0])
                try:
                    result, node = ray.get(ready[0])
                except rex.RayTaskError as exc:
                    cause = exc.cause
                    if isinstance(cause, NnperfError):
                        raise cause from None
                    raise FleetError(f"the item {items[i].label!r} failed on the fleet: "
                                     f"{type(cause).__name__}: {cause}") from None
                except lost as exc:
                    if attempts[i] >= self.max_attempts:
                        raise FleetError(f"the item {items[i].label!r} was lost {attempts[i]} times (its worker "
                                         f"died: {type(exc).__name__}); what was measured before is stored, run "
                                         "the command again to resume") from None
                    self.requeued += 1
                    submit(i)
                    continue
                self.placements[node] = self.placements.get(node, 0) + 1
                done += 1
                if self.on_result is not None:
                    self.on_result(node, items[i].label)
                if progress is not None:
                    progress(items[i].label, done, len(items))
                yield i, result
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001,S110 - a task that ended meanwhile cannot be cancelled
                    pass

    def _check_nodes(self) -> None:
        """Raises when no live node advertises this runner's system any more (its tasks would wait forever)."""
        capacity = _ray().cluster_resources().get(self.resource, 0.0)
        if capacity <= 0:
            raise NoNodeForSystemError(f"every node of system {self._system.key} ({self._system.label}) left the "
                                       "fleet; what was measured is stored: run the command again once one is back")

    def close(self) -> None:
        if self.store is not None and self.placements:
            save_placement(self.store, self._system, self.placements, self.requeued)
            self.placements = {}


def _ray_command() -> str:
    """The ``ray`` command of this Python environment."""
    beside = Path(sys.executable).parent / "ray"
    return str(beside) if beside.exists() else "ray"


def fleet_up(settings: Sequence[SystemSettings], address: str | None = None, slots: int = 1,
             num_cpus: int | None = None, port: int = 6379) -> str:
    """Starts a Ray node on this machine that measures ``settings`` (``slots`` items at once per system, each on a
    core set of its own when there are several): the head of a new local cluster, or a node joining the cluster
    at ``address``. Returns the cluster's address."""
    resources = node_resources(settings, slots)
    cores = encode_core_sets(core_sets(slots, max(s.threads for s in settings))) if slots > 1 else ""
    command = [_ray_command(), "start", "--resources", json.dumps(resources), "--disable-usage-stats"]
    command += ["--address", address] if address else ["--head", "--port", str(port), "--include-dashboard=false"]
    if num_cpus is not None:
        command += ["--num-cpus", str(num_cpus)]
    try:
        done = subprocess.run(command, env={**os.environ, **node_environment(cores)}, capture_output=True, text=True,
                              timeout=180, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FleetError(f"`ray start` did not run: {exc}") from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise FleetError(f"`ray start` failed (exit {done.returncode}): {tail}")
    if address:
        return address
    found = re.search(r"--address='([^']+)'", done.stdout)
    return found.group(1) if found else f"127.0.0.1:{port}"


def fleet_down() -> None:
    """Stops the Ray processes of this machine (``ray stop``): its node leaves the fleet."""
    done = subprocess.run([_ray_command(), "stop"], capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise FleetError(f"`ray stop` failed: {(done.stderr or done.stdout).strip()[-300:]}")

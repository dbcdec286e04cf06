"""Networks measured into the store, reusing finished campaigns: what calibration and evaluation read.

A network whose campaign (same system, network and settings) already
finished is read back from the store instead of being measured again; an
interrupted one resumes, so interrupted calibrations and evaluations pick up
where they stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nnperf.campaign._items import Measurer
from nnperf.campaign._profile import ProfileConfig, profile_network
from nnperf.errors import NnperfError
from nnperf.ir import Network
from nnperf.measure.power import PowerMeter
from nnperf.prediction import MeasuredNetwork
from nnperf.store import Store

RunsProgress = Callable[[str, int, int], None]
"""Called with (what is being measured, done, total) over all the networks' layers."""


def measure_networks(measurer: Measurer, store: Store, networks: Sequence[Network], config: ProfileConfig,
                     meter: PowerMeter | None = None, progress: RunsProgress | None = None) -> list[MeasuredNetwork]:
    """Measures every network layer by layer and whole, reusing finished campaigns of the same settings
    on ``measurer`` (a backend, or a runner such as a fleet of one system)."""
    total = sum(len(n.layers) + 1 for n in networks)
    done_before = 0
    measured = []
    for net in networks:
        def forward(what: str, done: int, part_total: int, offset: int = done_before, name: str = net.name,
                    size: int = len(net.layers)) -> None:
            # the campaign counts its layers (of ``size``), then reports the profiler runs and the whole network
            # on their own 0-of-1 scales: those come after every layer, never back at the first one
            if progress is not None:
                progress(f"{name}: {what}", offset + (min(done, size) if part_total == size else size), total)

        report = profile_network(net, measurer, store, config, meter=meter, progress=forward, model=net.name,
                                 reuse=True)
        run, reused = store.run(report.run_id), report.reused
        layers = tuple(store.layer_measurements(run_id=run.id, method=config.per_layer)) \
            if config.per_layer != "none" else ()
        wholes = store.network_measurements(run_id=run.id)
        if not wholes:
            raise NnperfError(f"run {run.id} of {net.name} has no whole-network measurement")
        measured.append(MeasuredNetwork(net, run, layers, wholes[-1], reused))
        done_before += len(net.layers) + 1
        if progress is not None:
            progress(f"{net.name}: done", done_before, total)
    return measured

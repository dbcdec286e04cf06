"""Attach an imported power trace to a stored isolated run: energy per layer (PreVIous IV-C3, Fig. 3).

The run stored each layer's time window (Unix time of its first and last
timed block) and how many executions it covered; the trace, recorded by a
power analyser during that run, is cut at those windows, integrated, and
divided by the executions. The layer measurements are stored again with
their energy.
"""

from __future__ import annotations

from dataclasses import replace

from nnperf.errors import NnperfError
from nnperf.measure import SystemSpec
from nnperf.measure.power import PowerTrace, Window, WindowEnergy, integrate_windows
from nnperf.store import Store


def attach_trace(store: Store, system: SystemSpec, model: str, trace: PowerTrace, offset_s: float = 0.0,
                 source: str = "trace", min_samples: int = 10) -> list[WindowEnergy]:
    """Per-layer energies of the latest finished isolated run of ``model`` on ``system``, from ``trace``.

    ``offset_s`` is added to the trace's times to bring them to Unix time.
    """
    record = store.find_system(system)
    runs = [] if record is None else [r for r in store.runs(system_id=record.id, model=model)
                                      if r.method == "isolated" and r.status == "done"]
    if not runs:
        raise NnperfError(f"no finished isolated run of {model} on {system.label} in {store.path}: run "
                          f"`nnperf profile {model} --backend {system.backend} --gap-s 0.3` while the power analyser "
                          "records, then import its trace")
    run = max(runs, key=lambda r: r.started_at)
    layers = store.layer_measurements(run_id=run.id, method="isolated")
    windows = [Window(r.layer, r.started_at, r.ended_at, r.n * r.block_size) for r in layers]
    shifted = PowerTrace(trace.time_s + offset_s, trace.power_w)
    energies = integrate_windows(shifted, windows, min_samples=min_samples)
    for rec, energy in zip(layers, energies):
        store.add_layer_measurement(run.id, replace(rec.measurement(), energy_j=energy.energy_per_execution_j,
                                                    power_meter=f"trace:{source}"))
    return energies

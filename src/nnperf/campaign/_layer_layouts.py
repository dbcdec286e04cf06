"""Profiling the layers other than convolutions in each layout into the store, and reading the times back.

Primitive selection charges every layer that is not a convolution the time of the layout it runs in
(:func:`~nnperf.primitives.time_layer`: a max pooling in hwc can be ten times faster than in chw, a batch norm
slower). Every distinct layer (by :func:`~nnperf.primitives.layer_key`: op, shapes, attributes) is a run of its
own (campaign ``layers|KEY``) on the primitive system ``primitives/cpu[threads=N]``; each layout is one layer
measurement (``op`` 'layer', method 'isolated') stored as soon as it is timed, and what the store holds is never
measured again, so an interrupted profile resumes where it stopped.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from nnperf.campaign._campaign import Progress, no_progress, open_campaign
from nnperf.campaign._primitives import DATASET_HARNESS, _measure_config, primitive_system
from nnperf.ir import Layer, Network
from nnperf.measure import HarnessConfig, Method
from nnperf.primitives import conv_layer_configs, layer_key, layer_layouts, layer_signature, time_layer
from nnperf.store import Store

LAYER_CAMPAIGN = "layers|"
"""The prefix of a profiled layer's campaign key."""

LayerTimes = dict[str, dict[str, float]]
"""Layer key -> layout name -> median time (s)."""


@dataclass(frozen=True)
class LayerProfileReport:
    """What :func:`profile_layer_layouts` did: distinct layers measured now and read back, layouts timed now,
    failures (layer name, layout, error), and the times of every layer asked for, by key."""

    system_id: int
    measured: int
    reused: int
    samples: int
    elapsed_s: float
    failures: tuple[tuple[str, str, str], ...]
    times_s: LayerTimes


def layout_layers(networks: Iterable[Network]) -> dict[str, Layer]:
    """The distinct layers of ``networks`` that may run in more than one layout and are not 2-D convolutions
    (those run through primitives), by :func:`~nnperf.primitives.layer_key`, first occurrence kept."""
    found: dict[str, Layer] = {}
    for network in networks:
        convs = conv_layer_configs(network)
        for layer in network.layers:
            if layer.name not in convs and len(layer_layouts(layer)) > 1:
                found.setdefault(layer_key(layer), layer)
    return found


def profile_layer_layouts(store: Store, networks: Iterable[Network], threads: int = 1,
                          harness: HarnessConfig = DATASET_HARNESS,
                          progress: Progress | None = None) -> LayerProfileReport:
    """Times every distinct layer of ``networks`` that may run in chw or hwc (:func:`layout_layers`) in each
    layout into ``store``, on the primitive system with ``threads`` threads; what the store holds is read back,
    not measured again. A layout whose run raises is reported in ``failures`` and left out of the times."""
    layers = layout_layers(networks)
    system = primitive_system(threads)
    record = store.add_system(system)
    stored = load_layer_layouts(store, record.id)
    report = progress or no_progress
    start = time.perf_counter()
    measured = reused = samples = 0
    failures: list[tuple[str, str, str]] = []
    for i, (key, layer) in enumerate(layers.items()):
        have = stored.get(key, {})
        jobs = [(str(layout), "layer", layer.op.value, functools.partial(time_layer, layer, layout, threads, harness))
                for layout in layer_layouts(layer) if str(layout) not in have]
        if not jobs:
            reused += 1
            continue
        report(layer.name, i, len(layers))
        signature = layer_signature(layer)
        with open_campaign(store, system, LAYER_CAMPAIGN + key, signature, key, Method.ISOLATED.value,
                           {"signature": signature, "threads": threads, "harness": asdict(harness)}) as campaign:
            samples += _measure_config(campaign, layer.name, jobs, failures)
        measured += 1
    report("done", len(layers), len(layers))
    if measured:  # what was timed now joins what the store held
        stored = load_layer_layouts(store, record.id)
    times = {key: dict(stored.get(key, {})) for key in layers}
    return LayerProfileReport(record.id, measured, reused, samples, time.perf_counter() - start, tuple(failures),
                              times)


def load_layer_layouts(store: Store, system_id: int) -> LayerTimes:
    """Every layer-in-a-layout time stored for system ``system_id``: layer key -> layout -> median (s)."""
    runs = {r.id: r.network_hash for r in store.runs(system_id=system_id) if r.campaign.startswith(LAYER_CAMPAIGN)}
    found: LayerTimes = {}
    for m in store.layer_measurements(system_id=system_id, method=Method.ISOLATED):
        if m.run_id in runs and m.op == "layer":
            found.setdefault(runs[m.run_id], {}).setdefault(m.layer, m.timing.stats.median_s)
    return found

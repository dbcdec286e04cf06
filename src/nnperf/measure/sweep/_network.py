"""The three-layer profiling network around a layer under test, and its in-context timing (Osterwind 3.3.1).

"We need to execute the layer in a representative network, as first and last
layers absorb certain initialization and deinitialization tasks": the layer
under test sits between an input layer and an output layer. Their outer width
``surround`` (the channels the network takes in and gives out) is the only
free choice; :mod:`._surround` picks the smallest that no longer changes the
middle layer's time.

- conv2d: 1x1 conv surround -> C, the layer under test C -> F, 1x1 conv F -> surround;
- depthwise: 1x1 conv surround -> C, the depthwise layer, 1x1 conv C -> surround;
- fc: fc surround -> C, the layer under test C -> F, fc F -> surround.

The middle layer's time is taken in place during whole-network runs: by a
clock around its call where the backend allows (torch), else as its node time
in the framework's profiler (ONNX Runtime, OpenCV). torch's profiler added
0.1-0.3 ms to a 1.07 ms convolution here, which is why it is not used for torch.
"""

from __future__ import annotations

import time

from nnperf.ir import ConvAttrs, Layer, LinearAttrs, Network, OpType, TensorSpec
from nnperf.measure._harness import HarnessConfig, MeasurementError, measure
from nnperf.measure._stats import median_ci_rel, summarize
from nnperf.measure._types import Timing
from nnperf.measure.backends._base import Backend
from nnperf.measure.sweep._config import LayerConfig

UNDER_TEST = "under_test"
"""The name of the middle layer in every profiling network."""

ROUND_RUNS = 10
"""Whole-network runs per profiler round."""


def profiling_network(config: LayerConfig, surround: int) -> Network:
    """The three-layer network whose middle layer, named ``under_test``, is ``config``."""
    if surround < 1:
        raise MeasurementError(f"the surrounding layers' width must be a positive integer, got {surround}")
    middle = config.layer(UNDER_TEST, "input_layer")
    c_in, c_out = config.in_channels, config.out_channels
    name = f"profiling[{config.describe()}, surround={surround}]"
    if config.kind == "fc":
        first = Layer("input_layer", OpType.LINEAR, ("x",), ((1, surround),), (1, c_in), LinearAttrs())
        last = Layer("output_layer", OpType.LINEAR, (UNDER_TEST,), (middle.output_shape,), (1, surround),
                     LinearAttrs())
        return Network(name, (TensorSpec("x", (1, surround)),), (first, middle, last), ("output_layer",))
    size, out = config["size"], config.output_size
    pointwise = ConvAttrs(kernel=(1, 1))
    first = Layer("input_layer", OpType.CONV, ("x",), ((1, surround, size, size),), (1, c_in, size, size), pointwise)
    last = Layer("output_layer", OpType.CONV, (UNDER_TEST,), ((1, c_out, out, out),), (1, surround, out, out),
                 pointwise)
    return Network(name, (TensorSpec("x", (1, surround, size, size)),), (first, middle, last), ("output_layer",))


def time_in_context(backend: Backend, network: Network, harness: HarnessConfig,
                    layer: str = UNDER_TEST) -> Timing:
    """The time of ``layer`` inside ``network``, with the harness's stopping rule.

    A backend that times a layer in place (torch: a clock around the layer's
    call) goes through the harness as it is. Otherwise rounds of
    ``ROUND_RUNS`` profiled runs are added until at least ``min_samples``
    times are in and the median's confidence interval is within
    ``target_ci``, or ``budget_s`` is spent, or ``max_samples`` reached.
    """
    timer = backend.context_timer(network, layer)
    if timer is not None:
        return measure(timer, harness)
    if not backend.has_profiler:
        raise MeasurementError(f"backend {backend.name!r} has no profiler to time a layer inside a network")
    times: list[float] = []
    start = time.perf_counter()
    began_wall = time.time()
    reason = "max_samples"
    while len(times) < harness.max_samples:
        result = backend.profile(network, ROUND_RUNS)
        found = [m for m in result.layers if m.layer == layer]
        if not found:
            raise MeasurementError(f"the {backend.name} profiler reported no time for layer {layer!r} of "
                                   f"{network.name}")
        times.extend(found[0].timing.times_s)
        if len(times) >= harness.min_samples and median_ci_rel(times, harness.confidence) <= harness.target_ci:
            reason = "converged"
            break
        if time.perf_counter() - start >= harness.budget_s:
            reason = "budget"
            break
    times = times[:harness.max_samples] if reason == "max_samples" else times
    return Timing(tuple(times), 1, summarize(times, harness.confidence), reason, time.perf_counter() - start,
                  began_wall, time.time())

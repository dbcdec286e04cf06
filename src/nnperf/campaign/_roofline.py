"""The roofline peaks of a system, measured by probe layers run on its backend: the best #OPs per second of large
dense convolutions and the best bytes per second of element-wise adds far larger than the last-level cache."""

from __future__ import annotations

from nnperf.ir import ConvAttrs, Layer, OpType
from nnperf.ir.metrics import layer_metrics
from nnperf.measure import HarnessConfig, measure
from nnperf.measure.backends import Backend
from nnperf.prediction import RooflineModel, layer_bytes

PROBE_HARNESS = HarnessConfig(warmup_s=0.1, target_ci=0.02, budget_s=2.0)


def _conv(name: str, channels: int, size: int, kernel: int, out_channels: int) -> Layer:
    pad = kernel // 2
    return Layer(name, OpType.CONV, ("x",), ((1, channels, size, size),), (1, out_channels, size, size),
                 ConvAttrs(kernel=(kernel, kernel), padding=(pad, pad, pad, pad)))


def _add(name: str, shape: tuple[int, ...]) -> Layer:
    return Layer(name, OpType.ADD, ("a", "b"), (shape, shape), shape)


COMPUTE_PROBES = (
    _conv("peak_conv3x3_256x28x28", 256, 28, 3, 256),
    _conv("peak_conv1x1_512x28x28", 512, 28, 1, 512),
)
"""Large dense convolutions: the best #OPs per second of these is the compute roof."""

BANDWIDTH_PROBES = (
    _add("peak_add_64x512x512", (1, 64, 512, 512)),
    _add("peak_add_16x512x512", (1, 16, 512, 512)),
)
"""Element-wise adds far larger than the last-level cache: the best bytes per second is the memory roof."""



def measure_roofline(backend: Backend, config: HarnessConfig = PROBE_HARNESS) -> RooflineModel:
    """Measures this system's peak #OPs per second and bytes per second with the probe layers."""
    ops_per_s = max(layer_metrics(p).ops / measure(backend.layer_timer(p), config).stats.median_s
                    for p in COMPUTE_PROBES)
    bytes_per_s = max(layer_bytes(p) / measure(backend.layer_timer(p), config).stats.median_s
                      for p in BANDWIDTH_PROBES)
    return RooflineModel.from_peaks(ops_per_s, bytes_per_s)

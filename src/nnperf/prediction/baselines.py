"""The two models a user could pick instead of PreVIous, for side-by-side evaluation.

- **MACs-proportional**: latency = seconds per MAC x the network's MACs, the
  slope fitted through the origin on the calibration networks' whole-network
  times. Layers without MACs (pooling, activations, concat) cost nothing.
- **Roofline**: each layer takes at least max(#OPs / peak compute,
  bytes moved / memory bandwidth), with both peaks measured on this system by
  probe layers run on the backend itself; the network bound is the sum over
  its layers. It is a lower bound by construction, not a fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nnperf.errors import NnperfError
from nnperf.ir import ConvAttrs, Layer, Network, OpType
from nnperf.ir.metrics import LayerMetrics, layer_metrics, network_metrics
from nnperf.measure import HarnessConfig, measure
from nnperf.measure.backends import Backend
from nnperf.prediction._base import CalibrationSet, NetworkInput, NetworkPredictor, register_predictor
from nnperf.registry import Availability

if TYPE_CHECKING:
    from typing import Self

BYTES_PER_ELEMENT = 4
"""float32: every backend here runs the networks in single precision."""

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


def layer_bytes(layer: Layer) -> int:
    """Bytes a layer must move at least once: inputs, weights and outputs (#memOPs x 4 bytes)."""
    return layer_metrics(layer).mem_ops * BYTES_PER_ELEMENT


@register_predictor
class MacsModel(NetworkPredictor):
    """latency_s = seconds_per_mac_ x MACs, the slope fitted through the origin on the calibration networks."""

    name = "macs"
    label = "MACs baseline"
    description = "baseline: seconds per MAC x MACs, fitted on the calibration networks"
    display_order = 30

    def fit(self, calibration: CalibrationSet) -> Self:
        self.seconds_per_mac_ = _macs_slope([run.network for run in calibration.runs], calibration.measured_s)
        return self

    def predict(self, x: NetworkInput) -> float:
        self.check_fitted()
        return self.seconds_per_mac_ * x.metrics.macs

    def layer_latency_s(self, layer: Layer) -> float:
        self.check_fitted()
        return self.seconds_per_mac_ * layer_metrics(layer).macs

    def latency_s(self, network: Network) -> float:
        self.check_fitted()
        return self.seconds_per_mac_ * network_metrics(network).macs

    def fitted_state(self) -> dict[str, Any]:
        return {"seconds_per_mac": self.seconds_per_mac_}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.seconds_per_mac_ = float(state["seconds_per_mac"])


def _macs_slope(networks: Sequence[Network], measured_s: Sequence[float]) -> float:
    """The least-squares slope through the origin of measured whole-network times on MACs."""
    macs = [float(network_metrics(n).macs) for n in networks]
    denominator = sum(m * m for m in macs)
    if denominator <= 0:
        raise NnperfError("cannot fit the MACs-proportional baseline: the networks have no MACs")
    return sum(m * t for m, t in zip(macs, measured_s)) / denominator


def fit_macs_model(networks: Sequence[Network], measured_s: Sequence[float]) -> MacsModel:
    """A :class:`MacsModel` whose slope is fitted on ``networks`` and their measured times (seconds)."""
    model = MacsModel()
    model.load_fitted_state({"seconds_per_mac": _macs_slope(networks, measured_s)})
    return model


@register_predictor
class RooflineModel(NetworkPredictor):
    """Per-layer bound max(ops / ops_per_s_, bytes / bytes_per_s_), from peaks measured on the system.

    ``fit`` takes the peaks the calibration measured (see
    :func:`measure_roofline`); nothing else is fitted: it is a bound.
    """

    name = "roofline"
    label = "roofline baseline"
    description = "baseline: sum of max(#OPs / peak, bytes / bandwidth) from measured peaks"
    display_order = 40

    @classmethod
    def availability(cls, calibration: CalibrationSet) -> Availability:
        if calibration.peak_ops_per_s is None or calibration.peak_bytes_per_s is None:
            return Availability.no("the calibration measured no roofline peaks")
        return Availability.yes()

    @classmethod
    def from_peaks(cls, ops_per_s: float, bytes_per_s: float) -> RooflineModel:
        """The bound of these peaks (#OPs per second, bytes per second)."""
        model = cls()
        model.load_fitted_state({"ops_per_s": ops_per_s, "bytes_per_s": bytes_per_s})
        return model

    def fit(self, calibration: CalibrationSet) -> Self:
        if not self.availability(calibration).ok:
            raise NnperfError("the roofline needs the peaks measured during calibration")
        self.load_fitted_state({"ops_per_s": calibration.peak_ops_per_s, "bytes_per_s": calibration.peak_bytes_per_s})
        return self

    def predict(self, x: NetworkInput) -> float:
        return float(sum(self.bound_s(m) for m in x.metrics.layers))

    def bound_s(self, metrics: LayerMetrics) -> float:
        """The bound of a layer with these metrics (seconds)."""
        self.check_fitted()
        return max(metrics.ops / self.ops_per_s_, metrics.mem_ops * BYTES_PER_ELEMENT / self.bytes_per_s_)

    def layer_latency_s(self, layer: Layer) -> float:
        return self.bound_s(layer_metrics(layer))

    def latency_s(self, network: Network) -> float:
        return float(sum(self.bound_s(m) for m in network_metrics(network).layers))

    @property
    def ridge_ops_per_byte(self) -> float:
        """Arithmetic intensity above which a layer is compute-bound."""
        return self.ops_per_s_ / self.bytes_per_s_

    def fitted_state(self) -> dict[str, Any]:
        return {"ops_per_s": self.ops_per_s_, "bytes_per_s": self.bytes_per_s_}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        ops_per_s, bytes_per_s = float(state["ops_per_s"]), float(state["bytes_per_s"])
        if not (ops_per_s > 0 and bytes_per_s > 0):
            raise NnperfError(f"roofline peaks must be positive, got {ops_per_s} op/s and {bytes_per_s} B/s")
        self.ops_per_s_, self.bytes_per_s_ = ops_per_s, bytes_per_s


def measure_roofline(backend: Backend, config: HarnessConfig = PROBE_HARNESS) -> RooflineModel:
    """Measures this system's peak #OPs per second and bytes per second with the probe layers."""
    ops_per_s = max(layer_metrics(p).ops / measure(backend.layer_timer(p), config).stats.median_s
                    for p in COMPUTE_PROBES)
    bytes_per_s = max(layer_bytes(p) / measure(backend.layer_timer(p), config).stats.median_s
                      for p in BANDWIDTH_PROBES)
    return RooflineModel.from_peaks(ops_per_s, bytes_per_s)

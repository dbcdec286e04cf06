"""The two models a user could pick instead of PreVIous, for side-by-side evaluation.

- **MACs-proportional**: latency = seconds per MAC x the network's MACs, the
  slope fitted through the origin on the calibration networks' whole-network
  times. Layers without MACs (pooling, activations, concat) cost nothing.
- **Roofline**: each layer takes at least max(#OPs / peak compute,
  bytes moved / memory bandwidth), with both peaks measured on this system by
  probe layers run on the backend itself (``nnperf.campaign.measure_roofline``); the network bound is the sum over
  its layers. It is a lower bound by construction, not a fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nnperf.errors import NnperfError
from nnperf.ir import Layer, Network
from nnperf.ir.metrics import LayerMetrics, layer_metrics, network_metrics
from nnperf.prediction._base import CalibrationSet, NetworkInput, NetworkPredictor, register_predictor
from nnperf.registry import Availability

if TYPE_CHECKING:
    from typing import Self

BYTES_PER_ELEMENT = 4
"""float32: every backend here runs the networks in single precision."""

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

    def summary(self) -> str:
        self.check_fitted()
        return f"{self.seconds_per_mac_ * 1e12:.4g} ps per MAC"

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

    ``fit`` takes the peaks the calibration measured (``nnperf.campaign.measure_roofline``); nothing else is
    fitted: it is a bound.
    """

    name = "roofline"
    label = "roofline baseline"
    description = "baseline: sum of max(#OPs / peak, bytes / bandwidth) from measured peaks"
    display_order = 40
    calibration_key = "roofline"

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

    def summary(self) -> str:
        self.check_fitted()
        return f"{self.ops_per_s_ / 1e9:.1f} GOP/s, {self.bytes_per_s_ / 1e9:.1f} GB/s"

    def calibration_line(self, calibration: Mapping[str, Any]) -> str:
        return f"roofline peaks: {self.summary()}"

    def fitted_state(self) -> dict[str, Any]:
        return {"ops_per_s": self.ops_per_s_, "bytes_per_s": self.bytes_per_s_}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        ops_per_s, bytes_per_s = float(state["ops_per_s"]), float(state["bytes_per_s"])
        if not (ops_per_s > 0 and bytes_per_s > 0):
            raise NnperfError(f"roofline peaks must be positive, got {ops_per_s} op/s and {bytes_per_s} B/s")
        self.ops_per_s_, self.bytes_per_s_ = ops_per_s, bytes_per_s

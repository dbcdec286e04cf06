"""A prediction against a measurement of the same network on the same system."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nnperf.prediction._model import NetworkPrediction
from nnperf.prediction.evaluation import relative_error


@dataclass(frozen=True)
class Verification:
    """A prediction against a measurement of the same network on the same system.

    ``measured_latency_s`` is the whole-network median, ``layer_measured_s``
    each layer's isolated median (seconds); ``run_id`` names the stored run.
    """

    prediction: NetworkPrediction
    measured_latency_s: float
    measured_layer_sum_s: float
    layer_measured_s: Mapping[str, float]
    run_id: int
    store_path: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def error(self) -> float:
        """(predicted - measured) / measured of the network total."""
        return relative_error(self.prediction.latency_s, self.measured_latency_s)

    @property
    def previous_error(self) -> float | None:
        """The error of PreVIous' c x the sum (Eq. 6), when the model has it."""
        previous = self.prediction.previous_latency_s
        return None if previous is None else relative_error(previous, self.measured_latency_s)

    @property
    def layer_errors(self) -> dict[str, float]:
        """Every measured layer's relative error."""
        return {p.layer: relative_error(p.latency_s, self.layer_measured_s[p.layer])
                for p in self.prediction.layers if p.layer in self.layer_measured_s}

    def to_dict(self) -> dict[str, Any]:
        """The prediction's document with a ``verify`` part (what ``nnperf predict --verify --json`` prints)."""
        return {**self.prediction.to_dict(), "verify": {
            "measured_latency_s": self.measured_latency_s, "measured_layer_sum_s": self.measured_layer_sum_s,
            "error": self.error, "previous_error": self.previous_error, "run_id": self.run_id,
            "layer_errors": self.layer_errors}}

"""A prediction against a measurement of the same network on the same system."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nnperf.measure import PairedRatio, SpeedReading
from nnperf.prediction._model import NetworkPrediction
from nnperf.prediction.evaluation import error_to_read, reading_advice, relative_error


@dataclass(frozen=True)
class Verification:
    """A prediction against a measurement of the same network on the same system.

    ``measured_latency_s`` is the whole-network median over the rounds, ``layer_measured_s`` each layer's
    isolated median (seconds); ``run_id`` names the stored run. ``round_medians_s`` are the network's times in
    separate rounds (one timed block per round under the interleaved and duet protocols, the medians of
    separate measurements under the sequential one): their spread is the noise floor of the verdict (on a
    shared 2-core VM the same network measured twice differed by up to 19%), and an error whose prediction lies
    inside it cannot be told from noise.

    ``protocol`` says how the network was timed beside the machine-speed reference; ``reference_ratio`` is the
    network over the reference, and ``speed`` the reference's time at calibration and during the measurement.
    With both, ``adjusted_latency_s`` is the network's time at the calibration's speed (the ratio times the
    reference's calibration time): the measurement a prediction made at that speed should be judged against.
    """

    prediction: NetworkPrediction
    measured_latency_s: float
    measured_layer_sum_s: float
    layer_measured_s: Mapping[str, float]
    run_id: int
    store_path: str = ""
    warnings: tuple[str, ...] = ()
    round_medians_s: tuple[float, ...] = ()
    protocol: str = "sequential"
    reference_ratio: PairedRatio | None = None
    speed: SpeedReading | None = None

    @property
    def adjusted_latency_s(self) -> float | None:
        """The network's measured time scaled to the calibration's machine speed, when the calibration read the
        reference (seconds)."""
        if self.reference_ratio is None or self.speed is None:
            return None
        return self.reference_ratio.median * self.speed.calibration_s

    @property
    def adjusted_error(self) -> float | None:
        """(predicted - speed-adjusted measured) / speed-adjusted measured."""
        adjusted = self.adjusted_latency_s
        return None if adjusted is None else relative_error(self.prediction.latency_s, adjusted)

    @property
    def speed_drift(self) -> float | None:
        """How much slower (> 0) or faster (< 0) the network ran than it would have at calibration: the measured
        time over the speed-adjusted one, less 1 (None without a speed-adjusted time); the gap between the raw
        and the speed-adjusted error."""
        adjusted = self.adjusted_latency_s
        return None if not adjusted else self.measured_latency_s / adjusted - 1

    @property
    def error_to_read(self) -> str | None:
        """'raw' or 'speed-adjusted' (:func:`~nnperf.prediction.evaluation.error_to_read`), None without a
        speed-adjusted error."""
        drift = self.speed_drift
        return None if drift is None else error_to_read([drift])

    @property
    def reading_advice(self) -> str | None:
        """The line that says which error to read, and why."""
        drift = self.speed_drift
        return None if drift is None else reading_advice([drift])

    @property
    def predicted_now_s(self) -> float | None:
        """The prediction scaled to the machine's speed during the measurement (seconds)."""
        return None if self.speed is None else self.speed.at_current_speed(self.prediction.latency_s)

    @property
    def spread(self) -> tuple[float, float] | None:
        """The least and greatest round median (seconds), or None with fewer than two rounds."""
        return (min(self.round_medians_s), max(self.round_medians_s)) if len(self.round_medians_s) > 1 else None

    @property
    def noise(self) -> float | None:
        """The noise floor: (greatest - least round median) / the measured latency."""
        spread = self.spread
        return None if spread is None else (spread[1] - spread[0]) / self.measured_latency_s

    @property
    def within_noise(self) -> bool:
        """Whether the prediction lies inside the spread of the round medians."""
        spread = self.spread
        return spread is not None and spread[0] <= self.prediction.latency_s <= spread[1]

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
            "round_medians_s": list(self.round_medians_s), "noise": self.noise, "within_noise": self.within_noise,
            "layer_errors": self.layer_errors, "protocol": self.protocol,
            "reference_ratio": None if self.reference_ratio is None else self.reference_ratio.to_dict(),
            "speed": None if self.speed is None else self.speed.to_dict(),
            "adjusted_latency_s": self.adjusted_latency_s, "adjusted_error": self.adjusted_error,
            "speed_drift": self.speed_drift, "error_to_read": self.error_to_read,
            "error_to_read_reason": self.reading_advice, "predicted_now_s": self.predicted_now_s}}

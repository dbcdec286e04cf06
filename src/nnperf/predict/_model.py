"""A system's performance model (PreVIous): Ridge models per layer type plus the network coefficient c.

Stored as a versioned JSON document ("nnperf-model", version 1) in the
measurement store, next to the measurements it was fitted on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnperf.errors import FormatVersionError, NnperfError
from nnperf.ir import Network
from nnperf.predict._features import FEATURES, features, model_key
from nnperf.predict._ridge import RidgeModel

MODEL_FORMAT = "nnperf-model"
MODEL_VERSION = 1
MODEL_KIND = "previous"


class UncoveredLayersError(NnperfError):
    """Layers whose type has no fitted model: listed by type, never counted as zero."""

    def __init__(self, network: str, missing: Mapping[str, list[str]], system: str) -> None:
        self.missing = {k: list(v) for k, v in missing.items()}
        parts = [f"{key} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
                 for key, names in sorted(self.missing.items())]
        super().__init__(f"{network}: no calibrated model on {system} for layer type(s) {'; '.join(parts)}; "
                         "the calibration networks do not cover them")


@dataclass(frozen=True)
class LayerPrediction:
    """One layer's predicted latency (seconds) and energy (joules, None without an energy model)."""

    layer: str
    op: str
    key: str
    latency_s: float
    energy_j: float | None = None


@dataclass(frozen=True)
class NetworkPrediction:
    """Per-layer predictions and the network total: ``latency_s`` = c x the sum of layer predictions (Eq. 6)."""

    network: str
    system: str
    layers: tuple[LayerPrediction, ...]
    coefficient_c: float
    energy_coefficient_c: float | None = None

    @property
    def layer_sum_s(self) -> float:
        return float(sum(p.latency_s for p in self.layers))

    @property
    def latency_s(self) -> float:
        return self.coefficient_c * self.layer_sum_s

    @property
    def energy_j(self) -> float | None:
        if self.energy_coefficient_c is None or any(p.energy_j is None for p in self.layers):
            return None
        return self.energy_coefficient_c * float(sum(p.energy_j or 0.0 for p in self.layers))

    def hotspots(self, count: int = 5) -> list[tuple[LayerPrediction, float]]:
        """The ``count`` layers with the largest predicted share of the latency, with their share (Fig. 6)."""
        total = self.layer_sum_s
        ranked = sorted(self.layers, key=lambda p: p.latency_s, reverse=True)[:count]
        return [(p, p.latency_s / total if total > 0 else 0.0) for p in ranked]


@dataclass(frozen=True)
class SystemModel:
    """Everything PreVIous predicts with, for one system.

    ``latency`` and ``energy`` map a layer-type key (see ``model_key``) to its
    Ridge model; ``coefficient_c`` relates the sum of per-layer predictions to
    whole-network measurements (Eq. 6), fitted on the calibration networks.
    """

    system_key: str
    system_label: str
    latency: Mapping[str, RidgeModel]
    coefficient_c: float
    energy: Mapping[str, RidgeModel] = field(default_factory=dict)
    energy_coefficient_c: float | None = None
    calibration: Mapping[str, Any] = field(default_factory=dict)  # networks, layer count, wall time, ...

    def missing(self, network: Network) -> dict[str, list[str]]:
        """Layer types of ``network`` with no latency model, with the layers of each."""
        missing: dict[str, list[str]] = {}
        for layer in network.layers:
            key = model_key(layer)
            if key not in self.latency:
                missing.setdefault(key, []).append(layer.name)
        return missing

    def predict(self, network: Network) -> NetworkPrediction:
        """Per-layer and network predictions; raises UncoveredLayersError naming any uncovered layer type."""
        missing = self.missing(network)
        if missing:
            raise UncoveredLayersError(network.name, missing, self.system_label)
        rows = np.array([features(layer) for layer in network.layers]) if network.layers else np.zeros((0, 3))
        keys = [model_key(layer) for layer in network.layers]
        latency = np.zeros(len(keys))
        energy: np.ndarray | None = np.zeros(len(keys)) if self.energy else None
        for key in set(keys):
            idx = [i for i, k in enumerate(keys) if k == key]
            latency[idx] = self.latency[key].predict(rows[idx])
            if energy is not None:
                energy[idx] = self.energy[key].predict(rows[idx]) if key in self.energy else np.nan
        layers = tuple(
            LayerPrediction(layer.name, layer.op.value, key, float(latency[i]),
                            None if energy is None or np.isnan(energy[i]) else float(energy[i]))
            for i, (layer, key) in enumerate(zip(network.layers, keys))
        )
        return NetworkPrediction(network.name, self.system_label, layers, self.coefficient_c,
                                 self.energy_coefficient_c)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MODEL_FORMAT, "version": MODEL_VERSION, "features": list(FEATURES),
            "system_key": self.system_key, "system_label": self.system_label,
            "coefficient_c": self.coefficient_c, "energy_coefficient_c": self.energy_coefficient_c,
            "latency": {k: m.to_dict() for k, m in sorted(self.latency.items())},
            "energy": {k: m.to_dict() for k, m in sorted(self.energy.items())},
            "calibration": dict(self.calibration),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SystemModel:
        if d.get("format") != MODEL_FORMAT:
            raise NnperfError(f"not an nnperf model document (format {d.get('format')!r})")
        if d.get("version") != MODEL_VERSION:
            raise FormatVersionError(f"model format version {d.get('version')!r}; this nnperf reads version "
                                     f"{MODEL_VERSION}: recalibrate with `nnperf calibrate`")
        if tuple(d.get("features", ())) != FEATURES:
            raise NnperfError(f"the stored model uses predictors {d.get('features')}, this nnperf uses {FEATURES}: "
                              "recalibrate with `nnperf calibrate`")
        return cls(
            str(d["system_key"]), str(d["system_label"]),
            {k: RidgeModel.from_dict(v) for k, v in d["latency"].items()}, float(d["coefficient_c"]),
            {k: RidgeModel.from_dict(v) for k, v in d.get("energy", {}).items()},
            None if d.get("energy_coefficient_c") is None else float(d["energy_coefficient_c"]),
            dict(d.get("calibration", {})),
        )


def fit_coefficient(layer_sums: list[float], measured: list[float]) -> float:
    """c of Eq. 6: the least-squares slope through the origin of measured totals on summed predictions."""
    s, y = np.asarray(layer_sums, dtype=float), np.asarray(measured, dtype=float)
    denominator = float(s @ s)
    if denominator <= 0:
        raise NnperfError("cannot fit the network coefficient c: the summed layer predictions are all zero")
    return float(s @ y) / denominator

"""A system's performance model: PreVIous' Ridge models per layer type and network coefficient c, nnperf's
fusion-aware composition, and the two baselines fitted on the same calibration.

Stored as a versioned JSON document ("nnperf-model", version 2) in the
measurement store, next to the measurements it was fitted on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnperf.errors import FormatVersionError, NnperfError
from nnperf.ir import Network
from nnperf.predict._composition import Composition
from nnperf.predict._features import FEATURES, features, model_key
from nnperf.predict._ridge import RidgeModel
from nnperf.predict.baselines import MacsModel, RooflineModel

MODEL_FORMAT = "nnperf-model"
MODEL_VERSION = 2
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
    """Per-layer predictions and the network total.

    ``previous_latency_s`` is PreVIous' c x the sum of layer predictions
    (Eq. 6); ``composed_latency_s`` is nnperf's fusion-aware composition when
    the model has one; ``latency_s`` is the composed value when present.
    """

    network: str
    system: str
    layers: tuple[LayerPrediction, ...]
    coefficient_c: float
    energy_coefficient_c: float | None = None
    composed_latency_s: float | None = None
    fused_layers: frozenset[str] = frozenset()
    """Layers the backend is expected to fuse into the compute layer before them."""

    @property
    def layer_sum_s(self) -> float:
        return float(sum(p.latency_s for p in self.layers))

    @property
    def previous_latency_s(self) -> float:
        return self.coefficient_c * self.layer_sum_s

    @property
    def latency_s(self) -> float:
        return self.composed_latency_s if self.composed_latency_s is not None else self.previous_latency_s

    @property
    def method(self) -> str:
        """Which composition ``latency_s`` comes from: 'composed' or 'previous'."""
        return "composed" if self.composed_latency_s is not None else "previous"

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
    """Everything nnperf predicts with, for one system.

    ``latency`` and ``energy`` map a layer-type key (see ``model_key``) to its
    Ridge model; ``coefficient_c`` relates the sum of per-layer predictions to
    whole-network measurements (Eq. 6), fitted on the calibration networks;
    ``composition`` replaces c with the fusion-aware composition; ``macs``
    and ``roofline`` are the baselines, for comparison only.
    """

    system_key: str
    system_label: str
    latency: Mapping[str, RidgeModel]
    coefficient_c: float
    energy: Mapping[str, RidgeModel] = field(default_factory=dict)
    energy_coefficient_c: float | None = None
    calibration: Mapping[str, Any] = field(default_factory=dict)  # networks, layer count, wall time, ...
    composition: Composition | None = None
    macs: MacsModel | None = None
    roofline: RooflineModel | None = None

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
        composed_s, fused = None, frozenset[str]()
        if self.composition is not None:
            per_layer = {p.layer: p.latency_s for p in layers}
            composed_s = self.composition.latency_s(network, per_layer)
            fused = frozenset(self.composition.fusion.fused_layers(network))
        return NetworkPrediction(network.name, self.system_label, layers, self.coefficient_c,
                                 self.energy_coefficient_c, composed_s, fused)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MODEL_FORMAT, "version": MODEL_VERSION, "features": list(FEATURES),
            "system_key": self.system_key, "system_label": self.system_label,
            "coefficient_c": self.coefficient_c, "energy_coefficient_c": self.energy_coefficient_c,
            "latency": {k: m.to_dict() for k, m in sorted(self.latency.items())},
            "energy": {k: m.to_dict() for k, m in sorted(self.energy.items())},
            "calibration": dict(self.calibration),
            "composition": None if self.composition is None else self.composition.to_dict(),
            "macs": None if self.macs is None else self.macs.to_dict(),
            "roofline": None if self.roofline is None else self.roofline.to_dict(),
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
            None if d.get("composition") is None else Composition.from_dict(d["composition"]),
            None if d.get("macs") is None else MacsModel.from_dict(d["macs"]),
            None if d.get("roofline") is None else RooflineModel.from_dict(d["roofline"]),
        )


def fit_coefficient(layer_sums: list[float], measured: list[float]) -> float:
    """c of Eq. 6: the least-squares slope through the origin of measured totals on summed predictions."""
    s, y = np.asarray(layer_sums, dtype=float), np.asarray(measured, dtype=float)
    denominator = float(s @ s)
    if denominator <= 0:
        raise NnperfError("cannot fit the network coefficient c: the summed layer predictions are all zero")
    return float(s @ y) / denominator

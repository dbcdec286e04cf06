"""A system's performance model: PreVIous' Ridge models per layer type and every network-level predictor
(PreVIous' c, nnperf's fusion-aware composition, the two baselines, any other registered one) fitted on the
same calibration.

Stored as a versioned JSON document ("nnperf-model", version 3) in the
measurement store, next to the measurements it was fitted on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from nnperf.errors import FormatVersionError, NnperfError
from nnperf.ir import Network
from nnperf.ir.metrics import NetworkMetrics, network_metrics
from nnperf.prediction._base import (
    PREDICTOR_FORMAT,
    PREDICTOR_VERSION,
    FittedOn,
    NetworkInput,
    NetworkPredictor,
    display_key,
    predictor_class,
)
from nnperf.prediction._composition import Composition
from nnperf.prediction._features import FEATURES, GENERIC_KEY, SPLIT_KEYS, metric_features, model_key
from nnperf.prediction._previous import PreviousModel
from nnperf.prediction._ridge import RidgeModel
from nnperf.prediction._roles import name_with, primary_name, provides_fusion, scales_layer_sum
from nnperf.prediction.baselines import MacsModel, RooflineModel
from nnperf.prediction.kernel import KernelModel  # noqa: F401  (registers the kernel-aware predictor)

MODEL_FORMAT = "nnperf-model"
MODEL_VERSION = 3
"""Version 3 holds the network predictors by registry name; version 2 documents are read and converted."""
MODEL_KIND = "previous"
"""The kind the measurement store files a system's model under (PreVIous' models and every network predictor)."""

PREDICTION_FORMAT = ("nnperf-prediction", 2)

P = TypeVar("P", bound=NetworkPredictor)


class UncoveredLayersError(NnperfError):
    """Layers whose type has no fitted model: listed by type, never counted as zero."""

    def __init__(self, network: str, missing: Mapping[str, list[str]], system: str) -> None:
        self.missing = {k: list(v) for k, v in missing.items()}
        parts = [f"{key} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
                 for key, names in sorted(self.missing.items())]
        why = ("the calibration predates generic layers (ONNX operators nnperf has no dedicated model of): "
               "recalibrate with `nnperf calibrate`" if GENERIC_KEY in self.missing
               else "the calibration networks do not cover them")
        super().__init__(f"{network}: no calibrated model on {system} for layer type(s) {'; '.join(parts)}; {why}")


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
    """Per-layer predictions and the network total of every network-level predictor.

    ``network_latency_s`` maps each fitted network predictor's name (see
    :data:`~nnperf.prediction.PREDICTORS`: PreVIous' c x the sum of layer
    predictions, Eq. 6; nnperf's fusion-aware composition; the baselines; ...)
    to its prediction in seconds; ``latency_s`` is that of the predictor
    whose class has the lowest ``primary_rank`` (see :attr:`method`). The
    roles are asked of the predictor classes registered under these names.
    """

    network: str
    system: str
    layers: tuple[LayerPrediction, ...]
    network_latency_s: Mapping[str, float]
    coefficient_c: float | None = None
    energy_coefficient_c: float | None = None
    fused_layers: frozenset[str] = frozenset()
    """Layers the backend is expected to fuse into the compute layer before them."""

    @property
    def layer_sum_s(self) -> float:
        return float(sum(p.latency_s for p in self.layers))

    @property
    def method(self) -> str:
        """The predictor ``latency_s`` comes from: of those present that may give it, the one of the lowest
        ``primary_rank`` (nnperf's composition, else PreVIous' c); else the first fitted."""
        primary = primary_name(self.network_latency_s)
        if primary is not None:
            return primary
        if not self.network_latency_s:
            raise NnperfError(f"{self.network}: the system model holds no network-level predictor")
        return next(iter(self.network_latency_s))

    @property
    def latency_s(self) -> float:
        return self.network_latency_s[self.method]

    @property
    def layer_sum_method(self) -> str | None:
        """The predictor of PreVIous' c x the sum of the layer predictions (Eq. 6), when present."""
        return name_with(self.network_latency_s, scales_layer_sum)

    @property
    def fusion_method(self) -> str | None:
        """The predictor that composes the layers the way the backend fuses them, when present."""
        return name_with(self.network_latency_s, provides_fusion)

    @property
    def previous_latency_s(self) -> float | None:
        """PreVIous' c x the sum of the layer predictions (seconds), when the model has it."""
        name = self.layer_sum_method
        return None if name is None else self.network_latency_s[name]

    @property
    def composed_latency_s(self) -> float | None:
        """nnperf's fusion-aware composition (seconds), when the model has it."""
        name = self.fusion_method
        return None if name is None else self.network_latency_s[name]

    @property
    def energy_j(self) -> float | None:
        if self.energy_coefficient_c is None or any(p.energy_j is None for p in self.layers):
            return None
        return self.energy_coefficient_c * float(sum(p.energy_j or 0.0 for p in self.layers))

    @property
    def generic_layers(self) -> tuple[str, ...]:
        """The generic layers (ONNX operators predicted by the memory-bound model), in network order."""
        return tuple(p.layer for p in self.layers if p.key == GENERIC_KEY)

    @property
    def generic_share(self) -> float:
        """The share of the summed layer predictions that generic layers carry (0 without any)."""
        total = self.layer_sum_s
        generic = sum(p.latency_s for p in self.layers if p.key == GENERIC_KEY)
        return generic / total if total > 0 else 0.0

    def hotspots(self, count: int = 5) -> list[tuple[LayerPrediction, float]]:
        """The ``count`` layers with the largest predicted share of the latency, with their share (Fig. 6)."""
        total = self.layer_sum_s
        ranked = sorted(self.layers, key=lambda p: p.latency_s, reverse=True)[:count]
        return [(p, p.latency_s / total if total > 0 else 0.0) for p in ranked]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document ("nnperf-prediction", version 2) that ``nnperf predict --json`` prints."""
        return {
            "format": PREDICTION_FORMAT[0], "version": PREDICTION_FORMAT[1], "network": self.network,
            "system": self.system, "coefficient_c": self.coefficient_c,
            "layer_sum_s": self.layer_sum_s, "latency_s": self.latency_s, "method": self.method,
            "previous_latency_s": self.previous_latency_s, "composed_latency_s": self.composed_latency_s,
            "network_latency_s": dict(self.network_latency_s), "energy_j": self.energy_j,
            "layers": [{"layer": p.layer, "op": p.op, "model": p.key, "latency_s": p.latency_s, "energy_j": p.energy_j,
                        "fused": p.layer in self.fused_layers} for p in self.layers],
            "hotspots": [{"layer": p.layer, "share": share} for p, share in self.hotspots()],
            "generic": {"layers": list(self.generic_layers), "share": self.generic_share},
        }


@dataclass(frozen=True)
class SystemModel:
    """Everything nnperf predicts with, for one system.

    ``latency`` and ``energy`` map a layer-type key (see ``model_key``) to its
    Ridge model; ``predictors`` holds every network-level predictor fitted on
    the calibration, by registry name (c of Eq. 6, the fusion-aware
    composition, the baselines, and any other registered
    :class:`~nnperf.prediction.NetworkPredictor`); the properties below find
    them by the roles and types their classes declare, never by name.
    ``calibration`` records the networks, layer count, wall time and the
    predictors that could not be fitted, with the reason.
    """

    system_key: str
    system_label: str
    latency: Mapping[str, RidgeModel]
    predictors: Mapping[str, NetworkPredictor] = field(default_factory=dict)
    energy: Mapping[str, RidgeModel] = field(default_factory=dict)
    energy_coefficient_c: float | None = None
    calibration: Mapping[str, Any] = field(default_factory=dict)  # networks, layer count, wall time, ...

    @property
    def ordered_predictors(self) -> list[NetworkPredictor]:
        """The fitted network predictors in display order."""
        return sorted(self.predictors.values(), key=lambda predictor: display_key(type(predictor)))

    def first_of(self, klass: type[P]) -> P | None:
        """The first fitted network predictor that is a ``klass``, or None."""
        return next((p for p in self.predictors.values() if isinstance(p, klass)), None)

    def fitted_on(self, predictor: NetworkPredictor) -> FittedOn:
        """What a network predictor of this model was fitted on: what its own state says, else this model's
        calibration networks (every network predictor of the model was fitted on them)."""
        own = predictor.fitted_on()
        if own is not None:
            return own
        networks = tuple(str(n) for n in self.calibration.get("networks", ()))
        return FittedOn(len(networks), "calibration networks", networks)

    @property
    def layer_sum_predictor(self) -> NetworkPredictor | None:
        """The predictor of PreVIous' c x the summed layer predictions (Eq. 6), when fitted."""
        return next((p for p in self.predictors.values() if p.scales_layer_sum), None)

    @property
    def fusion_predictor(self) -> NetworkPredictor | None:
        """The predictor that knows which layers the backend fuses, when fitted."""
        return next((p for p in self.predictors.values() if p.provides_fusion), None)

    @property
    def coefficient_c(self) -> float | None:
        """PreVIous' c (Eq. 6), when its predictor is fitted."""
        holder = self.layer_sum_predictor
        return None if holder is None else holder.layer_sum_coefficient()

    @property
    def reference_s(self) -> tuple[str, float] | None:
        """The machine-speed reference workload read during calibration and its median time (seconds), or None
        for a calibration stored before the reference was read: the speed its predictions hold at."""
        reference = self.calibration.get("reference")
        if not isinstance(reference, Mapping) or not reference.get("median_s"):
            return None
        return str(reference["workload"]), float(reference["median_s"])

    @property
    def composition(self) -> Composition | None:
        """nnperf's fusion-aware composition, when fitted."""
        found = self.fusion_predictor
        return found if isinstance(found, Composition) else None

    @property
    def macs(self) -> MacsModel | None:
        """The MACs-proportional baseline, when fitted."""
        return self.first_of(MacsModel)

    @property
    def roofline(self) -> RooflineModel | None:
        """The roofline bound, when the calibration measured its peaks."""
        return self.first_of(RooflineModel)

    def missing(self, network: Network) -> dict[str, list[str]]:
        """Layer types of ``network`` with no latency model, with the layers of each."""
        missing: dict[str, list[str]] = {}
        for layer in network.layers:
            key = model_key(layer)
            if key not in self.latency:
                missing.setdefault(key, []).append(layer.name)
        return missing

    def predict_layers(self, network: Network, metrics: NetworkMetrics | None = None) -> tuple[LayerPrediction, ...]:
        """Every layer's predicted latency (and energy); raises UncoveredLayersError naming any uncovered type.

        ``metrics`` are the network's metrics when the caller has them already.
        """
        missing = self.missing(network)
        if missing:
            raise UncoveredLayersError(network.name, missing, self.system_label)
        layer_metrics = (metrics or network_metrics(network)).layers
        rows = np.array([metric_features(m) for m in layer_metrics]) if network.layers else np.zeros((0, 3))
        keys = [model_key(layer) for layer in network.layers]
        latency = np.zeros(len(keys))
        energy: np.ndarray | None = np.zeros(len(keys)) if self.energy else None
        for key in set(keys):
            idx = [i for i, k in enumerate(keys) if k == key]
            latency[idx] = self.latency[key].predict(rows[idx])
            if energy is not None:
                energy[idx] = self.energy[key].predict(rows[idx]) if key in self.energy else np.nan
        return tuple(
            LayerPrediction(layer.name, layer.op.value, key, float(latency[i]),
                            None if energy is None or np.isnan(energy[i]) else float(energy[i]))
            for i, (layer, key) in enumerate(zip(network.layers, keys))
        )

    def predict(self, network: Network) -> NetworkPrediction:
        """Per-layer predictions and every network predictor's total; raises UncoveredLayersError naming any
        uncovered layer type."""
        metrics = network_metrics(network)
        layers = self.predict_layers(network, metrics)
        x = NetworkInput(network, {p.layer: p.latency_s for p in layers}, metrics)
        totals = {name: float(predictor.predict(x)) for name, predictor in self.predictors.items()}
        fusion = self.fusion_predictor
        fused = fusion.fused_layers(network) if fusion is not None else frozenset[str]()
        return NetworkPrediction(network.name, self.system_label, layers, totals, self.coefficient_c,
                                 self.energy_coefficient_c, fused)

    def predict_many(self, networks: Sequence[Network], method: str | None = None) -> np.ndarray:
        """Every network's latency in seconds by ``method`` (a network predictor's registry name; default the
        primary one, as :attr:`NetworkPrediction.latency_s`), working once per distinct layer: the oracle of an
        architecture search (see ``nnperf.prediction._many``). Raises :class:`UncoveredLayersError` for the first
        network with a layer type the model lacks, :class:`NnperfError` for a method the model does not hold."""
        from nnperf.prediction._many import batch_predict, distinct_layers

        chosen = method or primary_name(self.predictors) or next(iter(self.predictors), None)
        if chosen is None or chosen not in self.predictors:
            held = ", ".join(self.predictors) or "none"
            raise NnperfError(f"the system model holds no network predictor {method!r} (it holds: {held})")
        examples, signatures = distinct_layers(networks)
        if not {model_key(layer) for layer in examples} <= set(self.latency):  # a layer type follows from its signature
            for network in networks:
                missing = self.missing(network)
                if missing:
                    raise UncoveredLayersError(network.name, missing, self.system_label)
        return batch_predict(self.latency, self.predictors[chosen], networks, examples, signatures)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": MODEL_FORMAT, "version": MODEL_VERSION, "features": list(FEATURES),
            "system_key": self.system_key, "system_label": self.system_label,
            "latency": {k: m.to_dict() for k, m in sorted(self.latency.items())},
            "energy": {k: m.to_dict() for k, m in sorted(self.energy.items())},
            "energy_coefficient_c": self.energy_coefficient_c,
            "predictors": {name: p.to_dict() for name, p in self.predictors.items()},
            "calibration": dict(self.calibration),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SystemModel:
        if d.get("format") != MODEL_FORMAT:
            raise NnperfError(f"not an nnperf model document (format {d.get('format')!r})")
        if d.get("version") == 2:
            try:
                d = _from_version_2(d)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise NnperfError(f"a stored version-2 model is malformed ({exc!r}): recalibrate with "
                                  "`nnperf calibrate`") from exc
        if d.get("version") != MODEL_VERSION:
            raise FormatVersionError(f"model format version {d.get('version')!r}; this nnperf reads version "
                                     f"{MODEL_VERSION}: recalibrate with `nnperf calibrate`")
        if tuple(d.get("features", ())) != FEATURES:
            raise NnperfError(f"the stored model uses predictors {d.get('features')}, this nnperf uses {FEATURES}: "
                              "recalibrate with `nnperf calibrate`")
        predictors: dict[str, NetworkPredictor] = {}
        for name, document in d.get("predictors", {}).items():
            predictors[name] = NetworkPredictor.from_dict(document)
        return cls(
            str(d["system_key"]), str(d["system_label"]),
            with_split_models({k: RidgeModel.from_dict(v) for k, v in d["latency"].items()}), predictors,
            with_split_models({k: RidgeModel.from_dict(v) for k, v in d.get("energy", {}).items()}),
            None if d.get("energy_coefficient_c") is None else float(d["energy_coefficient_c"]),
            dict(d.get("calibration", {})),
        )


def with_split_models(models: dict[str, RidgeModel]) -> dict[str, RidgeModel]:
    """Per-type models where each missing model split off an op type's (:data:`SPLIT_KEYS`) is that op type's: a
    model stored before the split predicts those layers as it did then, and a calibration without such a layer
    still predicts one."""
    for split, whole in SPLIT_KEYS.items():
        if whole in models and split not in models:
            models[split] = models[whole]
    return models


VERSION_2_KEYS: tuple[tuple[type[NetworkPredictor], str], ...] = (
    (Composition, "composition"), (MacsModel, "macs"), (RooflineModel, "roofline"))
"""The network predictors a version-2 model document held under fixed keys (beside PreVIous' c), and the keys."""


def _from_version_2(d: Mapping[str, Any]) -> dict[str, Any]:
    """A version-2 model document (c, composition and baselines as fixed keys) in the version-3 layout."""
    def predictor(name: str, state: Mapping[str, Any]) -> dict[str, Any]:
        klass = predictor_class(name)
        return {"format": PREDICTOR_FORMAT, "version": PREDICTOR_VERSION, "name": name,
                "state_version": klass.version, "params": {}, "fitted": dict(state)}

    alpha = float(d.get("calibration", {}).get("alpha", 1.0))
    predictors = {PreviousModel.name: predictor(PreviousModel.name, {"coefficient_c": d["coefficient_c"]})}
    for klass, key in VERSION_2_KEYS:
        if d.get(key) is not None:
            predictors[klass.name] = predictor(klass.name, d[key])
    return {**d, "version": MODEL_VERSION, "predictors": predictors,
            "latency": {k: _ridge_v2(v, alpha) for k, v in d["latency"].items()},
            "energy": {k: _ridge_v2(v, alpha) for k, v in d.get("energy", {}).items()}}


def _ridge_v2(v: Mapping[str, Any], alpha: float) -> dict[str, Any]:
    """A version-2 Ridge document (learned values beside key and target) as a predictor document."""
    state = {k: v[k] for k in ("mean", "scale", "coef", "intercept", "n_samples", "r2", "y_min", "y_max")}
    return {"format": PREDICTOR_FORMAT, "version": PREDICTOR_VERSION, "name": RidgeModel.name,
            "state_version": RidgeModel.version,
            "params": {"key": v["key"], "target": v["target"], "alpha": alpha}, "fitted": state}

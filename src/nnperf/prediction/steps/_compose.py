"""Composing per-dimension step models into a prediction for any layer configuration (the paper's future work).

Osterwind et al. model one dimension at a time and leave "extend this model
to more dimensions, to be able to predict an arbitrary neural network layer
configuration" to future work (3.5). nnperf composes them as a product of
effective sizes:

    T(config) = b + a * prod_p E_p(w_p(config))

over the layer kind's parameters p. ``w_p`` is the work variable of p: the
value itself for channels and filters, the output pixel count for size
(out x out, stride included) and k^2 for the kernel. ``E_p`` is the effective
size along p: from p's fitted step model, ``(T_p(w) - b_ref) / m_ref`` (the
step model's own shape, normalised by its first line), so a staircase gives
ceil(w/d)*d and a fluctuating model its upper/lower pattern; for a parameter
without a fitted model, E_p(w) = w (latency proportional to the work, as the
paper found along the input size). a and b are fitted by relative least
squares on every stored sweep point of the kind. A configuration is
extrapolated when one of its parameters lies outside the values measured, or
when its work (the product of the work variables: its MACs) lies outside the
work of the measured points: a layer with 500 channels and 500 filters has
each inside the swept ranges and twice the work of any layer measured. How far
this reaches is measured, not assumed: bench/step_models.py reports its error
on random configurations, inside and outside the covered ranges.

:class:`ComposedModel` is a :class:`~nnperf.prediction.Predictor` (registered as
'step-composed'): its parameters are the layer kind and the per-parameter step
models, ``fit`` learns a, b and the covered ranges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.measure.sweep import PARAMETERS, LayerConfig
from nnperf.prediction._base import FittedOn, Predictor, PredictorCategory, register_predictor
from nnperf.prediction.steps._model import StepModel, StepModelError

if TYPE_CHECKING:
    from typing import Self


def work(config: LayerConfig, parameter: str) -> int:
    """The work variable of ``parameter`` in ``config``: c, F, out^2 (size) or k^2 (kernel), 1 for stride."""
    if parameter == "size":
        return config.output_size ** 2
    if parameter == "kernel":
        return config["kernel"] ** 2
    if parameter == "stride":
        return 1  # the stride acts through the output size
    return config[parameter]


def total_work(config: LayerConfig) -> int:
    """The product of ``config``'s work variables: its MACs (bias excluded)."""
    return math.prod(work(config, parameter) for parameter in PARAMETERS[config.kind])


def effective(model: StepModel, w: np.ndarray) -> np.ndarray:
    """E(w) = (T(w) - b_ref) / m_ref: the step model's shape normalised by its first line."""
    model.check_fitted()
    ref = model.lines_[0]
    if ref.slope_s <= 0:
        raise StepModelError(f"the {model.parameter} model's first line does not rise (slope {ref.slope_s:.3g} s); "
                             "it cannot scale other dimensions")
    return (model.predict(w) - ref.intercept_s) / ref.slope_s


@register_predictor
class ComposedModel(Predictor):
    """The composed prediction for one layer kind: T = b + a * prod_p E_p(w_p) (see the module docstring).

    Parameters
    ----------
    kind : str, default 'conv2d'
        The layer kind: conv2d, depthwise or fc.
    models : mapping of str to StepModel, optional
        The fitted step model of each parameter that has one; the others are
        proportional to their work. None: no parameter has a step model.

    After ``fit``: ``scale_s_`` (a, seconds per unit of the product) and
    ``offset_s_`` (b, seconds); ``ranges_``, the parameter values the fitted
    points covered, per parameter; ``macs_range_``, the work (MACs) of the
    fitted points, for the extrapolation warnings; ``fitted_points_``, how
    many points the fit used.
    """

    name = "step-composed"
    label = "composed step models"
    description = "nnperf: per-parameter step models composed into any layer configuration of one kind"
    category = PredictorCategory.STEP

    def __init__(self, kind: str = "conv2d", models: Mapping[str, StepModel] | None = None) -> None:
        self.kind = kind
        self.models = models

    @property
    def modelled(self) -> list[str]:
        """The parameters with a step model, sorted."""
        return sorted(self.models or {})

    def fit(self, points: Sequence[tuple[LayerConfig, float]]) -> Self:
        """Fits a and b by relative least squares on measured points.

        Parameters
        ----------
        points : sequence of (LayerConfig, float)
            Measured configurations and their latency in seconds; those of
            another kind are left out.

        Returns
        -------
        ComposedModel
            ``self``, fitted. Raises :class:`StepModelError` with fewer than
            two points of the kind, all of the same work, or a model that
            does not fit the kind.
        """
        self._check_models()
        points = [(c, t) for c, t in points if c.kind == self.kind]
        if len(points) < 2:
            raise StepModelError(f"need at least two measured {self.kind} points to compose the step models")
        x = np.array([self.product(c) for c, _ in points])
        y = np.array([t for _, t in points])
        if np.ptp(x) <= 0:
            raise StepModelError(f"the {self.kind} points all have the same work; measure more than one "
                                 "configuration")
        w = 1.0 / y
        design = np.stack([x, np.ones_like(x)], axis=1) * w[:, None]
        (scale, offset), *_ = np.linalg.lstsq(design, y * w, rcond=None)
        self.scale_s_, self.offset_s_ = float(scale), float(offset)
        self.ranges_ = {p: (min(c[p] for c, _ in points), max(c[p] for c, _ in points))
                        for p in PARAMETERS[self.kind]}
        macs = [total_work(c) for c, _ in points]
        self.macs_range_ = (min(macs), max(macs))
        self.fitted_points_ = len(points)
        return self

    def _check_models(self) -> None:
        if self.kind not in PARAMETERS:
            raise StepModelError(f"unknown layer kind {self.kind!r}; use one of {', '.join(PARAMETERS)}")
        for parameter, model in (self.models or {}).items():
            if parameter not in PARAMETERS[self.kind]:
                raise StepModelError(f"a {self.kind} layer has no parameter {parameter!r}")
            if model.parameter != parameter:
                raise StepModelError(f"the model given for {parameter} models {model.parameter}")

    def product(self, config: LayerConfig) -> float:
        """prod_p E_p(w_p(config)): the effective sizes multiplied (needs only the step models, not ``fit``)."""
        models = self.models or {}
        value = 1.0
        for parameter in PARAMETERS[self.kind]:
            w = work(config, parameter)
            model = models.get(parameter)
            value *= float(effective(model, np.array([w]))[0]) if model is not None else float(w)
        return value

    def predict(self, config: LayerConfig) -> float:
        """Predicted latency (seconds) of ``config``."""
        self.check_fitted()
        if config.kind != self.kind:
            raise StepModelError(f"this composed model is for {self.kind} layers, not {config.kind}")
        return self.offset_s_ + self.scale_s_ * self.product(config)

    def extrapolated(self, config: LayerConfig) -> list[str]:
        """What of ``config`` lies outside the data: each parameter outside the values covered, as
        'name=value (covered lo-hi)', and work outside the fitted points' work, as 'MACs'."""
        self.check_fitted()
        out = []
        for parameter, (low, high) in self.ranges_.items():
            value = config[parameter]
            if not low <= value <= high:
                out.append(f"{parameter}={value} (covered {low}-{high})")
        macs, (low_m, high_m) = total_work(config), self.macs_range_
        if not low_m <= macs <= high_m:
            out.append(f"MACs {macs:.3g} (covered {low_m:.3g}-{high_m:.3g})")
        return out

    def summary(self) -> str:
        """The layer kind, its stepped parameters, a (seconds per unit of the product) and b (seconds)."""
        self.check_fitted()
        return (f"{self.kind} ({', '.join(self.modelled) or 'no step model'}): a = {self.scale_s_:.4g} s, "
                f"b = {self.offset_s_:.4g} s")

    def fitted_on(self) -> FittedOn:
        self.check_fitted()
        return FittedOn(self.fitted_points_, "points")

    def params_to_dict(self) -> dict[str, Any]:
        """The step models as nested predictor documents."""
        models = None if self.models is None else {p: m.to_dict() for p, m in self.models.items()}
        return {"kind": self.kind, "models": models}

    @classmethod
    def params_from_dict(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        models = params["models"]
        return {"kind": str(params["kind"]),
                "models": None if models is None else {p: StepModel.from_dict(d) for p, d in models.items()}}

    def fitted_state(self) -> dict[str, Any]:
        return {"scale_s": self.scale_s_, "offset_s": self.offset_s_,
                "ranges": {p: list(r) for p, r in self.ranges_.items()}, "macs_range": list(self.macs_range_),
                "fitted_points": self.fitted_points_}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        self.scale_s_, self.offset_s_ = float(state["scale_s"]), float(state["offset_s"])
        self.ranges_ = {str(p): (int(r[0]), int(r[1])) for p, r in state["ranges"].items()}
        self.macs_range_ = (int(state["macs_range"][0]), int(state["macs_range"][1]))
        self.fitted_points_ = int(state["fitted_points"])


def compose(kind: str, models: Mapping[str, StepModel],
            points: Sequence[tuple[LayerConfig, float]]) -> ComposedModel:
    """``ComposedModel(kind, models).fit(points)``: a and b of the composition fitted on measured
    (configuration, latency in seconds) points."""
    return ComposedModel(kind, dict(models)).fit(points)

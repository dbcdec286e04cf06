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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nnperf.measure.sweep import PARAMETERS, LayerConfig
from nnperf.predict.steps._model import StepModel, StepModelError


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
    ref = model.lines[0]
    if ref.slope_s <= 0:
        raise StepModelError(f"the {model.parameter} model's first line does not rise (slope {ref.slope_s:.3g} s); "
                             "it cannot scale other dimensions")
    return (model.predict(w) - ref.intercept_s) / ref.slope_s


@dataclass(frozen=True)
class ComposedModel:
    """The composed prediction for one layer kind: T = b + a * prod_p E_p(w_p).

    ``models`` maps the parameters with a fitted step model to it (others are
    proportional to their work); ``ranges`` gives the parameter values the
    data covered, per parameter, and ``macs_range`` the work (MACs) of the
    fitted points, for the extrapolation warnings.
    """

    kind: str
    scale_s: float
    offset_s: float
    models: Mapping[str, StepModel]
    ranges: Mapping[str, tuple[int, int]]
    fitted_points: int
    macs_range: tuple[int, int] = (0, 2 ** 63)

    def product(self, config: LayerConfig) -> float:
        value = 1.0
        for parameter in PARAMETERS[self.kind]:
            w = work(config, parameter)
            model = self.models.get(parameter)
            value *= float(effective(model, np.array([w]))[0]) if model is not None else float(w)
        return value

    def predict(self, config: LayerConfig) -> float:
        """Predicted latency (seconds) of ``config``."""
        if config.kind != self.kind:
            raise StepModelError(f"this composed model is for {self.kind} layers, not {config.kind}")
        return self.offset_s + self.scale_s * self.product(config)

    def extrapolated(self, config: LayerConfig) -> list[str]:
        """What of ``config`` lies outside the data: each parameter outside the values covered, as
        'name=value (covered lo-hi)', and work outside the fitted points' work, as 'MACs'."""
        out = []
        for parameter, (low, high) in self.ranges.items():
            value = config[parameter]
            if not low <= value <= high:
                out.append(f"{parameter}={value} (covered {low}-{high})")
        macs, (low_m, high_m) = total_work(config), self.macs_range
        if not low_m <= macs <= high_m:
            out.append(f"MACs {macs:.3g} (covered {low_m:.3g}-{high_m:.3g})")
        return out


def compose(kind: str, models: Mapping[str, StepModel],
            points: Sequence[tuple[LayerConfig, float]]) -> ComposedModel:
    """Fits a and b of the composition on measured (configuration, latency in seconds) points."""
    points = [(c, t) for c, t in points if c.kind == kind]
    if len(points) < 2:
        raise StepModelError(f"need at least two measured {kind} points to compose the step models")
    for parameter, model in models.items():
        if parameter not in PARAMETERS[kind]:
            raise StepModelError(f"a {kind} layer has no parameter {parameter!r}")
        if model.parameter != parameter:
            raise StepModelError(f"the model given for {parameter} models {model.parameter}")
    partial = ComposedModel(kind, 1.0, 0.0, dict(models), {}, len(points))
    x = np.array([partial.product(c) for c, _ in points])
    y = np.array([t for _, t in points])
    if np.ptp(x) <= 0:
        raise StepModelError(f"the {kind} points all have the same work; measure more than one configuration")
    w = 1.0 / y
    design = np.stack([x, np.ones_like(x)], axis=1) * w[:, None]
    (scale, offset), *_ = np.linalg.lstsq(design, y * w, rcond=None)
    ranges = {p: (min(c[p] for c, _ in points), max(c[p] for c, _ in points)) for p in PARAMETERS[kind]}
    macs = [total_work(c) for c, _ in points]
    return ComposedModel(kind, float(scale), float(offset), dict(models), ranges, len(points),
                         (min(macs), max(macs)))

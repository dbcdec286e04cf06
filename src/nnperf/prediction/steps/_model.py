"""The generalised step-function layer model (Osterwind et al., seed ``gpu-latency-steps-osterwind``, 3.3.2).

Along one layer parameter x (input channels, filters, ...) the latency is

    T(x) = T_SU(x) if (x - 1) mod r < r/2 else T_SL(x)           (Eq. 3.1)
    T_SU(x) = floor(x / d) * d * m_u + b_u                          (Eq. 3.2)
    T_SL(x) = ceil(x / d) * d * m_l + b_l                           (Eq. 3.3)

with the *global* step depth d and fluctuation period r (one pair per
hardware, backend and parameter) and the *local* slopes and intercepts m_u,
b_u, m_l, b_l (one set per layer configuration). nnperf names three shapes of
this family:

- ``fluctuating``: Eq. 3.1-3.3 as written (d and r, selector ``half``), or
  with nnperf's ``aligned`` selector: the lower function at the multiples of r
  only, the upper everywhere else (ONNX Runtime on an AMD EPYC runs input
  channels that are a multiple of 4 on a faster path: bench/step_models.py);
- ``staircase``: one step function, T = Q(x) * m + b with Q the ceil form
  (the step comes after each multiple of d, as when x is padded up to a
  multiple of d) or the floor form (Eq. 3.2 alone);
- ``linear``: T = x * m + b, no steps.

Times are seconds; x is a positive integer. :class:`StepModel` is a
:class:`~nnperf.prediction.Predictor` (registered as 'step'): its parameters are
the global shape, ``fit`` learns the local lines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.errors import NnperfError
from nnperf.prediction._base import Predictor, PredictorCategory, register_predictor

if TYPE_CHECKING:
    from typing import Self

KINDS = ("linear", "staircase", "fluctuating")
FORMS = ("ceil", "floor")
SELECTORS = ("half", "aligned")


class StepModelError(NnperfError):
    """A step model that cannot be built or fitted (too few or ill-placed points, a bad shape)."""


@dataclass(frozen=True)
class StepShape:
    """The global variables of a step model: its kind, step depth d, period r and step form.

    ``depth`` is None for a linear model; ``period`` and ``selector`` apply to
    the fluctuating kind ('half': Eq. 3.1; 'aligned': lower at multiples of r);
    ``form`` ('ceil' or 'floor') to the staircase (the fluctuating kind uses
    floor above and ceil below, as Eq. 3.2-3.3).
    """

    kind: str = "linear"
    depth: int | None = None
    period: int | None = None
    form: str = "ceil"
    selector: str = "half"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise StepModelError(f"unknown step model kind {self.kind!r}; use one of {', '.join(KINDS)}")
        if self.form not in FORMS:
            raise StepModelError(f"unknown step form {self.form!r}; use ceil or floor")
        if self.selector not in SELECTORS:
            raise StepModelError(f"unknown fluctuation selector {self.selector!r}; use half or aligned")
        if self.kind == "linear" and (self.depth is not None or self.period is not None):
            raise StepModelError("a linear model has no step depth or period")
        if self.kind != "linear" and (self.depth is None or self.depth < 1):
            raise StepModelError(f"a {self.kind} model needs a step depth d >= 1, got {self.depth!r}")
        if self.kind == "fluctuating" and (self.period is None or self.period < 2):
            raise StepModelError(f"a fluctuating model needs a period r >= 2, got {self.period!r}")
        if self.kind == "staircase" and self.period is not None:
            raise StepModelError("a staircase has no fluctuation period (use the fluctuating kind)")

    @property
    def branches(self) -> tuple[str, ...]:
        """The names of the model's lines: ('upper', 'lower') when fluctuating, else ('line',)."""
        return ("upper", "lower") if self.kind == "fluctuating" else ("line",)

    def describe(self) -> str:
        if self.kind == "linear":
            return "linear (no steps)"
        if self.kind == "staircase":
            return f"staircase d={self.depth} ({self.form})"
        aligned = ", lower at multiples of r" if self.selector == "aligned" else ""
        return f"fluctuating d={self.depth} r={self.period}{aligned}"


def on_upper(x: np.ndarray | Sequence[int] | int, period: int, selector: str = "half") -> np.ndarray:
    """True where x is on the upper step function: (x - 1) mod r < r/2 (Eq. 3.1, 'half'),
    or x mod r != 0 ('aligned')."""
    x = np.asarray(x)
    if selector == "aligned":
        return np.asarray(x % period != 0)
    return np.asarray((x - 1) % period < period / 2)


def branch_of(shape: StepShape, x: np.ndarray) -> np.ndarray:
    """Index into ``shape.branches`` for every x: 0 (upper / line) or 1 (lower)."""
    if shape.kind != "fluctuating":
        return np.zeros(len(x), dtype=int)
    assert shape.period is not None
    return np.where(on_upper(x, shape.period, shape.selector), 0, 1)


def quantised(x: np.ndarray, depth: int | None, form: str) -> np.ndarray:
    """The step functions' argument: ceil(x/d)*d or floor(x/d)*d (x itself without a depth)."""
    x = np.asarray(x, dtype=float)
    if depth is None:
        return x
    q = np.ceil(x / depth) if form == "ceil" else np.floor(x / depth)
    return q * depth


def features(shape: StepShape, x: np.ndarray | Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(branch index, step-function argument) of every x under ``shape``."""
    x = np.asarray(x, dtype=float)
    branch = branch_of(shape, x)
    if shape.kind == "fluctuating":
        q = np.where(branch == 0, quantised(x, shape.depth, "floor"), quantised(x, shape.depth, "ceil"))
    else:
        q = quantised(x, shape.depth, shape.form)
    return branch, q


@dataclass(frozen=True)
class Line:
    """One step function's local variables: T = m * q + b (seconds per unit of q, seconds)."""

    slope_s: float
    intercept_s: float


@register_predictor
class StepModel(Predictor):
    """A step model of one parameter at one layer configuration: a global shape and its fitted local lines.

    Parameters
    ----------
    shape : StepShape, default linear
        The global variables: kind, step depth d, period r, form and selector.
    parameter : str, default 'x'
        The name of x (e.g. 'channels'), for messages and composition.
    fixed : tuple of (name, value), default ()
        The other parameters of the layer configuration the model describes.

    After ``fit``: ``lines_``, one :class:`Line` per name in ``shape.branches``
    (slope in seconds per unit of the step-function argument q, intercept in
    seconds).
    """

    name = "step"
    label = "step model"
    description = "Osterwind: the generalised step-function model of one layer parameter (Eq. 3.1-3.3)"
    category = PredictorCategory.STEP

    def __init__(self, shape: StepShape = StepShape(), parameter: str = "x",
                 fixed: tuple[tuple[str, int], ...] = ()) -> None:
        self.shape = shape
        self.parameter = parameter
        self.fixed = fixed

    @classmethod
    def from_lines(cls, shape: StepShape, lines: Sequence[Line], parameter: str = "x",
                   fixed: tuple[tuple[str, int], ...] = ()) -> StepModel:
        """The model with these known lines (one per name in ``shape.branches``), as detection and stored fits
        give them."""
        model = cls(shape, parameter, fixed)
        model.lines_ = _checked_lines(shape, lines)
        return model

    def fit(self, x: np.ndarray | Sequence[int], latency_s: np.ndarray | Sequence[float]) -> Self:
        """Fits the local lines of ``shape`` to measurements, by relative least squares per line.

        Parameters
        ----------
        x : array of int
            Parameter values (positive integers).
        latency_s : array of float
            The latency measured at each x, in seconds (positive).

        Returns
        -------
        StepModel
            ``self``, with ``lines_`` set.

        Each line needs two points with different step-function arguments;
        with exactly two per line this is the paper's interpolation (3.3.3).
        Relative least squares (weights 1/T^2) minimises the relative error,
        as MAPE counts it. Raises :class:`StepModelError` when a line has
        too few points.
        """
        x = np.asarray(x, dtype=float)
        y = np.asarray(latency_s, dtype=float)
        if x.shape != y.shape or x.ndim != 1:
            raise StepModelError("need as many latencies as parameter values")
        if np.any(~np.isfinite(y)) or np.any(y <= 0):
            raise StepModelError("latencies must be positive and finite")
        branch, q = features(self.shape, x)
        self.lines_ = tuple(self._fit_line(index, x, q, y, branch == index)
                            for index in range(len(self.shape.branches)))
        return self

    def _fit_line(self, index: int, x: np.ndarray, q: np.ndarray, y: np.ndarray, sel: np.ndarray) -> Line:
        """The relative least-squares line T = m q + b through the points ``sel`` of branch ``index``."""
        if len(np.unique(q[sel])) < 2:
            where = "" if self.shape.kind != "fluctuating" else f" on the {self.shape.branches[index]} step function"
            raise StepModelError(f"need points{where} on at least two different steps to fit a "
                                 f"{self.shape.describe()} model; got {self.parameter} = "
                                 f"{', '.join(str(int(v)) for v in x[sel]) or 'none'}")
        weights = 1.0 / y[sel] ** 2
        design = np.stack([q[sel], np.ones(sel.sum())], axis=1) * np.sqrt(weights)[:, None]
        (slope, intercept), *_ = np.linalg.lstsq(design, y[sel] * np.sqrt(weights), rcond=None)
        return Line(float(slope), float(intercept))

    def predict(self, x: np.ndarray | Sequence[int] | int) -> np.ndarray:
        """Latency (seconds) at every x."""
        self.check_fitted()
        branch, q = features(self.shape, np.atleast_1d(np.asarray(x)))
        slope = np.array([line.slope_s for line in self.lines_])[branch]
        intercept = np.array([line.intercept_s for line in self.lines_])[branch]
        return slope * q + intercept

    def predict_one(self, x: int) -> float:
        """Latency (seconds) at one x."""
        return float(self.predict(x)[0])

    def summary(self) -> str:
        """The shape and each line's slope (seconds per unit of q) and intercept (seconds)."""
        self.check_fitted()
        lines = "; ".join(f"{branch}: {line.slope_s:.4g} s x q + {line.intercept_s:.4g} s"
                          for branch, line in zip(self.shape.branches, self.lines_))
        return f"{self.parameter}: {self.shape.describe()}; {lines}"

    def params_to_dict(self) -> dict[str, Any]:
        return {"shape": asdict(self.shape), "parameter": self.parameter, "fixed": dict(self.fixed)}

    @classmethod
    def params_from_dict(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"shape": StepShape(**params["shape"]), "parameter": str(params["parameter"]),
                "fixed": tuple((str(k), int(v)) for k, v in params["fixed"].items())}

    def fitted_state(self) -> dict[str, Any]:
        return {"lines": [asdict(line) for line in self.lines_]}

    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        lines = [Line(float(line["slope_s"]), float(line["intercept_s"])) for line in state["lines"]]
        self.lines_ = _checked_lines(self.shape, lines)


def _checked_lines(shape: StepShape, lines: Sequence[Line]) -> tuple[Line, ...]:
    """``lines`` as a tuple, refused unless there is one per name in ``shape.branches``."""
    if len(lines) != len(shape.branches):
        raise StepModelError(f"a {shape.kind} model has {len(shape.branches)} line(s), got {len(lines)}")
    return tuple(lines)


def fit_lines(shape: StepShape, x: np.ndarray | Sequence[int], latency_s: np.ndarray | Sequence[float],
              parameter: str = "x", fixed: tuple[tuple[str, int], ...] = ()) -> StepModel:
    """``StepModel(shape, parameter, fixed).fit(x, latency_s)``: the local lines of ``shape`` fitted to
    measurements (x: parameter values; latency_s: seconds)."""
    return StepModel(shape, parameter, fixed).fit(x, latency_s)


def characterisation_points(shape: StepShape, low: int, high: int, step: int = 1) -> tuple[int, ...]:
    """The four parameter values to measure to characterise ``shape`` over [low, high] (3.3.3).

    Fluctuating: the first and last grid value on the upper step function and
    on the lower one. Staircase and linear: the first two and the last two grid
    values (two per end, so a single noisy reading does not set the slope).
    Raises :class:`StepModelError` when the range is too narrow to hold
    points on two different steps of each line.
    """
    if step < 1:
        raise StepModelError(f"the grid step must be a positive integer, got {step}")
    if high < low:
        raise StepModelError(f"empty range {low}:{high}")
    grid = np.arange(low, high + 1, step)
    if shape.kind == "fluctuating":
        assert shape.period is not None
        upper = on_upper(grid, shape.period, shape.selector)
        points = []
        for sel in (upper, ~upper):
            values = grid[sel]
            if len(values) < 2:
                raise StepModelError(f"the range {low}:{high}:{step} has fewer than two values on each step "
                                     f"function of period r={shape.period}")
            points += [int(values[0]), int(values[-1])]
    else:
        if len(grid) < 4:
            raise StepModelError(f"the range {low}:{high}:{step} holds {len(grid)} value(s); need at least 4")
        points = [int(grid[0]), int(grid[1]), int(grid[-2]), int(grid[-1])]
    chosen = tuple(sorted(set(points)))
    branch, q = features(shape, np.array(chosen))
    for index in range(len(shape.branches)):
        if len(np.unique(q[branch == index])) < 2:
            raise StepModelError(f"the range {low}:{high}:{step} is too narrow for steps of depth d={shape.depth}: "
                                 f"its end points lie on one step")
    return chosen


def mape(predicted: np.ndarray | Sequence[float], measured: np.ndarray | Sequence[float]) -> float:
    """Mean absolute percentage error, as a fraction (0.016 = 1.6%)."""
    p, m = np.asarray(predicted, dtype=float), np.asarray(measured, dtype=float)
    if len(p) == 0:
        return math.nan
    return float(np.mean(np.abs(p - m) / m))

"""One interface for every model that predicts, in the manner of scikit-learn's estimators.

A :class:`Predictor`'s ``__init__`` only stores its parameters (what
:meth:`~Predictor.get_params` returns); :meth:`~Predictor.fit` learns from
data, sets the learned attributes (their names end in ``_``) and returns the
predictor itself; :meth:`~Predictor.predict` uses them. Every predictor is
stored as a versioned JSON document (``to_dict``/``from_dict``, format
``nnperf-predictor``), never a pickle, and registers under a name in
:data:`PREDICTORS`, so that a document names the class that reads it and
evaluation finds every network-level predictor without being told about it.

:class:`NetworkPredictor` is the kind :func:`~nnperf.prediction.evaluation.evaluate`
compares: it is fitted on a system's calibration (:class:`CalibrationSet`) and
predicts one network's latency in seconds.

Every predictor describes itself, so that no report names one by its registry name: its ``label`` and
``description``, its :class:`PredictorCategory`, a one-line :meth:`~Predictor.summary` of what it learnt and,
where its fitted state tells, what it was fitted on (:meth:`~Predictor.fitted_on`). A network predictor also
declares the roles a system's model gives out (:class:`NetworkPredictor`'s ``primary_rank``,
``scales_layer_sum``, ``provides_fusion``) and what the calibration reports show of it.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from nnperf.errors import FormatVersionError, NnperfError
from nnperf.ir import Network
from nnperf.ir.metrics import NetworkMetrics, network_metrics
from nnperf.prediction._enums import TextEnum
from nnperf.registry import Availability, Registry

if TYPE_CHECKING:
    from typing import Self

    from nnperf.prediction._runs import MeasuredNetwork

PREDICTOR_FORMAT = "nnperf-predictor"
PREDICTOR_VERSION = 1
"""The version of the predictor document's envelope; each class versions its own fitted state (``version``)."""


class NotFittedError(NnperfError):
    """A predictor asked to predict (or to be stored) before it was fitted."""


class PredictorCategory(TextEnum):
    """What a predictor predicts, and so where it is used."""

    NETWORK = "network"
    """A whole network's latency, fitted on a system's calibration (:class:`NetworkPredictor`)."""
    LAYER = "layer"
    """One layer type's latency or energy from the layer's metrics."""
    PRIMITIVE = "primitive"
    """The times of convolution primitives and layout transformations on a layer configuration."""
    STEP = "step"
    """Step-function models of a layer parameter, and their composition into any configuration."""
    OTHER = "other"
    """A predictor that does not say (the default of a third party's plain :class:`Predictor`)."""


@dataclass(frozen=True)
class FittedOn:
    """What a predictor was fitted on: ``count`` of ``unit`` (samples, layers, points, ...) and, where known,
    the ``networks`` by name."""

    count: int
    unit: str = "samples"
    networks: tuple[str, ...] = ()

    def __str__(self) -> str:
        named = f" of {len(self.networks)} network(s): {', '.join(self.networks)}" if self.networks else ""
        return f"{self.count} {self.unit}{named}"


class Predictor(ABC):
    """The common interface: ``fit(...) -> self``, ``predict(...)``, ``get_params()``, ``to_dict``/``from_dict``.

    Subclasses set ``name`` (the registry name), ``description`` (one line for
    tables and reports), ``category`` and ``version`` (of their fitted state), take only
    parameters in ``__init__`` and keep what ``fit`` learns in attributes
    ending in ``_``, listed by :meth:`fitted_state`; they describe what they
    learnt with :meth:`summary` and, where their state tells, :meth:`fitted_on`.
    """

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    """A short name for tables and legends (the registry name when empty)."""
    description: ClassVar[str] = ""
    category: ClassVar[PredictorCategory] = PredictorCategory.OTHER
    """What the predictor predicts (a class attribute: ``kind`` is a parameter of some predictors)."""
    version: ClassVar[int] = 1
    display_order: ClassVar[int] = 100
    """Where the predictor comes in tables and figures (lower first; ties by name)."""

    @classmethod
    def display_label(cls) -> str:
        """The label of tables and legends: ``label``, or the registry name without one."""
        return cls.label or cls.name

    def summary(self) -> str:
        """One line of what the fitted predictor learnt, for tables (this default lists its scalar learned
        values); raises :class:`NotFittedError` before ``fit``."""
        self.check_fitted()
        scalars = [f"{key} = {value:.4g}" for key, value in self.fitted_state().items()
                   if isinstance(value, (int, float)) and not isinstance(value, bool)]
        return ", ".join(scalars) or "fitted"

    def fitted_on(self) -> FittedOn | None:
        """What the fitted predictor learnt from, as far as its fitted state tells (None where it does not)."""
        return None

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters and their current values (as scikit-learn's ``get_params``)."""
        signature = inspect.signature(type(self).__init__)
        return {name: getattr(self, name) for name in signature.parameters
                if name != "self" and signature.parameters[name].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD}

    @abstractmethod
    def fit(self, *args: Any, **kwargs: Any) -> Self:
        """Learn from data; returns ``self``."""

    @abstractmethod
    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Predict with what ``fit`` learnt."""

    @abstractmethod
    def fitted_state(self) -> dict[str, Any]:
        """The learned attributes as JSON values (what ``to_dict`` stores beside the parameters)."""

    @abstractmethod
    def load_fitted_state(self, state: Mapping[str, Any]) -> None:
        """Set the learned attributes from ``fitted_state``'s output."""

    @property
    def is_fitted(self) -> bool:
        return any(name.endswith("_") and not name.startswith("_") for name in vars(self))

    def check_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(f"this {self.name or type(self).__name__} predictor is not fitted yet: call fit first")

    @classmethod
    def migrated_state(cls, state_version: object, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """The fitted state of an older ``state_version`` as this version's, or None when it cannot be read
        (the default: the document is refused, "fit it again"); override to migrate an old version."""
        return None

    def params_to_dict(self) -> dict[str, Any]:
        """``get_params()`` as JSON values; override when a parameter is not a JSON value."""
        return self.get_params()

    @classmethod
    def params_from_dict(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor arguments stored by ``params_to_dict``."""
        return dict(params)

    def to_dict(self) -> dict[str, Any]:
        """The versioned JSON document of this predictor, fitted state included."""
        self.check_fitted()
        return {"format": PREDICTOR_FORMAT, "version": PREDICTOR_VERSION, "name": self.name,
                "state_version": self.version, "params": self.params_to_dict(), "fitted": self.fitted_state()}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Self:
        """The predictor stored by ``to_dict``; the document's ``name`` picks the class from :data:`PREDICTORS`."""
        if not isinstance(document, Mapping) or document.get("format") != PREDICTOR_FORMAT:
            raise NnperfError("not an nnperf predictor document (format "
                              f"{document.get('format') if isinstance(document, Mapping) else None!r})")
        if document.get("version") != PREDICTOR_VERSION:
            raise FormatVersionError(f"predictor document version {document.get('version')!r}; this nnperf reads "
                                     f"version {PREDICTOR_VERSION}")
        klass = predictor_class(str(document.get("name")))
        if not issubclass(klass, cls):
            raise NnperfError(f"the document holds a {klass.name} predictor, not a {cls.name or cls.__name__}")
        fitted = document.get("fitted")
        if document.get("state_version") != klass.version:
            fitted = klass.migrated_state(document.get("state_version"), fitted) if isinstance(fitted, Mapping) \
                else None
            if fitted is None:
                raise FormatVersionError(f"{klass.name} predictor state version {document.get('state_version')!r}; "
                                         f"this nnperf reads version {klass.version}: fit it again")
        try:
            predictor = klass(**klass.params_from_dict(document["params"]))
            predictor.load_fitted_state(fitted)
        except (KeyError, TypeError, ValueError) as exc:
            raise NnperfError(f"a stored {klass.name} predictor is malformed: {exc!r}") from exc
        return predictor  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        """Same class, same parameters and the same learned values (both unfitted counts as the same)."""
        if type(self) is not type(other):
            return NotImplemented
        assert isinstance(other, Predictor)
        if self.get_params() != other.get_params() or self.is_fitted != other.is_fitted:
            return False
        return not self.is_fitted or self.fitted_state() == other.fitted_state()

    __hash__ = None  # type: ignore[assignment]  (mutable: fit changes it)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


PREDICTORS: Registry[type[Predictor]] = Registry("predictor", "nnperf.predictors")
"""Every predictor class by name; third parties add theirs through the ``nnperf.predictors`` entry-point group,
each entry naming a :class:`Predictor` subclass. Read it through :func:`predictor_class`."""


def predictor_class(name: str) -> type[Predictor]:
    """The predictor class registered as ``name``; an unknown name lists the known ones.

    A built-in is registered with a factory that returns its class; an entry
    point loads the class itself, which the registry then calls: either way
    the class comes back.
    """
    made: Any = PREDICTORS.create(name)
    klass = made if isinstance(made, type) else type(made)
    if not issubclass(klass, Predictor):
        raise NnperfError(f"the predictor registered as {name!r} is a {klass.__name__}, not a Predictor")
    return klass

P = TypeVar("P", bound=type[Predictor])


def register_predictor(klass: P) -> P:
    """Class decorator: registers ``klass`` under its ``name``."""
    if not klass.name:
        raise ValueError(f"{klass.__name__} has no registry name")
    PREDICTORS.register(klass.name, lambda: klass)
    return klass


@dataclass(frozen=True)
class CalibrationSet:
    """What a system's calibration gives a network-level predictor to fit on.

    ``runs`` are the calibration networks measured layer by layer (isolated)
    and whole; ``predicted_layer_s[i]`` holds the per-layer latency model's
    prediction of every layer of ``runs[i]`` (seconds); ``profiled`` are the
    same networks measured with the framework profiler (their node groups show
    what the backend fuses); ``peak_ops_per_s`` and ``peak_bytes_per_s`` are
    the roofline peaks measured on the system, when they were.
    """

    runs: Sequence[MeasuredNetwork]
    predicted_layer_s: Sequence[Mapping[str, float]]
    profiled: Sequence[MeasuredNetwork] = ()
    peak_ops_per_s: float | None = None
    peak_bytes_per_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.runs) != len(self.predicted_layer_s):
            raise NnperfError(f"{len(self.runs)} calibration runs but {len(self.predicted_layer_s)} sets of "
                              "layer predictions")

    @property
    def measured_s(self) -> list[float]:
        """The whole-network median of every run (seconds)."""
        return [run.whole.median_s for run in self.runs]


@dataclass(frozen=True)
class NetworkInput:
    """What a network-level predictor predicts from: the network, its per-layer predictions (seconds) and its
    metrics (computed once per prediction and shared by every predictor; from the network when not given)."""

    network: Network
    layer_latency_s: Mapping[str, float]
    given_metrics: NetworkMetrics | None = None

    @cached_property
    def metrics(self) -> NetworkMetrics:
        return self.given_metrics if self.given_metrics is not None else network_metrics(self.network)


class NetworkPredictor(Predictor):
    """A predictor of a whole network's latency in seconds, fitted on a system's calibration.

    ``fit(calibration)`` learns from a :class:`CalibrationSet`;
    ``predict(x)`` takes a :class:`NetworkInput`. ``availability`` says
    whether a calibration holds what the predictor needs (a roofline needs
    measured peaks); one that cannot be fitted is left out of the system's
    model, with the reason kept in the calibration record.

    The roles a system's model gives out are class attributes, so that a
    prediction that holds only names can find them (see
    ``nnperf.prediction._roles``): ``primary_rank``, ``scales_layer_sum`` and
    ``provides_fusion``. ``calibration_key``, :meth:`calibration_entry` and
    :meth:`calibration_line` are what the calibration's document and summary
    show of the fitted predictor.
    """

    category = PredictorCategory.NETWORK

    primary_rank: ClassVar[int | None] = None
    """Whether a prediction's ``latency_s`` may come from this predictor: of those fitted that may, the lowest
    rank gives it; None: never (then the first fitted predictor gives it when no other may)."""
    scales_layer_sum: ClassVar[bool] = False
    """Whether it predicts c x the sum of the per-layer predictions (PreVIous Eq. 6) and holds c
    (:meth:`layer_sum_coefficient`)."""
    provides_fusion: ClassVar[bool] = False
    """Whether it knows which layers the backend fuses into the layer before them (:meth:`fused_layers`)."""
    calibration_key: ClassVar[str | None] = None
    """The key of the calibration document (``nnperf calibrate --json``) that holds :meth:`calibration_entry`
    (null where the system has no such predictor fitted); None: the document does not show this predictor."""

    @classmethod
    def availability(cls, calibration: CalibrationSet) -> Availability:
        return Availability.yes()

    def layer_sum_coefficient(self) -> float | None:
        """c, where the predictor ``scales_layer_sum``; None otherwise."""
        return None

    def predict_many(self, inputs: Sequence[NetworkInput]) -> list[float]:
        """:meth:`predict` of every input (seconds); a predictor whose work batches across networks overrides
        it (see :meth:`nnperf.prediction.SystemModel.predict_many`)."""
        return [float(self.predict(x)) for x in inputs]

    def fused_layers(self, network: Network) -> frozenset[str]:
        """The layers of ``network`` the backend runs inside the layer before them, where the predictor
        ``provides_fusion`` (none otherwise)."""
        return frozenset()

    def calibration_entry(self) -> dict[str, Any]:
        """What the calibration document holds under ``calibration_key``: the fitted state by default."""
        return self.fitted_state()

    def calibration_line(self, calibration: Mapping[str, Any]) -> str | None:
        """The line of the calibration summary on this fitted predictor (``calibration``: the system's
        calibration record), or None to leave it out."""
        return None

    @abstractmethod
    def fit(self, calibration: CalibrationSet) -> Self:  # type: ignore[override]
        """Learn from the calibration; returns ``self``."""

    @abstractmethod
    def predict(self, x: NetworkInput) -> float:  # type: ignore[override]
        """The network's latency in seconds."""


def display_key(klass: type[Predictor]) -> tuple[int, str]:
    """The sort key of tables and figures: ``display_order``, then the registry name."""
    return klass.display_order, klass.name


def network_predictor_classes() -> list[type[NetworkPredictor]]:
    """The registered network-level predictor classes, in display order."""
    classes = [predictor_class(name) for name in PREDICTORS.names()]
    return sorted((k for k in classes if issubclass(k, NetworkPredictor)), key=display_key)


def network_predictor_names() -> list[str]:
    """The registered network-level predictors, in display order."""
    return [k.name for k in network_predictor_classes()]


def fit_network_predictors(calibration: CalibrationSet, names: Sequence[str] | None = None,
                           on_skip: Callable[[str, str], None] | None = None,
                           options: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, NetworkPredictor]:
    """Every registered network predictor (or those ``names``) that this calibration can fit, fitted; ``options``
    maps a predictor's name to the keyword arguments it is made with (default: none)."""
    fitted: dict[str, NetworkPredictor] = {}
    for name in names if names is not None else network_predictor_names():
        klass = predictor_class(name)
        if not issubclass(klass, NetworkPredictor):
            raise NnperfError(f"predictor {name!r} does not predict networks")
        available = klass.availability(calibration)
        if not available.ok:
            if on_skip is not None:
                on_skip(name, available.reason)
            continue
        fitted[name] = klass(**(options or {}).get(name, {})).fit(calibration)
    return fitted

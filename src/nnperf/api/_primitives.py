"""The primitive dataset and cost models from Python (Mulder et al.): profile, train, predict.

::

    import nnperf

    import nnperf.api as api

    api.profile_primitives(["resnet18", "model.onnx"], random=200, budget_s=600)  # stored as measured
    training = api.train_primitive_model(kind="nn2")                             # fitted, scored, stored
    table = api.predict_primitives("vgg16")                                      # every primitive, every layer

The primitive system is this CPU with a thread count, ``nnperf.System("primitives", threads=N)``
(:data:`PRIMITIVES` has one thread); the functions that read the store take it, or a stored primitive system's id or
key prefix. :func:`profile_primitives` also profiles on a CUDA GPU, ``nnperf.System("primitives", device="cuda")``
(the primitives that run there: those written on torch ops and torch's own ``conv2d``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._predict import Progress
from nnperf.api._session import StoredId, StoreLike, opened_store, stored_id
from nnperf.errors import NnperfError, ParameterError
from nnperf.measure import System
from nnperf.registry import UnavailableError

if TYPE_CHECKING:
    from nnperf.campaign import DatasetImport, ItemRunner, PrimitiveProfileReport
    from nnperf.measure import HarnessConfig
    from nnperf.prediction.primitives import PrimitiveCostModel
    from nnperf.primitives import ConvConfig, Primitive, PrimitiveDataset
    from nnperf.store import Store, SystemRecord

PRIMITIVES = System(backend="primitives")
"""The primitive system of this CPU with one thread (``nnperf.System("primitives", threads=N)`` for N)."""


def primitive_threads(system: System | None, what: str) -> int:
    """The thread count of ``system``, a primitive system of this CPU (None: :data:`PRIMITIVES`); any other system
    is an error."""
    return primitive_settings(system, what, devices=("cpu",))[0]


def primitive_settings(system: System | None, what: str, devices: Sequence[str] = ("cpu", "cuda")
                       ) -> tuple[int, str]:
    """(thread count, device) of ``system``, a primitive system (None: :data:`PRIMITIVES`) on one of ``devices``
    (device types: "cpu", "cuda"); any other system is an error."""
    from nnperf.campaign import PRIMITIVE_BACKEND
    from nnperf.primitives import device_type

    chosen = PRIMITIVES if system is None else system
    if not isinstance(chosen, System) or chosen.backend != PRIMITIVE_BACKEND or chosen.options \
            or device_type(chosen.device) not in devices:
        shown = chosen.label if isinstance(chosen, System) else f"a {type(chosen).__name__} ({chosen!r})"
        where = " or ".join("this CPU" if d == "cpu" else "a CUDA GPU (device=\"cuda\")" for d in devices)
        other_device = isinstance(chosen, System) and chosen.backend == PRIMITIVE_BACKEND and not chosen.options
        hint = "; name a stored system of another device by its id or key ({system}, `nnperf systems`)"
        raise ParameterError(f"{what}: the primitives are profiled on {where}, nnperf.System(\"primitives\", "
                             f"threads=N), not {shown}" + (hint if other_device else ""), "system")
    return chosen.threads, chosen.device


def primitive_target(system: System | StoredId | None, what: str) -> tuple[StoredId | None, int]:
    """(the stored primitive system named, or None; the thread count of this CPU's) for ``system``: a stored id or
    key prefix with one thread, or this CPU's primitive system."""
    if isinstance(system, System) or system is None:
        return None, primitive_threads(system, what)
    return stored_id(system, what), 1


@dataclass(frozen=True)
class PrimitiveEntry:
    """A registered convolution primitive: its family, library, input and output layouts, the rule of the
    configurations it applies to, its error bound, the devices it computes on, and whether it can run here (and if
    not, why)."""

    name: str
    family: str
    library: str
    input_layout: str
    output_layout: str
    applies: str
    error_bound: float | None
    devices: tuple[str, ...]
    available: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "library": self.library, "input_layout": self.input_layout,
                "output_layout": self.output_layout, "applies": self.applies, "error_bound": self.error_bound,
                "devices": list(self.devices), "available": self.available, "reason": self.reason}


@dataclass(frozen=True)
class PrimitiveCatalog:
    """Every registered primitive, and every transformation between their layouts (identities included)."""

    primitives: tuple[PrimitiveEntry, ...]
    layout_transforms: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf primitives list --json`` document."""
        return {"format": "nnperf-primitives", "version": 1, "primitives": [p.to_dict() for p in self.primitives],
                "layout_transforms": list(self.layout_transforms)}


def primitive_catalog() -> PrimitiveCatalog:
    """The library of convolution primitives (``nnperf primitives list``), each with whether it can run here."""
    from nnperf.primitives import all_transforms, primitive_report

    return PrimitiveCatalog(
        tuple(PrimitiveEntry(p.name, p.family.value, p.library, p.input_layout.name, p.output_layout.name, p.rule,
                             p.error_bound, tuple(sorted(p.devices)), available.ok, available.reason)
              for p, available in primitive_report()),
        tuple(t.name for t in all_transforms()))


def fraction(value: float | str, what: str) -> float:
    """``"1%"`` or ``0.01`` (or the number) as a fraction in (0, 1]; anything else is an error naming ``what``."""
    text = str(value).strip()
    try:
        number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        number = math.nan
    if not 0 < number <= 1:
        raise NnperfError(f"{what} must be a percentage or fraction above 0 and at most 100% (1% or 0.01), "
                          f"got {value!r}")
    return number


def dataset_configs(models: Sequence[ModelLike] = (), random: int = 0, seed: int = 0, grid: str | None = None,
                    max_macs: int | None = None) -> list[ConvConfig]:
    """The configurations a primitive dataset profiles.

    Without ``grid``: the distinct convolutions of ``models`` (every zoo network when none is given) followed by
    ``random`` configurations sampled around them. With ``grid="paper"``: Mulder et al.'s grid
    (:func:`nnperf.primitives.paper_grid`, in a seeded random order, at most ``max_macs`` multiply-accumulates
    each), after the convolutions of ``models`` if any are given.
    """
    from nnperf.primitives import conv_configs, paper_grid, sample_configs
    from nnperf.zoo import names

    if grid not in (None, "paper"):
        raise NnperfError(f"unknown configuration grid {grid!r}; known: paper (Mulder et al. Table 1 and 7)")
    networks = [load_model(m) for m in (models or (() if grid else names()))]
    found = list(dict.fromkeys(c for network in networks for c in conv_configs(network)))
    if grid == "paper":
        return list(dict.fromkeys(found + paper_grid(max_macs=max_macs, seed=seed)))
    return found + (sample_configs(found, random, seed) if random else [])


def named_primitives(names: Sequence[str], device: str = "cpu") -> list[Primitive]:
    """The primitives named by ``names``: primitive names or family names (``vendor``, ``winograd``, ...);
    every available primitive that runs on ``device`` when empty (a family: those of it that do). An unknown name
    is an error listing the known ones; a named primitive that cannot run here, or not on ``device``, is an error
    saying why."""
    from nnperf.primitives import Family, all_primitives, get_primitive
    from nnperf.registry import UnavailableError

    def usable(p: Primitive) -> bool:
        return p.availability().ok and p.supports(device).ok

    if not names:
        return [p for p in all_primitives() if usable(p)]
    families = {f.value for f in Family}
    chosen: dict[str, Primitive] = {}
    for name in names:
        if name in families:
            chosen |= {p.name: p for p in all_primitives() if p.family.value == name and usable(p)}
            continue
        primitive = get_primitive(name)
        available = primitive.availability()
        if not available.ok:
            raise UnavailableError(f"primitive {name} is unavailable: {available.reason}")
        supported = primitive.supports(device)
        if not supported.ok:
            raise UnavailableError(f"primitive {name} cannot run on {device}: {supported.reason}")
        chosen[name] = primitive
    if not chosen:
        raise NnperfError(f"no primitive of {', '.join(names)} can run here" + ("" if device == "cpu" else
                                                                              f" on {device}"))
    return list(chosen.values())


def profile_primitives(models: Sequence[ModelLike] = (), system: System = PRIMITIVES, store: StoreLike = None, *,
                       random: int = 0, primitives: Sequence[str] = (), budget_s: float | None = None, seed: int = 0,
                       progress: Progress | None = None, runner: ItemRunner | None = None,
                       protocol: str = "auto", grid: str | None = None, max_macs: int | None = None,
                       output_activations: bool = False, retime_over: float | bool | None = None
                       ) -> PrimitiveProfileReport:
    """Profiles primitives and layout transformations into the store: the primitive dataset (Mulder et al. 3.2).

    Each time is stored as it is taken and not measured again: calling it again after a stop goes on from there.

    Parameters
    ----------
    models : sequence of models, default ()
        Whose convolutions are profiled, with ``random`` configurations sampled around them (every zoo network
        when empty; :func:`dataset_configs`).
    system : System, default PRIMITIVES
        The primitive system: this CPU, ``nnperf.System("primitives", threads=N)``, or a CUDA GPU,
        ``nnperf.System("primitives", device="cuda")`` (or "cuda:N"; the primitives that run there).
    store : Store, path or None, default None
        Where the times go (None: ``$NNPERF_DB``, else ``./nnperf.db``).
    random : int, default 0
        Configurations sampled around the models' ones (seeded by ``seed``).
    primitives : sequence of str, default ()
        Primitive or family names (:func:`named_primitives`; all available ones when empty).
    budget_s : float, optional
        Stop starting new configurations after this many seconds.
    runner : ItemRunner, optional
        A fleet's nodes of a primitive system (``nnperf.fleet``): the configurations are measured there.
    protocol : {'auto', 'interleaved', 'sequential'}, default 'auto'
        How a configuration's workloads are timed ('auto': what a quick machine check recommends, interleaved).
    grid : {'paper'}, optional
        Profile Mulder et al.'s grid (Table 7's shapes x Table 1's kernels and strides) in a seeded random order,
        after ``models``' convolutions when models are given (:func:`dataset_configs`).
    max_macs : int, optional
        With ``grid``, leave out configurations of more multiply-accumulates.
    output_activations : bool, default False
        Instead of the configurations, time the layout transformations alone on the output activations none of
        them reads (``nnperf.campaign.profile_transforms``): more activations for the transformations' model.
    retime_over : float or True, optional
        Then time again each configuration whose machine-speed reading is over this factor of the median (True:
        ``nnperf.campaign.SLOW_FACTOR``, 1.5); the dataset reads the new times (the report's ``retimed``).
    """
    from nnperf.campaign import SLOW_FACTOR, profile_transforms
    from nnperf.campaign import profile_primitives as profile
    from nnperf.measure import IN_PROCESS_PROTOCOLS, resolve_protocol
    from nnperf.primitives import unread_outputs

    threads, device = primitive_settings(system, "profile_primitives")
    _check_profile_arguments(random, primitives, output_activations, device if runner is None else None)
    retime_over = SLOW_FACTOR if retime_over is True else retime_over
    timing = resolve_protocol(protocol, IN_PROCESS_PROTOCOLS, "the primitive dataset", threads=threads).protocol
    chosen = named_primitives(primitives, device)
    configs = dataset_configs(models, random, seed, grid, max_macs)
    with opened_store(store) as opened:
        if output_activations:
            return profile_transforms(opened, unread_outputs(configs), threads, budget_s=budget_s, progress=progress,
                                      runner=runner, protocol=timing, device=device, retime_over=retime_over)
        return profile(opened, configs, threads, budget_s=budget_s, primitives=chosen, progress=progress,
                       runner=runner, protocol=timing, device=device, retime_over=retime_over)


def _check_profile_arguments(random: int, primitives: Sequence[str], output_activations: bool,
                             device: str | None) -> None:
    """:func:`profile_primitives`' ``random`` is not negative, no primitive is named for ``output_activations``
    (which times the transformations alone), and ``device``, where measured here, can compute here."""
    from nnperf.primitives import device_availability

    if random < 0:
        raise ParameterError(f"{{random}} must be 0 or more, got {random}", "random")
    if output_activations and primitives:
        raise ParameterError(f"{{output_activations}} times the layout transformations alone, no primitive; the "
                             f"primitives named ({', '.join(primitives)}) would not be timed: leave them out",
                             "output_activations")
    if device is not None and not (here := device_availability(device)).ok:  # before the models are read
        raise UnavailableError(f"device {device}: {here.reason}")  # the machine lacks it, not a bad value


MODEL_KIND = "primitive-cost"
"""The kind under which a primitive cost model is stored with its system."""


def find_primitive_system(store: Store, system: StoredId | None, threads: int) -> SystemRecord:
    """The stored primitive system named by ``system``, else this CPU's with ``threads`` threads, else the only
    one stored; an error says what to do when there is none or several."""
    from nnperf.campaign import primitive_system, primitive_systems

    if system is not None:
        return store.system(system)
    here = store.find_system(primitive_system(threads))
    if here is not None:
        return here
    found = primitive_systems(store)
    if len(found) == 1:
        return found[0]
    if not found:
        raise NnperfError(f"{store.path} holds no profiled primitives: profile them first with "
                          "`nnperf primitives profile`")
    raise ParameterError(f"{store.path} holds profiled primitives of {len(found)} systems, none of them this one "
                         f"with {threads} thread(s): name one with {{system}} ({', '.join(str(s.id) for s in found)})",
                         "system")


def export_primitive_dataset(path: str | Path, system: System | StoredId | None = None,
                             store: StoreLike = None) -> tuple[SystemRecord, PrimitiveDataset]:
    """Writes the profiled dataset of ``system`` (a stored id or key prefix, or this CPU's primitive system, else
    the only one stored) to ``path``, JSON, gzip-compressed for a ``.gz`` name
    (``nnperf.campaign.export_primitive_dataset``); returns the system and the dataset written."""
    from nnperf.campaign import export_primitive_dataset as export

    stored, threads = primitive_target(system, "export_primitive_dataset")
    with opened_store(store, create=False) as opened:
        record = find_primitive_system(opened, stored, threads)
        return record, export(opened, record.id, Path(path))


def import_primitive_dataset(path: str | Path, store: StoreLike = None) -> DatasetImport:
    """Stores a dataset file written by :func:`export_primitive_dataset` under the system it was profiled on
    (``nnperf.campaign.import_primitive_dataset``: what the store holds already is kept)."""
    from nnperf.campaign import import_primitive_dataset as load_file

    with opened_store(store) as opened:
        return load_file(opened, Path(path))


@dataclass(frozen=True)
class PrimitiveTraining:
    """A cost model fitted on a system's dataset split 80/10/10 (Mulder et al. 4.2), and how it scores.

    ``mdrae`` is the median relative absolute error of every primitive and transformation on the test part,
    ``test_counts`` how many test times each has; ``train_s`` the fitting time (seconds); ``model_id`` where the
    model is stored with the system; ``ratio_mdrae`` the MdRAE of each one's ratio to ``reference`` (the
    primitive the dataset pairs its rounds to; transformations to the one timed most) on the same test rows,
    where it has one (``nnperf.prediction.primitives.evaluate``)."""

    model: PrimitiveCostModel
    system_id: int
    sizes: tuple[int, int, int]
    """Configurations in the training, validation and test parts."""
    mdrae: dict[str, float]
    test_counts: dict[str, int]
    train_s: float
    model_id: int
    ratio_mdrae: dict[str, float] = field(default_factory=dict)
    reference: str | None = None


def train_primitive_model(system: System | StoredId | None = None, store: StoreLike = None, *, kind: str = "nn2",
                          seed: int = 0, targets: str = "absolute") -> PrimitiveTraining:
    """Fits a cost model on the stored dataset of ``system`` split 80/10/10, scores it on the test part and stores
    it with the system (the newest is the one :func:`predict_primitives` uses).

    ``kind`` is Lin, NN1, NN2, GB (boosted trees), ens (NN2 and GB averaged) or auto (the best of them on the
    validation part); ``targets`` absolute log times (Mulder et al.), times relative to the primitive the dataset
    pairs its rounds to (when it has it), or auto (``nnperf.prediction.primitives.PrimitiveCostModel``).
    ``system`` is a stored primitive system's id or key prefix, or this CPU's primitive system
    (``nnperf.System("primitives", threads=N)``; None: one thread), else the only one the store holds."""
    stored, threads = primitive_target(system, "train_primitive_model")
    from nnperf.campaign import DATASET_REFERENCE, load_primitive_dataset
    from nnperf.prediction.primitives import PrimitiveCostModel, evaluate, split_dataset

    with opened_store(store, create=False) as opened:
        record = find_primitive_system(opened, stored, threads)
        dataset = load_primitive_dataset(opened, record.id)
        reference = DATASET_REFERENCE if DATASET_REFERENCE in dataset.primitives else None
        train, validation, test = split_dataset(dataset, seed=seed)
        start = time.perf_counter()
        model = PrimitiveCostModel(kind, seed=seed, targets=targets,
                                   reference=None if targets == "absolute" else reference).fit(train, validation)
        train_s = time.perf_counter() - start
        scored = evaluate(model, test, reference)
        model_id = opened.save_model(record.id, MODEL_KIND, model.to_dict())
    columns = scored.columns.values()
    return PrimitiveTraining(model, record.id, (len(train.conv), len(validation.conv), len(test.conv)),
                             {c.name: c.absolute for c in columns}, {c.name: c.count for c in columns}, train_s,
                             model_id, {c.name: c.ratio for c in columns if c.ratio is not None}, scored.reference)


def stored_primitive_model(system: System | StoredId | None = None,
                           store: StoreLike = None) -> tuple[PrimitiveCostModel, int]:
    """The newest cost model stored with ``system`` (as for :func:`train_primitive_model`) and its system id; an
    error says how to train one when there is none."""
    from nnperf.prediction import Predictor
    from nnperf.prediction.primitives import PrimitiveCostModel

    stored, threads = primitive_target(system, "stored_primitive_model")
    with opened_store(store, create=False) as opened:
        record = find_primitive_system(opened, stored, threads)
        document = opened.latest_model(record.id, MODEL_KIND)
    if document is None:
        raise NnperfError(f"system {record.id} has no primitive cost model: train one with `nnperf primitives train`")
    model = Predictor.from_dict(document)
    if not isinstance(model, PrimitiveCostModel):
        raise NnperfError(f"the stored {MODEL_KIND} model of system {record.id} is a {type(model).__name__}")
    return model, record.id


@dataclass(frozen=True)
class LayerPrimitives:
    """One convolution layer and every primitive's predicted time on it (seconds; NaN where one does not
    apply), in :attr:`PrimitivePrediction.primitives` order."""

    layer: str
    config: ConvConfig
    times_s: tuple[float, ...]


@dataclass(frozen=True)
class PrimitivePrediction:
    """Every primitive's predicted time on every convolution of a network, from one batched model call
    (``predict_s`` seconds, features included)."""

    network: str
    system_id: int
    kind: str
    primitives: tuple[str, ...]
    layers: tuple[LayerPrimitives, ...]
    predict_s: float

    @property
    def default(self) -> str | None:
        """The primitive a framework runs a convolution with by default (or its stand-in where that one is not
        in the model), the one a selection is compared with; None when the model has neither."""
        from nnperf.optimize.select import DEFAULT_PRIMITIVE, DEFAULT_STAND_IN

        return next((name for name in (DEFAULT_PRIMITIVE, DEFAULT_STAND_IN) if name in self.primitives), None)

    def fastest(self, layer: LayerPrimitives) -> tuple[str, float]:
        """The primitive predicted fastest on ``layer`` and its time (seconds)."""
        best = min((t, name) for name, t in zip(self.primitives, layer.times_s, strict=True) if not math.isnan(t))
        return best[1], best[0]


def predict_primitives(model: ModelLike, system: System | StoredId | None = None, store: StoreLike = None, *,
                       input_shape: InputShape | None = None) -> PrimitivePrediction:
    """Predicts every primitive on every 2-D convolution of ``model`` with the newest cost model stored with
    ``system`` (:func:`stored_primitive_model`); a network without convolutions is an error."""
    from nnperf.primitives import conv_configs, conv_layer_configs

    network = load_model(model, input_shape)
    conv_configs(network)  # refuses a network without a convolution
    cost, system_id = stored_primitive_model(system, store)
    layers = conv_layer_configs(network)
    start = time.perf_counter()
    times = cost.predict(list(layers.values()))
    predict_s = time.perf_counter() - start
    rows = tuple(LayerPrimitives(name, config, tuple(float(t) for t in row))
                 for (name, config), row in zip(layers.items(), times, strict=True))
    return PrimitivePrediction(network.name, system_id, cost.kind, tuple(cost.primitives_), rows, predict_s)


TRANSFER_METHODS = ("factor", "fine-tune", "factor+fine-tune", "residual", "frozen")
"""How :func:`transfer_primitive_model` moves a cost model to this platform (Mulder et al. 4.4, and two corrections
fitted in closed form)."""


@dataclass(frozen=True)
class PrimitiveTransfer:
    """A source system's cost model moved to this platform from a small profiled sample (Mulder et al. 4.4).

    ``configs`` are the source's configurations drawn for the sample (``measured`` of them profiled now,
    ``reused`` already in the store for the target) and ``sample_times`` the target times learnt from (primitives
    and transformations); ``factors`` the per-primitive and per-transformation correction factors of the factor
    methods (None for plain fine-tuning); ``profile_s`` the profiling and ``transfer_s`` the correction or
    fine-tuning time (seconds); ``model_id`` where the model is stored with the target system."""

    model: PrimitiveCostModel
    source_id: int
    target_id: int
    method: str
    samples: float
    configs: tuple[ConvConfig, ...]
    measured: int
    reused: int
    sample_times: int
    failures: tuple[tuple[str, str, str], ...]
    factors: dict[str, float] | None
    profile_s: float
    transfer_s: float
    model_id: int


def _sample_of(dataset: PrimitiveDataset, configs: Sequence[ConvConfig]) -> PrimitiveDataset:
    """``dataset``'s times of these configurations and of their input activations (the transformations)."""
    wanted = set(configs)
    activations = {(c.batch, c.c, c.im) for c in configs}
    return dataset.of_rows([s for s in dataset.conv if s.config in wanted],
                           [s for s in dataset.layout if (s.batch, s.c, s.im) in activations])


def transfer_primitive_model(source: StoredId, system: System = PRIMITIVES, store: StoreLike = None, *,
                             samples: float | str = 0.01, method: str = "factor", seed: int = 0,
                             progress: Progress | None = None, harness: HarnessConfig | None = None
                             ) -> PrimitiveTransfer:
    """Moves the newest cost model of system ``source`` to this platform (``system``, this CPU's primitive system,
    ``nnperf.System("primitives", threads=N)``) from a small sample of it (Mulder et al. 4.4 and 5.3), and stores
    the result with this platform's system, where :func:`predict_primitives` and :func:`select` find it.

    A seeded ``samples`` fraction (``0.01`` or ``"1%"``) of the source dataset's configurations (at least one) is
    profiled here under the model's primitives that are available here, with the layout transformations (what the
    store already holds for this platform is not measured again); the model is then ``method``: ``"factor"`` (one
    factor per primitive and transformation, :func:`~nnperf.prediction.primitives.factor_corrected`),
    ``"fine-tune"`` (trained further on the sample, :func:`~nnperf.prediction.primitives.fine_tuned`),
    ``"factor+fine-tune"`` (both, the factors first), ``"residual"`` (the log residuals' level and each column's
    part against it, :func:`~nnperf.prediction.primitives.residual_corrected`) or ``"frozen"`` (the networks' last
    layer alone, :func:`~nnperf.prediction.primitives.fine_tuned_frozen`). ``harness`` defaults to
    :data:`~nnperf.campaign.DATASET_HARNESS`, that of the source dataset.

    The source must differ from this platform: the same CPU counts as another platform with another thread count
    or with ``ONEDNN_MAX_CPU_ISA``/``ATEN_CPU_CAPABILITY`` set.
    """
    from nnperf.campaign import DATASET_HARNESS, load_primitive_dataset
    from nnperf.campaign import profile_primitives as profile
    from nnperf.prediction.primitives import subsample

    threads = primitive_threads(system, "transfer_primitive_model")
    share = fraction(samples, "the sample")
    if method not in TRANSFER_METHODS:
        raise NnperfError(f"unknown transfer method {method!r}; known: {', '.join(TRANSFER_METHODS)}")
    with opened_store(store, create=False) as opened:
        record, model = _transfer_source(opened, stored_id(source, "transfer_primitive_model"), threads)
        configs = [s.config for s in subsample(load_primitive_dataset(opened, record.id), share, seed).conv]
        if not configs:
            raise NnperfError(f"system {record.id} holds no profiled configuration to draw a sample from")
        report = profile(opened, configs, threads, harness=harness or DATASET_HARNESS,
                         primitives=_runnable_primitives(model, record.id), progress=progress)
        sample = _sample_of(load_primitive_dataset(opened, report.system_id), configs)
        start = time.perf_counter()
        moved, factors = _moved(model, sample, method, seed)
        transfer_s = time.perf_counter() - start
        model_id = opened.save_model(report.system_id, MODEL_KIND, moved.to_dict())
    return PrimitiveTransfer(moved, record.id, report.system_id, method, share, tuple(configs), report.measured,
                             report.reused, sample.n_samples, report.failures, factors, report.elapsed_s, transfer_s,
                             model_id)


def _moved(model: PrimitiveCostModel, sample: PrimitiveDataset, method: str,
           seed: int) -> tuple[PrimitiveCostModel, dict[str, float] | None]:
    """``model`` moved with ``sample`` by ``method`` (:data:`TRANSFER_METHODS`), and the correction factors of the
    factor methods (None for the others)."""
    from nnperf.prediction.primitives import (
        correction_factors,
        factor_corrected,
        fine_tuned,
        fine_tuned_frozen,
        residual_corrected,
    )

    if method == "residual":
        return residual_corrected(model, sample), None
    if method == "frozen":
        return fine_tuned_frozen(model, sample), None
    factors = correction_factors(model, sample) if method != "fine-tune" else None
    moved = factor_corrected(model, sample) if factors is not None else model
    return (fine_tuned(moved, sample, seed=seed) if method != "factor" else moved), factors


def _transfer_source(store: Store, source: StoredId | None, threads: int) -> tuple[SystemRecord, PrimitiveCostModel]:
    """The source system of a transfer and its newest cost model; refused when it is this platform or has none."""
    from nnperf.campaign import primitive_system

    record = store.system(source)
    if record.key == primitive_system(threads).key:
        raise ParameterError(f"system {record.id} is this platform with {threads} thread(s): the source must be "
                             "another one; set ONEDNN_MAX_CPU_ISA/ATEN_CPU_CAPABILITY or another thread count "
                             "({threads}) to make another platform", "threads")
    if store.latest_model(record.id, MODEL_KIND) is None:
        raise NnperfError(f"system {record.id} has no primitive cost model to transfer: train one with "
                          f"`nnperf primitives train --system {record.id}`")
    return record, stored_primitive_model(record.id, store)[0]


def _runnable_primitives(model: PrimitiveCostModel, system_id: int) -> list[Primitive]:
    """The primitives of ``model`` that are registered and can run here; none is an error."""
    from nnperf.primitives import get_primitive
    from nnperf.registry import UnknownPluginError

    chosen = []
    for name in model.primitives_:
        try:
            primitive = get_primitive(name)
        except UnknownPluginError:
            continue
        if primitive.availability().ok:
            chosen.append(primitive)
    if not chosen:
        raise NnperfError(f"none of the primitives of system {system_id}'s model can run here: "
                          f"{', '.join(model.primitives_)}")
    return chosen

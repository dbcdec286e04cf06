"""Compare two sets of layer times: two stored runs, two systems, two backends, or predicted against measured.

A side (:class:`Side`) is named by text (:func:`parse_side`) and read from the store (:func:`load_side`):

- ``run:ID``: a stored run (``nnperf profile`` prints its id);
- ``system:ID|KEY``: the newest finished run of ``model`` on a stored system (id or key prefix, see
  ``nnperf systems``);
- ``predicted:ID|KEY``: the per-layer predictions of that system's calibrated model for the network.

The convention throughout is speed-up = A time / B time: above 1 B is faster, below 1 B is slower. Times are seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.table import Table
from rich.text import Text

from nnperf.campaign import UNATTRIBUTED_PREFIX
from nnperf.errors import NnperfError
from nnperf.ir import Network
from nnperf.measure import Method
from nnperf.prediction import NetworkPrediction, load_stored_model
from nnperf.report import write_csv as write_rows
from nnperf.report.measurements import ms
from nnperf.report.optypes import OpTime, time_by_op
from nnperf.store import RunRecord, Store, SystemRecord

COMPARE_FORMAT = ("nnperf-compare", 1)
CONVENTION = "speed-up = A time / B time (above 1: B is faster)"

SideKind = Literal["run", "system", "predicted"]
KINDS: tuple[SideKind, ...] = ("run", "system", "predicted")


@dataclass(frozen=True)
class SideSpec:
    """What one side of a comparison names: ``kind`` and the run id or system id / key prefix ``ref``."""

    kind: SideKind
    ref: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.ref}"


def parse_side(text: str) -> SideSpec:
    """``run:ID``, ``system:ID|KEY`` or ``predicted:ID|KEY`` as a :class:`SideSpec`; a :class:`NnperfError`
    saying what to write otherwise."""
    kind, sep, ref = text.strip().partition(":")
    ref = ref.strip()
    if not sep or kind not in KINDS or not ref:
        raise NnperfError(f"cannot compare {text!r}: name a side as run:ID, system:ID|KEY or predicted:ID|KEY "
                          "(ids and keys as `nnperf systems` lists them)")
    if kind == "run" and not ref.isdigit():
        raise NnperfError(f"cannot compare {text!r}: a run is named by its number, e.g. run:3")
    return SideSpec(kind, ref)  # type: ignore[arg-type]


@dataclass(frozen=True)
class LayerTime:
    """One layer's time (seconds) on one side; a member of a fused group after the first has 0 and its
    ``group`` names the group whose time its first member holds."""

    layer: str
    op: str
    time_s: float
    group: str = ""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: per-layer times and the whole-network time (seconds).

    ``network_source`` says where ``network_s`` comes from: 'measured' (the whole network timed end to end),
    'sum of layers' (no whole-network measurement), or 'predicted (NAME)' with the network predictor's name.
    """

    spec: str
    label: str
    model: str
    system: str
    network_s: float
    network_source: str
    layers: tuple[LayerTime, ...]
    run_id: int | None = None

    @property
    def layer_sum_s(self) -> float:
        return float(sum(t.time_s for t in self.layers))

    def op_times(self) -> tuple[OpTime, ...]:
        """Time by op type of this side's layers (see :func:`~nnperf.report.optypes.time_by_op`)."""
        return time_by_op((t.op, t.time_s) for t in self.layers)

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "label": self.label, "model": self.model, "system": self.system,
                "run_id": self.run_id, "network_s": self.network_s, "network_source": self.network_source,
                "layer_sum_s": self.layer_sum_s}


def speedup(a_s: float | None, b_s: float | None) -> float | None:
    """A time / B time; None when either is missing or not positive."""
    if a_s is None or b_s is None or a_s <= 0 or b_s <= 0:
        return None
    return a_s / b_s


@dataclass(frozen=True)
class LayerDiff:
    """A layer's time on each side (seconds; None where that side has no such layer)."""

    layer: str
    op: str
    a_s: float | None
    b_s: float | None
    a_group: str = ""
    """The fused group on side A whose time another member holds (A's time is then 0); '' when not fused."""
    b_group: str = ""

    @property
    def speedup(self) -> float | None:
        return speedup(self.a_s, self.b_s)

    @property
    def delta_s(self) -> float | None:
        """B time - A time (seconds): positive when B is slower."""
        return None if self.a_s is None or self.b_s is None else self.b_s - self.a_s


@dataclass(frozen=True)
class OpDiff:
    """An op type's total time (seconds) and share of the layer sum (0-1) on each side (0 where absent)."""

    op: str
    a_s: float
    a_share: float
    b_s: float
    b_share: float

    @property
    def speedup(self) -> float | None:
        return speedup(self.a_s, self.b_s)


@dataclass(frozen=True)
class Comparison:
    """Side A against side B: per layer, per op type and for the whole network (see :data:`CONVENTION`)."""

    a: Side
    b: Side
    layers: tuple[LayerDiff, ...]
    op_types: tuple[OpDiff, ...]

    @property
    def speedup(self) -> float | None:
        """Whole-network A time / B time."""
        return speedup(self.a.network_s, self.b.network_s)

    @property
    def slower_pct(self) -> float | None:
        """How much slower B's whole network is than A's, in percent (negative: faster)."""
        return None if self.a.network_s <= 0 else (self.b.network_s / self.a.network_s - 1.0) * 100.0

    @property
    def geomean_speedup(self) -> float | None:
        """Geometric mean of the per-layer speed-ups, over the layers timed (> 0) on both sides."""
        ratios = [d.speedup for d in self.layers if d.speedup is not None]
        return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None

    @property
    def only_in_a(self) -> tuple[str, ...]:
        return tuple(d.layer for d in self.layers if d.b_s is None)

    @property
    def only_in_b(self) -> tuple[str, ...]:
        return tuple(d.layer for d in self.layers if d.a_s is None)

    def slowdowns(self, count: int = 5) -> list[LayerDiff]:
        """The ``count`` layers that B slows down most, by added time (largest first)."""
        slower = [d for d in self.layers if d.delta_s is not None and d.delta_s > 0]
        return sorted(slower, key=lambda d: (-(d.delta_s or 0.0), d.layer))[:count]

    def to_dict(self, top: int = 5) -> dict[str, Any]:
        """The JSON document ``nnperf compare --json`` prints ("nnperf-compare", version 1; seconds)."""
        return {
            "format": COMPARE_FORMAT[0], "version": COMPARE_FORMAT[1], "convention": CONVENTION,
            "a": self.a.to_dict(), "b": self.b.to_dict(),
            "network": {"a_s": self.a.network_s, "b_s": self.b.network_s, "speedup": self.speedup,
                        "slower_pct": self.slower_pct},
            "geomean_layer_speedup": self.geomean_speedup,
            "layers": [{"layer": d.layer, "op": d.op, "a_s": d.a_s, "b_s": d.b_s, "speedup": d.speedup}
                       for d in self.layers],
            "op_types": [{"op": o.op, "a_s": o.a_s, "a_share": o.a_share, "b_s": o.b_s, "b_share": o.b_share,
                          "speedup": o.speedup} for o in self.op_types],
            "only_in_a": list(self.only_in_a), "only_in_b": list(self.only_in_b),
            "slowdowns": [{"layer": d.layer, "delta_s": d.delta_s, "speedup": d.speedup} for d in self.slowdowns(top)],
        }


def compare(a: Side, b: Side) -> Comparison:
    """Layer by layer (A's order, then the layers only B has, in B's order) and op type by op type."""
    b_times = {t.layer: t for t in b.layers}
    a_names = {t.layer for t in a.layers}
    layers: list[LayerDiff] = []
    for t in a.layers:
        other = b_times.get(t.layer)
        layers.append(LayerDiff(t.layer, t.op, t.time_s, other.time_s if other else None,
                                _fused_into(t), _fused_into(other) if other else ""))
    layers += [LayerDiff(t.layer, t.op, None, t.time_s, "", _fused_into(t)) for t in b.layers
               if t.layer not in a_names]
    a_ops = {o.op: o for o in a.op_times()}
    b_ops = {o.op: o for o in b.op_times()}
    order = list(a_ops) + [op for op in b_ops if op not in a_ops]
    empty = OpTime("", 0.0, 0.0, 0)
    ops = tuple(OpDiff(op, a_ops.get(op, empty).total_s, a_ops.get(op, empty).share, b_ops.get(op, empty).total_s,
                       b_ops.get(op, empty).share) for op in order)
    return Comparison(a, b, tuple(layers), ops)


def _fused_into(t: LayerTime) -> str:
    return t.group if t.group and t.time_s == 0 else ""


# -- reading a side ----------------------------------------------------------------------------------------------
def load_side(store: Store, spec: SideSpec, model: str | None = None, network: Network | None = None) -> Side:
    """The side ``spec`` names, read from ``store``.

    ``system:`` needs ``model`` (the name its runs were stored under, as given to ``nnperf profile``);
    ``predicted:`` needs ``network`` (the loaded ``model``). Raises :class:`NnperfError` (a
    :class:`~nnperf.errors.StoreError` for an unknown run or system) with what is missing.
    """
    if spec.kind == "run":
        run = store.run(int(spec.ref))
        return run_side(store, run, store.system(run.system_id), str(spec))
    if spec.kind == "system":
        if not model:
            raise NnperfError(f"{spec} needs --model MODEL: which of the system's profiled networks to compare")
        system = store.system(spec.ref)
        return run_side(store, latest_run(store, system, model), system, str(spec))
    if network is None:
        raise NnperfError(f"{spec} needs --model MODEL: the network to predict")
    system = store.system(spec.ref)
    prediction = load_stored_model(store, spec.ref).predict(network)
    return prediction_side(prediction, str(spec), model or network.name, system)


def latest_run(store: Store, system: SystemRecord, model: str) -> RunRecord:
    """The newest finished run of ``model`` on ``system`` that holds a measurement."""
    runs = [r for r in store.runs(system_id=system.id, model=model) if r.status == "done"]
    for run in reversed(runs):
        if store.has_network_measurement(run.id) or store.layer_measurements(run_id=run.id):
            return run
    models = sorted({r.model for r in store.runs(system_id=system.id) if r.status == "done"})
    has = f"it has finished runs of {', '.join(models)}" if models else "it has no finished run"
    raise NnperfError(f"system {system.id} ({system.label}) in {store.path} has no finished run of {model!r}; {has}")


def run_side(store: Store, run: RunRecord, system: SystemRecord, spec: str) -> Side:
    """A stored run's per-layer times (its own per-layer method) and whole-network time.

    Members of a fused group share the group's time: the first one holds it and the others 0, so that sums count
    the group once. Framework nodes outside the IR that a profiler run recorded become layers of op 'framework'.
    """
    method = run.method if run.method in (Method.ISOLATED.value, Method.PROFILER.value) else None
    records = store.layer_measurements(run_id=run.id, method=method) if method else []
    seen: set[str] = set()
    layers: list[LayerTime] = []
    for r in records:
        group = r.group or r.layer
        layers.append(LayerTime(r.layer, r.op, 0.0 if group in seen else r.median_s,
                                group if r.group_size > 1 else ""))
        seen.add(group)
    wholes = store.network_measurements(run_id=run.id)
    if wholes:
        extra = wholes[-1].extra
        layers += [LayerTime(name.removeprefix(UNATTRIBUTED_PREFIX), "framework", seconds)
                   for name, seconds in extra.items() if name.startswith(UNATTRIBUTED_PREFIX)]
    if not wholes and not layers:
        raise NnperfError(f"run {run.id} in {store.path} holds no measurement yet")
    network_s, source = (wholes[-1].median_s, "measured") if wholes else (sum(t.time_s for t in layers),
                                                                         "sum of layers")
    status = "" if run.status == "done" else f", {run.status}"
    label = f"run {run.id}: {run.model} on {system.label} ({run.method}{status})"
    return Side(spec, label, run.model, system.label, network_s, source, tuple(layers), run.id)


def prediction_side(prediction: NetworkPrediction, spec: str, model: str, system: SystemRecord) -> Side:
    """A calibrated model's per-layer predictions; the whole network is its primary network predictor's."""
    layers = tuple(LayerTime(p.layer, p.op, p.latency_s) for p in prediction.layers)
    label = f"predicted: {prediction.network} on {system.label} (system {system.id}, {prediction.method})"
    return Side(spec, label, model, system.label, prediction.latency_s, f"predicted ({prediction.method})", layers)


# -- CSV ---------------------------------------------------------------------------------------------------------
CSV_COLUMNS = ("layer", "op", "a_s", "b_s", "speedup")
"""The header of :func:`write_csv`: seconds, and speed-up = a_s / b_s (empty where a side lacks the layer)."""

def write_csv(comparison: Comparison, path: str | Path) -> int:
    """Write the per-layer table as CSV (:data:`CSV_COLUMNS`); returns the rows written, header excluded."""
    return write_rows(path, CSV_COLUMNS, [(d.layer, d.op, d.a_s, d.b_s, d.speedup) for d in comparison.layers])


# -- terminal ----------------------------------------------------------------------------------------------------
def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}x"


def _time(seconds: float | None, group: str = "") -> str:
    if seconds is None:
        return "-"
    return f"fused ({group})" if group else ms(seconds)


def layer_table(comparison: Comparison) -> Table:
    """Per layer: op type, A ms, B ms and the speed-up A/B; a layer one side lacks shows '-' there."""
    table = Table(title=Text(f"per-layer times; {CONVENTION}"), title_justify="left", show_footer=True)
    table.add_column("#", justify="right")
    table.add_column("layer", footer="sum of layers")
    table.add_column("op type")
    table.add_column("A ms", justify="right", footer=ms(comparison.a.layer_sum_s))
    table.add_column("B ms", justify="right", footer=ms(comparison.b.layer_sum_s))
    table.add_column("speed-up A/B", justify="right",
                     footer=_ratio(speedup(comparison.a.layer_sum_s, comparison.b.layer_sum_s)))
    table.add_column("note")
    for i, d in enumerate(comparison.layers, start=1):
        note = "only in A" if d.b_s is None else "only in B" if d.a_s is None else ""
        table.add_row(str(i), d.layer, d.op, _time(d.a_s, d.a_group), _time(d.b_s, d.b_group), _ratio(d.speedup),
                      note)
    return table


def op_table(comparison: Comparison) -> Table:
    """Time by op type on each side: total ms and share of the layer sum, and the speed-up A/B."""
    table = Table(title=Text(f"time by op type; {CONVENTION}"), title_justify="left")
    for column, justify in (("op type", "left"), ("A ms", "right"), ("A share", "right"), ("B ms", "right"),
                            ("B share", "right"), ("speed-up A/B", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for o in comparison.op_types:
        table.add_row(o.op, ms(o.a_s), f"{o.a_share:.1%}", ms(o.b_s), f"{o.b_share:.1%}", _ratio(o.speedup))
    return table


def _names(names: Sequence[str], count: int = 5) -> str:
    return ", ".join(names[:count]) + (f", ... ({len(names)} in all)" if len(names) > count else "")


def comparison_summary(comparison: Comparison, top: int = 5) -> list[str]:
    """Both sides, the whole-network speed-up, the geometric mean of the per-layer ones, the largest slowdowns
    and the layers one side lacks, one line each."""
    a, b = comparison.a, comparison.b
    lines = [f"A = {a.label}: whole network {ms(a.network_s)} ms ({a.network_source})",
             f"B = {b.label}: whole network {ms(b.network_s)} ms ({b.network_source})"]
    ratio, slower = comparison.speedup, comparison.slower_pct
    if ratio is not None and slower is not None:
        how = f"{slower:.1f}% slower" if slower > 0 else f"{-slower:.1f}% faster" if slower < 0 else "as fast"
        lines.append(f"whole network: speed-up {ratio:.3g}x (B is {how} than A)")
    geomean = comparison.geomean_speedup
    if geomean is not None:
        counted = sum(1 for d in comparison.layers if d.speedup is not None)
        lines.append(f"geometric mean of the per-layer speed-ups: {geomean:.3g}x over {counted} layer(s)")
    worst = comparison.slowdowns(top)
    if worst:
        lines.append("largest slowdowns in B: " + ", ".join(
            f"{d.layer} +{ms(d.delta_s or 0.0)} ms ({_ratio(d.speedup)})" for d in worst))
    for side, names in (("A", comparison.only_in_a), ("B", comparison.only_in_b)):
        if names:
            lines.append(f"only in {side}: {len(names)} layer(s): {_names(names)}")
    return lines

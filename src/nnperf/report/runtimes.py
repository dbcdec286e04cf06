"""Which runtime to ship: the ranking of one network's latency across calibrated systems as a table and a figure."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnperf.report._format import figure_metadata, pyplot, signed_pct, write_png

if TYPE_CHECKING:
    from rich.table import Table


@dataclass(frozen=True)
class RuntimeLatency:
    """One calibrated system's predicted latency of the network (seconds), and, when verified, its measured median
    over the interleaved rounds with their interquartile range over the median (``measured_iqr_rel``)."""

    system_id: int
    label: str
    backend: str
    predicted_s: float
    measured_s: float | None = None
    measured_iqr_rel: float | None = None

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured, None when not measured."""
        return None if self.measured_s is None else self.predicted_s / self.measured_s - 1


@dataclass(frozen=True)
class Skipped:
    """A calibrated system the network was not ranked on, and why (an operator it cannot run, a calibration that
    does not cover a layer type, a system of another host when measuring)."""

    system_id: int
    label: str
    reason: str


@dataclass(frozen=True)
class RuntimeRanking:
    """The network's latency on each calibrated system, fastest predicted first."""

    network: str
    runtimes: tuple[RuntimeLatency, ...]
    skipped: tuple[Skipped, ...]
    verified: bool
    rounds: int = 0
    """Interleaved rounds measured (0 when not verified)."""

    @property
    def predicted_fastest(self) -> RuntimeLatency:
        return self.runtimes[0]

    @property
    def measured_fastest(self) -> RuntimeLatency | None:
        measured = [r for r in self.runtimes if r.measured_s is not None]
        return min(measured, key=lambda r: r.measured_s or math.inf) if measured else None

    @property
    def kendall_tau(self) -> float | None:
        """Kendall's tau between the predicted and the measured order (None unless two or more were measured, or
        where either order is one tie: no order to compare)."""
        measured = [r for r in self.runtimes if r.measured_s is not None]
        if len(measured) < 2:
            return None
        from scipy.stats import kendalltau

        tau = float(kendalltau([r.predicted_s for r in measured], [r.measured_s for r in measured]).statistic)
        return None if math.isnan(tau) else tau

    def to_dict(self) -> dict[str, object]:
        fastest = self.measured_fastest
        return {
            "format": "nnperf-runtimes", "version": 1, "network": self.network, "verified": self.verified,
            "rounds": self.rounds,
            "runtimes": [{"rank": i + 1, "system_id": r.system_id, "system": r.label, "backend": r.backend,
                          "predicted_s": r.predicted_s, "measured_s": r.measured_s,
                          "measured_iqr_rel": r.measured_iqr_rel, "error": r.error}
                         for i, r in enumerate(self.runtimes)],
            "predicted_fastest": self.predicted_fastest.label,
            "measured_fastest": None if fastest is None else fastest.label,
            "kendall_tau": self.kendall_tau,
            "skipped": [{"system_id": s.system_id, "system": s.label, "reason": s.reason} for s in self.skipped],
        }


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.3f}"


def ranking_table(ranking: RuntimeRanking) -> Table:
    """One row per runtime, fastest predicted first: predicted ms, the slowdown against the fastest, and, when
    verified, the measured median with its spread and the prediction's error."""
    from rich.table import Table

    title = f"{ranking.network}: predicted latency per calibrated runtime"
    if ranking.verified:
        title += f", measured interleaved over {ranking.rounds} rounds"
    table = Table(title=title, title_justify="left")
    columns = ["rank", "system", "predicted ms", "vs fastest"]
    if ranking.verified:
        columns += ["measured ms", "IQR", "measured rank", "error"]
    for column in columns:
        table.add_column(column, justify="left" if column == "system" else "right")
    fastest = ranking.predicted_fastest.predicted_s
    measured = sorted((r for r in ranking.runtimes if r.measured_s is not None), key=lambda r: r.measured_s or 0)
    measured_rank = {r.system_id: i + 1 for i, r in enumerate(measured)}
    for i, r in enumerate(ranking.runtimes):
        row = [str(i + 1), f"{r.label} (#{r.system_id})", _ms(r.predicted_s), f"{r.predicted_s / fastest:.2f}x"]
        if ranking.verified:
            row += [_ms(r.measured_s), "" if r.measured_iqr_rel is None else f"{r.measured_iqr_rel:.1%}",
                    str(measured_rank.get(r.system_id, "")), "" if r.error is None else signed_pct(r.error)]
        table.add_row(*row)
    return table


def ranking_summary(ranking: RuntimeRanking) -> list[str]:
    """The verdict lines: the predicted fastest, and when verified, whether the measurement agrees."""
    lines = [f"predicted fastest: {ranking.predicted_fastest.label}"]
    fastest = ranking.measured_fastest
    if fastest is not None:
        agrees = "agrees" if fastest.system_id == ranking.predicted_fastest.system_id else "differs"
        tau = ranking.kendall_tau
        lines.append(f"measured fastest: {fastest.label} ({agrees}); Kendall tau of the two orders "
                     f"{'n/a' if tau is None else f'{tau:.2f}'}")
    for s in ranking.skipped:
        lines.append(f"skipped {s.label} (#{s.system_id}): {s.reason}")
    return lines


def ranking_figure(ranking: RuntimeRanking) -> Any:
    """Horizontal bars of the predicted latency per runtime (fastest at the top), with the measured median and its
    interquartile range beside each where verified."""
    plt = pyplot()
    runtimes = list(reversed(ranking.runtimes))
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.55 * len(runtimes)), layout="constrained")
    ys = list(range(len(runtimes)))
    height = 0.38 if ranking.verified else 0.6
    ax.barh([y + (height / 2 if ranking.verified else 0) for y in ys], [r.predicted_s * 1e3 for r in runtimes],
            height=height, label="predicted")
    if ranking.verified:
        shown = [(y, r) for y, r in zip(ys, runtimes) if r.measured_s is not None]
        spread = [(r.measured_iqr_rel or 0) * (r.measured_s or 0) * 1e3 / 2 for _, r in shown]
        ax.barh([y - height / 2 for y, _ in shown], [(r.measured_s or 0) * 1e3 for _, r in shown], height=height,
                xerr=spread, capsize=3, label="measured (median, IQR)")
        ax.legend(loc="lower right")
    ax.set_yticks(ys, [r.label for r in runtimes])
    ax.set_xlabel("latency per inference (ms)")
    ax.set_title(f"{ranking.network}: which runtime to ship?")
    return fig


def plot_ranking(ranking: RuntimeRanking, path: str | Path) -> Path:
    """:func:`ranking_figure` as a PNG, with the network and the systems in its metadata."""
    fig = ranking_figure(ranking)
    return write_png(fig, Path(path), figure_metadata(fig.axes[0].get_title(), Network=ranking.network,
                                                      Systems="; ".join(r.label for r in ranking.runtimes)))

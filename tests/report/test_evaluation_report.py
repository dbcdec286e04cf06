"""The evaluation report (nnperf.report.evaluation): figures whose every text lies inside them and whose axes
follow the data, and an HTML page with provenance, per-layer tables, unambiguous columns, captions and CSS that
keeps long headings and wide tables inside the page; the per-layer CSV.

Figures use hand-made evaluations (exact errors, long names); the HTML and CSV use one evaluation measured on
the fake backend into a store, so that the provenance is read back from a real store. No browser renders the
page here (headless Chromium is not installed): the layout checks read the CSS.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from harness_presets import SHORT_HARNESS
from networks import residual_conv_net
from nnperf.campaign import ProfileConfig, measure_networks
from nnperf.errors import OutputFileError
from nnperf.measure.backends._fake import CostModel, FakeBackend
from nnperf.prediction import fit_system_model
from nnperf.prediction.evaluation import Evaluation, LayerComparison, NetworkComparison, evaluate
from nnperf.report.evaluation import (
    LAYER_CSV_COLUMNS,
    _error_limits,
    _figure_5,
    _figure_7,
    provenance,
    report_html,
    write_layer_csv,
    write_report,
)
from nnperf.store import Store

LONG_SYSTEM = "torch/cpu[memory_format=channels_last,threads=16,interop_threads=1,allocator=jemalloc]"


def handmade(errors: dict[str, float], system: str = LONG_SYSTEM) -> Evaluation:
    """One network per entry, 1 ms measured whole, every method ``errors[name]`` off; two layers each."""
    networks = tuple(NetworkComparison(
        network=name, macs=10**6, measured_s=1e-3, measured_spread=0.01, measured_layer_sum_s=1e-3,
        predicted_layer_sum_s=1e-3 * (1 + error),
        predicted_s={"previous": 1e-3 * (1 + error), "composed": 1e-3 * (1 + error / 2)},
        layers=(LayerComparison("conv1", "conv", "conv", 6e-4, 6e-4 * (1 + error)),
                LayerComparison("relu1", "relu", "relu", 4e-4, 4e-4 * (1 + error))),
        prediction_time_s=1e-4, run_id=i + 1) for i, (name, error) in enumerate(errors.items()))
    return Evaluation(system, networks, ("previous", "composed"), {})


WITHIN_10 = {f"a-rather-long-network-name-{i:02d}": e for i, e in enumerate((0.08, -0.06, 0.03, -0.095, 0.01))}


# -- figures -----------------------------------------------------------------------------------------------------
def _drawn_texts(fig: Any) -> Iterator[tuple[str, Any]]:
    """Every visible, non-empty text the figure draws: titles, axis labels, the tick labels inside the view
    limits (matplotlib keeps a few outside them undrawn) and legends, each with a name for the message."""
    for text in fig.texts:
        yield "figure title", text
    for ax in fig.axes:
        yield "axes title", ax.title
        yield "x label", ax.xaxis.label
        yield "y label", ax.yaxis.label
        for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if min(low, high) <= tick.get_loc() <= max(low, high):
                    yield "tick label", tick.label1
        legend = ax.get_legend()
        if legend is not None:
            yield "legend", legend
            for text in legend.get_texts():
                yield "legend entry", text


@pytest.mark.parametrize("draw", [_figure_5, _figure_7], ids=["fig5", "fig7"])
@pytest.mark.parametrize("system", [LONG_SYSTEM, "fake/cpu[threads=1]"])
def test_every_text_of_a_figure_lies_inside_it(draw: Any, system: str) -> None:
    fig = draw(handmade(WITHIN_10, system))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    checked = 0
    for what, artist in _drawn_texts(fig):
        if not artist.get_visible() or (hasattr(artist, "get_text") and not artist.get_text()):
            continue
        extent = artist.get_window_extent(renderer)
        assert (extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1 and extent.y0 >= box.y0 - 1
                and extent.y1 <= box.y1 + 1), f"{what} {getattr(artist, 'get_text', lambda: '')()!r}: {extent}"
        checked += 1
    assert checked >= 10  # a title, two labels, ticks and a legend at least
    assert fig.texts and "Fig." in fig.texts[0].get_text()


def test_fig7_axis_follows_the_errors_and_keeps_0() -> None:
    fig = _figure_7(handmade(WITHIN_10))
    low, high = fig.axes[0].get_ylim()
    assert -12 <= low < -9.5 and 8 < high <= 12  # errors -9.5% .. +8%, 12% of the span as margin, not +/-100
    fig = _figure_7(handmade({"a": 0.03, "b": 0.05}))
    low, high = fig.axes[0].get_ylim()
    assert low < 0 and 5 < high < 7  # all errors positive: 0 stays in view
    fig = _figure_7(handmade({"a": 1.5, "b": -0.2}))
    low, high = fig.axes[0].get_ylim()
    assert low < -20 and high > 150  # nothing clipped at +/-100% any more


def test_error_limits_margin_is_arithmetic() -> None:
    assert _error_limits([-10.0, 30.0]) == pytest.approx((-10 - 0.12 * 40, 30 + 0.12 * 40))
    assert _error_limits([2.0, 3.0]) == pytest.approx((0 - 1.0, 3 + 1.0))  # the 1% floor on a small span
    assert _error_limits([float("inf"), 5.0]) == pytest.approx((-1.0, 6.0))  # a non-finite error is not drawn


def test_fig5_axes_follow_the_layer_times() -> None:
    fig = _figure_5(handmade(WITHIN_10))
    ax = fig.axes[0]
    # layers measure 0.4 and 0.6 ms, predicted within -9.5% .. +8%: limits are the extremes / 1.5 and * 1.5
    assert ax.get_xlim() == pytest.approx((0.4 * 0.905 / 1.5, 0.6 * 1.08 * 1.5))


# -- HTML --------------------------------------------------------------------------------------------------------
class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def all(self, tag: str) -> list[Node]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                found += ([child] if child.tag == tag else []) + child.all(tag)
        return found

    def ancestor(self, tag: str) -> Node | None:
        node = self.parent
        while node is not None and node.tag != tag:
            node = node.parent
        return node


class TreeBuilder(HTMLParser):
    VOID = frozenset({"meta", "img", "br", "link", "input", "hr"})

    def __init__(self) -> None:
        super().__init__()
        self.root = self.node = Node("#root", {}, None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.node)
        self.node.children.append(node)
        if tag not in self.VOID:
            self.node = node

    def handle_endtag(self, tag: str) -> None:
        assert self.node.tag == tag, f"</{tag}> closes <{self.node.tag}>"
        assert self.node.parent is not None
        self.node = self.node.parent

    def handle_data(self, data: str) -> None:
        self.node.children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.node is builder.root  # every element closed
    return builder.root


def table_rows(table: Node) -> tuple[list[str], list[list[str]]]:
    header = [th.text() for th in table.all("th")]
    rows = [[td.text() for td in tr.all("td")] for tr in table.all("tbody")[0].all("tr")]
    return header, rows


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Evaluation, Any, Path]]:
    """An evaluation of two unseen networks on the fake backend, its provenance, and the store's path."""
    path = tmp_path_factory.mktemp("store") / "m.db"
    backend = FakeBackend(model=CostModel(noise_sigma=0.0, network_factor=0.9))
    config = ProfileConfig(per_layer="isolated", harness=SHORT_HARNESS)
    with Store(path) as store:
        runs = measure_networks(backend, store, [residual_conv_net(f"cal{c}", c, 8) for c in (4, 8, 16)], config)
        system = backend.system()
        model = fit_system_model(runs, system.key, system.label)
        evaluation = evaluate(model, measure_networks(
            backend, store, [residual_conv_net("unseen", 12, 12), residual_conv_net("=wide", 6, 20)], config))
        source = provenance(store, evaluation, "9.9.9", generated_at=1_700_000_000.0)
    yield evaluation, source, path


@pytest.fixture(scope="module")
def page(measured: tuple[Evaluation, Any, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Node]:
    evaluation, source, _ = measured
    out = tmp_path_factory.mktemp("report")
    paths = write_report(evaluation, out, source)
    assert [p.name for p in paths] == ["fig5_layers.png", "fig7_networks.png", "report.html"]
    text = (out / "report.html").read_text(encoding="utf-8")
    return text, parse(text)


def test_provenance_block_holds_the_stored_system_and_runs(measured: tuple[Evaluation, Any, Path],
                                                           page: tuple[str, Node]) -> None:
    evaluation, source, path = measured
    _, root = page
    [block] = [s for s in root.all("section") if s.attrs.get("id") == "provenance"]
    dts, dds = block.all("dt"), block.all("dd")
    fields = dict(zip([d.text() for d in dts], [d.text() for d in dds], strict=True))
    with Store(path) as store:
        [run_a, run_b] = [store.run(n.run_id) for n in evaluation.networks]  # type: ignore[arg-type]
        system = store.system(run_a.system_id)
    host = system.host
    assert fields["report generated"] == "2023-11-14 22:13:20 UTC"  # 1.7e9 s after the epoch
    assert fields["nnperf version"] == "9.9.9"
    assert fields["backend"] == "fake" and system.label in fields["system"]
    assert fields["threads"] == system.options["threads"] == "1"
    assert fields["CPU model"] == host["cpu_model"] and fields["host name"] == host["hostname"]
    assert fields["logical cores"] == str(host["logical_cores"])
    assert fields["CPU frequency governor"] == (host["governor"] or "not recorded")
    for package, version in host["versions"].items():
        assert f"{package} {version}" in fields["package versions (when measured)"]
    assert "numpy" in host["versions"]
    assert fields["evaluation runs (store run ids)"] == (f"unseen: run {run_a.id} ({run_a.status}), "
                                                         f"=wide: run {run_b.id} ({run_b.status})")
    assert fields["calibration runs (store run ids)"] == "1, 2, 3"
    assert fields["store"] == str(path)
    assert source.system.id == system.id


def test_a_collapsible_per_layer_table_per_network_matches_the_evaluation(
        measured: tuple[Evaluation, Any, Path], page: tuple[str, Node]) -> None:
    evaluation, _, _ = measured
    _, root = page
    details = root.all("details")
    assert len(details) == len(evaluation.networks) == 2
    for block, network in zip(details, evaluation.networks, strict=True):
        assert block.all("summary")[0].text().startswith(f"{network.network}: {len(network.layers)} layers")
        header, rows = table_rows(block.all("table")[0])
        assert header == ["layer", "op type", "model", "isolated layer ms (measured)", "layer predicted ms",
                          "error"]
        assert [r[:3] for r in rows] == [[c.layer, c.op, c.key] for c in network.layers]
        assert [r[1] for r in rows] == ["conv", "relu", "conv", "add"]
        for row, layer in zip(rows, network.layers, strict=True):
            assert float(row[3]) == pytest.approx(layer.measured_s * 1e3, rel=0.01)
            assert float(row[4]) == pytest.approx(layer.predicted_s * 1e3, rel=0.01)
            assert float(row[5].rstrip("%")) == pytest.approx(layer.error * 100, abs=0.05)


def test_measured_columns_say_which_measurement_and_everything_has_a_caption(page: tuple[str, Node]) -> None:
    _, root = page
    headers = [th.text() for th in root.all("th")]
    assert "measured ms" not in headers and "measured ms (t)" not in headers
    assert "sum of isolated layers ms (t)" in headers and "whole network ms (measured)" in headers
    assert "PreVIous (c): predicted ms (error)" in headers
    assert all("measured" not in h or "isolated" in h or "whole network" in h for h in headers), headers
    tables, images = root.all("table"), root.all("img")
    assert len(tables) == 4 + 2 and len(images) == 2  # summary, networks, Table I, II, one per network
    for element in tables + images:
        figure = element.ancestor("figure")
        assert figure is not None, element.tag
        [caption] = figure.all("figcaption")
        assert len(caption.text()) > 40
    captions = [c.text() for c in root.all("figcaption")]
    assert any(c.startswith("Fig. 7:") for c in captions) and any(c.startswith("Fig. 5:") for c in captions)
    assert any(c.startswith("Table I (PreVIous") for c in captions)


def test_css_wraps_long_headings_and_scrolls_wide_tables_in_their_box(page: tuple[str, Node]) -> None:
    text, root = page
    assert "nan" not in root.all("p")[0].text()  # no calibration wall time recorded: none printed
    css = root.all("style")[0].text()
    rules = {selector.strip(): body for selector, body in
             (rule.split("{", 1) for rule in css.split("}") if "{" in rule)}
    heading_rule = next(body for selector, body in rules.items() if "h1" in selector.split(", "))
    assert "overflow-wrap: anywhere" in heading_rule
    assert "overflow-x: auto" in rules[".scroll"]
    for table in root.all("table"):  # every table sits in a scrolling box, so the page itself never scrolls
        assert table.parent is not None and table.parent.attrs.get("class") == "scroll"
    assert "max-width: 100%" in rules["img"]
    assert text.count("data:image/png;base64,") == 2  # still one self-contained file


def test_report_without_a_store_says_provenance_is_not_recorded() -> None:
    evaluation = handmade(WITHIN_10)
    page = report_html(evaluation, {"fig5_layers.png": b"", "fig7_networks.png": b""})
    [block] = [s for s in parse(page).all("section") if s.attrs.get("id") == "provenance"]
    assert "Not recorded" in block.text()


# -- CSV ---------------------------------------------------------------------------------------------------------
def test_layer_csv_has_a_row_per_layer_in_seconds(measured: tuple[Evaluation, Any, Path], tmp_path: Path) -> None:
    evaluation, source, _ = measured
    path = tmp_path / "layers.csv"
    assert write_layer_csv(evaluation, path, source.system.key) == 8
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == LAYER_CSV_COLUMNS
    expected = [(n, c) for n in evaluation.networks for c in n.layers]
    assert len(rows) == len(expected)
    for row, (network, layer) in zip(rows, expected, strict=True):
        assert row["system"] == evaluation.system == "fake/cpu[threads=1]"
        assert row["system_key"] == source.system.key
        assert row["run_id"] == str(network.run_id)
        assert (row["layer"], row["op"], row["model"]) == (layer.layer, layer.op, layer.key)
        assert float(row["measured_s"]) == layer.measured_s and float(row["predicted_s"]) == layer.predicted_s
        assert float(row["error"]) == pytest.approx(layer.predicted_s / layer.measured_s - 1)
    assert {row["network"] for row in rows} == {"unseen", "'=wide"}  # a formula-like name is escaped
    with pytest.raises(OutputFileError, match="cannot write"):
        write_layer_csv(evaluation, tmp_path)  # a folder

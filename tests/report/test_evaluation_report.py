"""The evaluation report (nnperf.report.evaluation): figures whose every text lies inside them and whose axes
follow the data, and an HTML page with provenance, per-layer tables, unambiguous columns, captions and CSS that
keeps long headings and wide tables inside the page; the per-layer CSV.

Figures use hand-made evaluations (exact errors, long names); the HTML and CSV use one evaluation measured on
the fake backend into a store, so that the provenance is read back from a real store. The layout checks here
read the HTML and CSS; tests/report/test_report_in_chromium.py renders the page in headless Chromium.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import replace
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
from nnperf.report.evaluation import LAYER_CSV_COLUMNS, report_figures, write_layer_csv, write_report
from nnperf.report.evaluation_figures import _error_limits, figure_5, figure_7
from nnperf.report.evaluation_html import report_html
from nnperf.report.provenance import provenance
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
        for text in ax.texts:
            yield "annotation", text
        legend = ax.get_legend()
        if legend is not None:
            yield "legend", legend
            for text in legend.get_texts():
                yield "legend entry", text
    for legend in fig.legends:
        yield "figure legend", legend
        for text in legend.get_texts():
            yield "legend entry", text


@pytest.mark.parametrize("draw", [figure_5, figure_7], ids=["fig5", "fig7"])
@pytest.mark.parametrize("system", [LONG_SYSTEM, "fake/cpu[threads=1]"])
@pytest.mark.parametrize("width", ["wide", "narrow"])
def test_every_text_of_a_figure_lies_inside_it(draw: Any, system: str, width: Any) -> None:
    fig = draw(handmade(WITHIN_10, system), width)
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


def _error_axis(fig: Any) -> Any:
    return fig.axes[1]


def test_fig7_prints_every_error_and_shows_small_and_large_ones_together() -> None:
    evaluation = handmade({"a": 0.003, "b": 1.77})
    fig = figure_7(evaluation)
    ax = _error_axis(fig)
    low, high = ax.get_xlim()
    assert ax.get_xscale() == "symlog" and low < 0 and high > 177  # +177% fits, 0.3% is linear near 0
    printed = {t.get_text() for t in ax.texts}
    for network in evaluation.networks:  # every bar carries its value
        for method in evaluation.methods:
            assert f"{100 * network.error(method):+.1f}%" in printed
    latency = fig.axes[0]
    assert [t.get_text() for t in latency.get_yticklabels()] == ["a\n1 ms", "b\n1 ms"]  # the milliseconds
    widths = sorted(p.get_width() for p in latency.patches)
    assert widths == pytest.approx([1.0, 1.0])  # the measured bars, in ms


def test_fig7_grows_taller_not_smaller_with_more_networks() -> None:
    few = figure_7(handmade({"a": 0.1, "b": 0.2}))
    many = figure_7(handmade({f"n{i}": 0.01 * i for i in range(20)}))
    assert few.get_size_inches()[0] == many.get_size_inches()[0] <= 9.2  # never wider than the page
    assert many.get_size_inches()[1] > 3 * few.get_size_inches()[1]


def test_fig5_names_the_layers_furthest_off_in_milliseconds() -> None:
    evaluation = handmade({"small": 0.05, "big-miss": 0.9})
    fig = figure_5(evaluation)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels[0].startswith("big-miss/conv1: 0.6 ms measured, 1.14 predicted")  # 0.54 ms off: the worst
    assert len(labels) == 3
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "marker: small" in legend and "marker: big-miss" in legend  # which point is which network
    assert "+/-10%" in legend and "2x off" in legend


def test_error_limits_margin_is_arithmetic() -> None:
    assert _error_limits([-10.0, 30.0]) == pytest.approx((-10 - 0.12 * 40, 30 + 0.12 * 40))
    assert _error_limits([2.0, 3.0]) == pytest.approx((0 - 1.0, 3 + 1.0))  # the 1% floor on a small span
    assert _error_limits([float("inf"), 5.0]) == pytest.approx((-1.0, 6.0))  # a non-finite error is not drawn


def test_fig5_axes_follow_the_layer_times() -> None:
    fig = figure_5(handmade(WITHIN_10))
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
    VOID = frozenset({"meta", "img", "br", "link", "input", "hr", "wbr", "source"})

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
        assert header == ["layer", "kind", "output", "MACs", "alone ms", "IQR", "share", "predicted ms", "error"]
        assert [r[0] for r in rows] == [c.layer for c in network.layers]
        assert [r[1] for r in rows] == ["conv:standard", "relu", "conv:pointwise", "eltwise"]  # kernel kinds
        total = sum(c.measured_s for c in network.layers)
        for row, layer in zip(rows, network.layers, strict=True):
            assert row[2] == "x".join(str(d) for d in layer.output_shape)
            assert float(row[4]) == pytest.approx(layer.measured_s * 1e3, rel=0.01)
            assert float(row[6].rstrip("%")) == pytest.approx(100 * layer.measured_s / total, abs=0.05)
            assert float(row[7]) == pytest.approx(layer.predicted_s * 1e3, rel=0.01)
            assert float(row[8].rstrip("%")) == pytest.approx(layer.error * 100, abs=0.05)
        conv = network.layers[0]
        assert conv.macs > 0 and conv.output_shape[0] == 1


def _cells(root: Node, table_id: str) -> list[Node]:
    [figure] = [f for f in root.all("figure") if f.attrs.get("id") == table_id]
    return figure.all("td")


def test_cells_align_by_content_carry_their_header_and_flag_big_errors(page: tuple[str, Node]) -> None:
    _, root = page
    for th in root.all("th"):
        assert th.attrs["class"] in {"num", "text"}
    assert [th.attrs["class"] for th in root.all("table")[0].all("th")] == ["text", "text", "num", "num", "num",
                                                                             "num", "text"]
    for td in root.all("td"):  # the phone's cards label every value with its header
        assert td.attrs["data-label"]
    [figure] = [f for f in root.all("figure") if f.attrs.get("id") == "predicted"]
    header = [th.text() for th in figure.all("th")]
    for tr in figure.all("tbody")[0].all("tr"):
        for name, td in zip(header[1:], tr.all("td")[1:], strict=True):
            error = float(td.text().split("(")[1].rstrip("%)")) / 100
            assert ("big" in td.attrs["class"]) == (abs(error) > 0.10), (name, td.text())


def test_measured_columns_say_which_measurement_and_everything_has_a_caption(page: tuple[str, Node]) -> None:
    _, root = page
    headers = [th.text() for th in root.all("th")]
    assert "measured ms" not in headers
    assert {"t ms", "t-hat ms", "whole ms", "alone ms", "adjusted ms", "PreVIous (c)"} <= set(headers)
    captions = [c.text() for c in root.all("figcaption")]
    assert any("t ms: sum of the layers' times measured alone (Eq. 5)" in c for c in captions)  # abbreviations
    assert any("whole ms: median time of the whole network run as one" in c for c in captions)
    tables, images = root.all("table"), root.all("img")
    assert len(tables) == 5 + 2 and len(images) == 2  # methods, measured, predicted, Table I, II; per network
    for element in tables + images:
        figure = element.ancestor("figure")
        assert figure is not None, element.tag
        [caption] = figure.all("figcaption")
        assert len(caption.text()) > 40
    assert any(c.startswith("Fig. 7:") for c in captions) and any(c.startswith("Fig. 5:") for c in captions)
    assert any(c.startswith("Table I (PreVIous") for c in captions)
    [terms] = [s for s in root.all("section") if s.attrs.get("id") == "terms"]
    defined = [dt.text() for dt in terms.all("dt")]
    assert "PreVIous" in defined and "Eq. 6, PreVIous (c)" in defined and "noise floor" in defined
    assert "Velasco-Montero" in terms.all("ol")[0].text()  # cited
    assert "issue" not in root.text().lower()


def test_css_fits_tables_to_the_page_and_stacks_them_as_cards_on_a_phone(page: tuple[str, Node]) -> None:
    text, root = page
    assert "nan" not in root.all("p")[0].text()  # no calibration wall time recorded: none printed
    css = root.all("style")[0].text()
    assert "@media (max-width: 640px)" in css
    phone = css[css.index("@media"):]
    assert "table.cards thead { display: none; }" in phone and "content: attr(data-label)" in phone
    assert "position: sticky" in css  # a long table keeps its header in view
    for table in root.all("table"):  # every table sits in a box that scrolls, not the page
        assert table.parent is not None and "scroll" in table.parent.attrs.get("class", "")
    for picture in root.all("picture"):  # a phone gets the narrow rendering, whose text is 9 px or more there
        [source], [img] = picture.all("source"), picture.all("img")
        assert source.attrs["media"] == "(max-width: 640px)"
        assert float(source.attrs["data-min-text-px"]) * 388 / 408 >= 9  # 420 px less margins, 408 px figure
        assert float(img.attrs["data-min-text-px"]) >= 9  # the laptop rendering is never shrunk (<= 1,104 px)
    assert text.count("data:image/png;base64,") == 4  # still one self-contained file


def test_figures_carry_where_they_come_from_in_their_png_metadata(measured: tuple[Evaluation, Any, Path],
                                                                  tmp_path: Path) -> None:
    from PIL import Image

    evaluation, source, _ = measured
    write_report(evaluation, tmp_path, source)
    with Image.open(tmp_path / "fig7_networks.png") as image:
        text = dict(image.text)  # type: ignore[attr-defined]
    assert text["Title"].startswith("Fig. 7: how close is each method's whole-network prediction?")
    assert text["System"] == evaluation.system
    assert text["Software"].startswith("nnperf ") and text["Source"] == source.command
    assert text["Calibrated"] == source.calibrated and " to " in text["Calibrated"]
    assert float(text["Smallest text px"]) >= 9


def test_report_without_a_store_says_provenance_is_not_recorded() -> None:
    evaluation = handmade(WITHIN_10)
    page = report_html(evaluation, report_figures(evaluation))
    [block] = [s for s in parse(page).all("section") if s.attrs.get("id") == "provenance"]
    assert "Not recorded" in block.text()


# -- noise -------------------------------------------------------------------------------------------------------
def _with(evaluation: Evaluation, spread: float, adjusted_factor: float | None = None) -> Evaluation:
    return replace(evaluation, networks=tuple(
        replace(n, measured_spread=spread, adjusted_s=None if adjusted_factor is None else n.measured_s
                * adjusted_factor) for n in evaluation.networks))


def test_a_noisy_run_warns_and_a_quiet_one_does_not() -> None:
    quiet = _with(handmade({"resnet18": 0.05, "mobilenet_v2": -0.04}), spread=0.02, adjusted_factor=1.01)
    assert not quiet.noise().warnings and not quiet.noise().noisy
    assert 'id="noise-warning"' not in report_html(quiet, report_figures(quiet))
    busy = _with(quiet, spread=0.19, adjusted_factor=1 / 1.3)  # rounds spread 19%, the machine 1.3x slower
    noise = busy.noise()
    assert noise.noisy and noise.noisy_networks == (("resnet18", 0.19), ("mobilenet_v2", 0.19))
    assert [name for name, _ in noise.drifted_networks] == ["resnet18", "mobilenet_v2"]
    assert noise.floor == pytest.approx(0.30)  # drift 30% beats spread 19%
    # previous is 5% and 4% off, composed half that: 2.25 points apart, well inside the 30% floor
    assert noise.close_methods == (("composed", "previous", pytest.approx(0.0225)),)
    [warning] = [a for a in parse(report_html(busy, report_figures(busy))).all("aside")
                 if a.attrs.get("id") == "noise-warning"]
    words = warning.text()
    assert "resnet18 spread 19.0%" in words and "took 1.30x its time at the calibration's speed" in words
    assert "the noise can overturn the ranking of nnperf composed before PreVIous (c)" in words


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

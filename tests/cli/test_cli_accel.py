"""``nnperf accel`` (energy, sweep, spec) and ``nnperf partition`` from the command line.

Layer tables and the shipped reference networks are cheap; the IR paths use the zoo AlexNet with
``--sparsity table`` or a tiny IR network saved as JSON with ``--sparsity measure`` on one small image.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from cli_helpers import assert_error, run_cli, run_json
from nnperf.accel import (
    AccelLayer,
    eyeriss_spec,
    load_spec,
    map_network,
    measure_sparsity,
    network_energy,
    reference_network,
)
from nnperf.ir import save_network

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"








def table_rows(out: str) -> list[list[str]]:
    """The body rows of a rich table printed to stdout, as lists of stripped cells."""
    return [[cell.strip() for cell in line.strip().strip("│").split("│")]
            for line in out.splitlines() if line.startswith("│")]


# --- accel energy on the reference tables -----------------------------------------------------------------------


def test_energy_alexnet_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "accel", "energy", "--network", "alexnet")
    assert (doc["format"], doc["version"], doc["network"]) == ("nnperf-accel-energy", 1, "alexnet")
    assert doc["sparsity_source"] == "layer table"
    layers = doc["layers"]
    assert [layer["name"] for layer in layers] == ["C1", "C2", "C3", "C4", "C5", "FC6", "FC7", "FC8"]
    expected = network_energy(reference_network("alexnet"), eyeriss_spec(16))
    assert doc["total_energy_j"] == pytest.approx(expected.total_j, rel=1e-12)
    assert doc["total_energy_j"] == pytest.approx(sum(layer["energy_j"] for layer in layers), rel=1e-12)
    assert doc["total_energy_j"] == pytest.approx(10.911e-3, rel=1e-4)  # 10.91 mJ per image at 16 bits
    for layer, ref in zip(layers, expected.layers, strict=True):
        assert set(layer["breakdown_j"]) == {"mac", "rf", "inter_pe", "glb", "dram", "clock", "control"}
        assert sum(layer["breakdown_j"].values()) == pytest.approx(layer["energy_j"], rel=1e-12)
        assert layer["energy_j"] == pytest.approx(ref.energy_j, rel=1e-12)
        assert layer["schedule"]["batch"] == ref.layer.batch  # the table's n
    running = 0.0
    for layer in layers:
        running += layer["energy_j"]
        assert layer["cumulative_energy_j"] == pytest.approx(running, rel=1e-12)
    assert layers[-1]["cumulative_energy_j"] == pytest.approx(doc["total_energy_j"], rel=1e-12)
    assert doc["spec"]["bits"] == 16 and doc["spec"]["rlc_factor"] == 3
    # AlexNet's MACs in the reference table: C1 121*3*3025*96 = 105,415,200 ...
    assert layers[0]["macs"] == 11 * 11 * 3 * 55 * 55 * 96


def test_energy_8_bits_and_without_control(capsys: pytest.CaptureFixture[str]) -> None:
    sixteen = run_json(capsys, "accel", "energy", "--network", "alexnet")["total_energy_j"]
    eight = run_json(capsys, "accel", "energy", "--network", "alexnet", "--bits", "8")
    assert eight["total_energy_j"] < sixteen
    assert eight["total_energy_j"] == pytest.approx(
        network_energy(reference_network("alexnet"), eyeriss_spec(8)).total_j, rel=1e-12)
    assert eight["spec"]["rlc_factor"] == 5

    bare = run_json(capsys, "accel", "energy", "--network", "alexnet", "--no-control")
    assert bare["total_energy_j"] < sixteen
    for layer in bare["layers"]:
        assert layer["breakdown_j"]["clock"] == 0.0
        assert layer["breakdown_j"]["control"] == 0.0
        assert layer["breakdown_j"]["mac"] > 0.0
    assert bare["breakdown_j"]["clock"] == 0.0 and bare["breakdown_j"]["control"] == 0.0
    assert (bare["spec"]["clock_power_w"], bare["spec"]["control_fraction"]) == (0.0, 0.0)
    # control off changes no data or compute energy
    full = run_json(capsys, "accel", "energy", "--network", "alexnet")
    for component in ("mac", "rf", "inter_pe", "glb", "dram"):
        assert bare["breakdown_j"][component] == pytest.approx(full["breakdown_j"][component], rel=1e-12)


TABLE_HEADER = "name,R,M,H,C,U,E,s_if,s_of,n\n"
TWO_ROWS = "L1,3,8,10,3,1,8,0,0.5,\nL2,3,16,10,8,1,8,0.5,0.25,\n"


def test_energy_from_a_table_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "two.csv"
    table.write_text(TABLE_HEADER + TWO_ROWS)
    doc = run_json(capsys, "accel", "energy", "--table", str(table))
    assert doc["network"] == "two"
    assert [layer["name"] for layer in doc["layers"]] == ["L1", "L2"]
    rows = [AccelLayer("L1", 3, 8, 10, 3, 1, 8, 0.0, 0.5), AccelLayer("L2", 3, 16, 10, 8, 1, 8, 0.5, 0.25)]
    expected = network_energy(rows, eyeriss_spec(16))  # empty n: the model's own batch
    assert doc["total_energy_j"] == pytest.approx(expected.total_j, rel=1e-12)
    assert [layer["schedule"]["batch"] for layer in doc["layers"]] == [r.schedule.batch for r in expected.layers]
    # MACs R^2 C E^2 M: 9*3*64*8 = 13824 and 9*8*64*16 = 73728
    assert [layer["macs"] for layer in doc["layers"]] == [13824, 73728]


@pytest.mark.parametrize(("text", "needles"), [
    ("name,R,M,H,C,U,E,s_if,n\nL1,3,8,10,3,1,8,0,\n", ("missing column(s) s_of",)),
    (TABLE_HEADER + "L1,3,abc,10,3,1,8,0,0.5,\n", ("row 2", "column M", "'abc' is not a number")),
    (TABLE_HEADER + "L1,3,8,10,3,1,8,0,0.5,\nL2,3,16,10,8,1,8,1.0,0.25,\n",
     ("row 3", "sparsity s_if must be in [0, 1), got 1.0")),
])
def test_bad_table_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                         needles: tuple[str, ...]) -> None:
    table = tmp_path / "bad.csv"
    table.write_text(text)
    code, out, err = run_cli(capsys, "accel", "energy", "--table", str(table))
    assert out == ""
    assert_error(code, err, str(table), *needles)


BINARY = bytes(range(256)) * 4


def test_binary_table_file_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "bad.csv"
    table.write_bytes(BINARY)
    code, out, err = run_cli(capsys, "accel", "energy", "--table", str(table))
    assert out == ""
    assert_error(code, err, str(table), "UTF-8")


def test_binary_spec_file_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_bytes(BINARY)
    code, out, err = run_cli(capsys, "accel", "energy", "--network", "alexnet", "--spec", str(spec))
    assert out == ""
    assert_error(code, err, str(spec), "UTF-8")


def test_malformed_yaml_spec_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("version: 1\nglb_kb: [100\n")
    code, out, err = run_cli(capsys, "accel", "energy", "--network", "alexnet", "--spec", str(spec))
    assert out == ""
    assert_error(code, err, str(spec), "not valid YAML", "line ")


def test_table_row_missing_its_n_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "short.csv"
    table.write_text(TABLE_HEADER + "L1,3,8,10,3,1,8,0,0.5,\nL2,3,16,10,8,1,8,0.5,0.25\n")
    code, out, err = run_cli(capsys, "accel", "energy", "--table", str(table))
    assert out == ""
    assert_error(code, err, str(table), "row 3", "n")


def test_spec_file_bits_must_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("version: 1\nbits: 8\n")
    code, out, err = run_cli(capsys, "accel", "energy", "--network", "alexnet", "--spec", str(spec), "--bits", "16")
    assert out == ""
    assert_error(code, err, "--bits 16 contradicts", "bits: 8")
    # the file's bits alone, or the same bits twice, are fine and give the 8-bit energy
    eight = network_energy(reference_network("alexnet"), eyeriss_spec(8)).total_j
    for extra in ((), ("--bits", "8")):
        doc = run_json(capsys, "accel", "energy", "--network", "alexnet", "--spec", str(spec), *extra)
        assert doc["total_energy_j"] == pytest.approx(eight, rel=1e-12)


def test_spec_file_with_a_glb_too_small(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text("version: 1\nglb_kb: 0.5\n")
    code, out, err = run_cli(capsys, "accel", "energy", "--network", "alexnet", "--spec", str(spec))
    assert out == ""
    assert_error(code, err, "GLB of 0.5 kB", "'C1'")


def test_spec_prints_yaml_that_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "accel", "spec")
    assert code == 0, err
    path = tmp_path / "spec.yaml"
    path.write_text(out)
    assert load_spec(path) == eyeriss_spec(16)
    code, out, _ = run_cli(capsys, "accel", "spec", "--bits", "8")
    assert code == 0
    data = yaml.safe_load(out)
    assert (data["version"], data["bits"], data["rlc_factor"], data["filter_rf_entries"]) == (1, 8, 5, 448)
    # a partial file comes back complete, its own values kept
    partial = tmp_path / "partial.yaml"
    partial.write_text("version: 1\nbits: 8\nglb_kb: 64\n")
    code, out, _ = run_cli(capsys, "accel", "spec", "--spec", str(partial))
    assert code == 0
    data = yaml.safe_load(out)
    assert (data["glb_kb"], data["rlc_factor"], data["pe_rows"]) == (64.0, 5, 12)


def test_energy_explain_prints_the_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "accel", "energy", "--network", "alexnet", "--explain")
    assert code == 0, err
    assert "scheduling parameters" in out
    header = next(line for line in out.splitlines() if "c_pass" in line)
    assert header.split("┃")[-2].strip() == "rules"
    # alexnet fires no exception rule; squeezenet's fire2s (1x1 over 64 channels, 16 filters) fires rules 2 and 4
    explain = [row for row in table_rows(out) if len(row) == 14]
    assert [row[0] for row in explain] == ["C1", "C2", "C3", "C4", "C5", "FC6", "FC7", "FC8"]
    assert all(row[-1] == "-" for row in explain)
    code, out, _ = run_cli(capsys, "accel", "energy", "--network", "squeezenet_v11", "--explain")
    assert code == 0
    rules = {row[0]: row[-1] for row in table_rows(out) if len(row) == 14}
    assert (rules["conv1"], rules["fire2s"], rules["fire2e3"]) == ("1+4", "2+4", "-")


def test_energy_blocks_squeezenet(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "accel", "energy", "--network", "squeezenet_v11", "--blocks")
    assert code == 0, err
    assert "reporting layer" in out
    names = [row[0] for row in table_rows(out)]
    fires = [f"F{i}{part}" for i in range(2, 10) for part in "se"]
    assert names == ["C1", *fires, "C10", "total"]
    assert len(names) - 1 == 18
    doc = run_json(capsys, "accel", "energy", "--network", "squeezenet_v11")
    blocks = {block["name"]: block for block in doc["blocks"]}
    assert len(doc["blocks"]) == 18
    assert len(blocks["F2e"]["layers"]) == 2  # expand 1x1 and 3x3
    by_layer = {layer["name"]: layer["energy_j"] for layer in doc["layers"]}
    assert blocks["F2e"]["energy_j"] == pytest.approx(sum(by_layer[n] for n in blocks["F2e"]["layers"]), rel=1e-12)


def test_energy_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "x.png"
    doc = run_json(capsys, "accel", "energy", "--network", "alexnet", "--plot", str(plot))
    assert doc["files"] == [str(plot)]
    assert plot.read_bytes()[:8] == PNG_SIGNATURE


# --- accel energy on IR networks --------------------------------------------------------------------------------


def test_energy_zoo_alexnet_with_table_sparsity(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "accel", "energy", "alexnet", "--sparsity", "table")
    assert len(doc["layers"]) == 8
    assert doc["sparsity_source"] == "sparsity borrowed from table alexnet"
    # the zoo (torchvision) AlexNet: 64/192/384/256/256 filters, 224x224 input; 714,188,480 MACs
    assert doc["macs"] == 714_188_480
    assert doc["total_energy_j"] == pytest.approx(sum(layer["energy_j"] for layer in doc["layers"]), rel=1e-12)


@pytest.mark.parametrize(("argv", "needles"), [
    (("alexnet", "--sparsity", "table:nosuch"), ("unknown reference network 'nosuch'",)),
    (("alexnet", "--sparsity", "table", "--images", "x.png"), ("--images applies to --sparsity measure only",)),
    (("alexnet", "--network", "alexnet"), ("name exactly one of MODEL, --network or --table",)),
    ((), ("name exactly one of MODEL, --network or --table",)),
])
def test_energy_source_errors(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                              needles: tuple[str, ...]) -> None:
    code, out, err = run_cli(capsys, "accel", "energy", *argv)
    assert out == ""
    assert_error(code, err, *needles)


def test_energy_tiny_ir_network_measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import cv2

    from networks import tiny_network

    net = tiny_network()
    model = tmp_path / "tiny.json"
    save_network(net, model)
    image = tmp_path / "img.png"
    assert cv2.imwrite(str(image), np.random.default_rng(7).integers(0, 256, size=(24, 24, 3), dtype=np.uint8))
    doc = run_json(capsys, "accel", "energy", str(model), "--sparsity", "measure", "--images", str(image))
    assert doc["network"] == "tiny"
    assert [layer["name"] for layer in doc["layers"]] == ["conv1", "conv2", "dw", "fc"]
    assert doc["sparsity_source"].startswith("sparsity measured on 1 image(s)")
    # MACs R^2 C E^2 M: conv1 9*3*256*8 = 55296, conv2 9*8*256*8 = 147456, depthwise 9*1*64*8 = 4608, fc 16*10 = 160
    assert [layer["macs"] for layer in doc["layers"]] == [55296, 147456, 4608, 160]
    expected = network_energy(map_network(net, measure_sparsity(net, [image])).rows, eyeriss_spec(16), batch="model")
    assert doc["total_energy_j"] == pytest.approx(expected.total_j, rel=1e-9)


# --- accel sweep ------------------------------------------------------------------------------------------------


def test_sweep_json(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "accel", "sweep", "--network", "alexnet", "--glb", "16,100,512")
    assert doc["format"] == "nnperf-accel-sweep"
    assert [p["glb_kb"] for p in doc["points"]] == [16.0, 100.0, 512.0]
    assert doc["spec"]["bits"] == 8 and doc["spec"]["glb_energy_law"] == "sqrt"  # the sweep's defaults
    energies = {p["glb_kb"]: p["energy_j"] for p in doc["points"]}
    # at the reference 100 kB the sqrt law is the constant one: the model-batch energy of the 8-bit table
    assert energies[100.0] == pytest.approx(
        network_energy(reference_network("alexnet"), eyeriss_spec(8), batch="model").total_j, rel=1e-12)
    assert doc["best"]["energy_j"] == min(energies.values())
    assert doc["best"]["glb_kb"] == 100.0
    assert doc["within_2_percent"]["glb_kb"] == 100.0
    constant = run_json(capsys, "accel", "sweep", "--network", "alexnet", "--glb", "16,100,512", "--glb-law",
                        "constant")
    assert constant["best"]["glb_kb"] == 512.0  # no cost for size: the biggest GLB wins


def test_sweep_grid_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "accel", "sweep", "--network", "alexnet", "--glb", "16,100", "--pe", "12x14,16X16",
                   "--rf-scale", "1,2")
    assert len(doc["points"]) == 2 * 2 * 2
    assert {(p["pe_rows"], p["pe_cols"]) for p in doc["points"]} == {(12, 14), (16, 16)}
    assert {p["rf_scale"] for p in doc["points"]} == {1.0, 2.0}


def test_sweep_table_marks_the_optimum(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "accel", "sweep", "--network", "alexnet", "--glb", "16,32,64,88,100,128")
    assert code == 0, err
    marks = {row[0]: row[-1] for row in table_rows(out)}
    # sqrt law, 8 bits: 128 kB is the optimum (6.69 mJ); 64 kB (6.736 mJ) is the smallest within 2%, 32 kB
    # (7.295 mJ) is not
    assert marks == {"16": "", "32": "", "64": "within 2%, smallest", "88": "", "100": "", "128": "optimum"}
    assert "smallest within 2%: 64 kB" in out


@pytest.mark.parametrize(("argv", "needles"), [
    (("--glb", "0,4"), ("--glb", "every value must be > 0", "'0,4'")),
    (("--glb", "4,big"), ("--glb", "'4,big' is not a comma-separated list of numbers")),
    (("--pe", "12y14"), ("--pe", "'12y14' is not a PE array like 12x14")),
    (("--pe", "0x14"), ("--pe", "at least one row and one column")),
    (("--rf-scale", "-1"), ("--rf-scale", "every value must be > 0")),
    (("--glb", "0.5,1"), ("alexnet: no configuration of the sweep can run the network",)),
])
def test_sweep_errors(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], needles: tuple[str, ...]) -> None:
    code, out, err = run_cli(capsys, "accel", "sweep", "--network", "alexnet", *argv, "--json")
    assert out == ""
    assert_error(code, err, *needles)


# --- partition --------------------------------------------------------------------------------------------------


def test_partition_alexnet_neupart_fig10(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "partition", "--network", "alexnet", "--bitrate", "100Mbps", "--tx-power", "1W")
    assert doc["format"] == "nnperf-partition"
    assert doc["channel"] == {"bitrate_bps": 100e6, "tx_power_w": 1.0}
    names = [p["name"] for p in doc["points"]]
    assert names == ["input", "C1", "C1+pool", "C2", "C2+pool", "C3", "C4", "C5", "C5+pool", "FC6", "FC7", "FC8"]
    # NeuPart Fig. 10: the optimum is P2, the pooling after C2, saving 26.6% against computing everything in situ
    assert doc["best"] == "C2+pool" and doc["best_index"] == 4
    assert 0.2 < doc["savings_vs_fisc"] < 0.35
    points, channel = doc["points"], doc["channel"]
    # input: AlexNet's 227*227*3 = 154587 values, 60.8% zero, 5 nonzeros per 64-bit word (8 bits)
    assert points[0]["sent_bits"] == pytest.approx(64 * 154587 * (1 - 0.608) / 5, rel=1e-12)
    assert points[0]["energy_cost_j"] == pytest.approx(
        channel["tx_power_w"] * points[0]["sent_bits"] / channel["bitrate_bps"], rel=1e-12)
    for p in points:
        assert p["energy_cost_j"] == pytest.approx(p["client_energy_j"] + 1.0 * p["sent_bits"] / 100e6, rel=1e-12)
        assert p["delay_s"] == pytest.approx(p["client_latency_s"] + p["sent_bits"] / 100e6 + p["cloud_latency_s"],
                                             rel=1e-12)
    assert points[-1]["sent_bits"] == 0.0 and points[-1]["cloud_latency_s"] == 0.0
    assert points[-1]["client_energy_j"] == pytest.approx(
        network_energy(reference_network("alexnet"), eyeriss_spec(8)).total_j, rel=1e-12)
    assert doc["savings_vs_fisc"] == pytest.approx(1 - points[4]["energy_cost_j"] / points[-1]["energy_cost_j"])
    assert doc["input"] == "RLC-coded, input sparsity 60.80%"
    quartiles = doc["quartiles"]
    assert [q["input_sparsity"] for q in quartiles] == [0.5199, 0.608, 0.6909]
    # the optimum sends an intermediate tensor, so it does not depend on the input's sparsity
    assert all(q["best_name"] == "C2+pool" for q in quartiles)
    assert quartiles[1]["fcc_energy_j"] == pytest.approx(points[0]["energy_cost_j"], rel=1e-12)
    assert doc["files"] == []


def test_partition_table_marks_the_optimum(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "partition", "--network", "alexnet", "--bitrate", "100Mbps", "--tx-power", "1W")
    assert code == 0, err
    optimum = [row for row in table_rows(out) if row[-1] == "<- optimum"]
    assert [row[:2] for row in optimum] == [["4", "C2+pool"]]
    assert "Pareto front (client energy vs end-to-end delay): C2+pool, input" in out


@pytest.mark.parametrize(("argv", "needles"), [
    (("--bitrate", "0Mbps"), ("bitrate", "> 0", "'0Mbps'")),
    (("--tx-power=-1W",), ("power", "> 0 W", "'-1W'")),
    (("--input-sparsity", "1.0"), ("sparsity", "[0, 1)", "1.0")),
    (("--cloud-tops", "0"), ("cloud throughput must be > 0 TOPS",)),
    (("--system", "1"), ("--system", "MODEL")),
])
def test_partition_bad_parameters(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                                  needles: tuple[str, ...]) -> None:
    code, out, err = run_cli(capsys, "partition", "--network", "alexnet", *argv, "--json")
    assert out == ""
    assert_error(code, err, *needles)


def test_partition_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "figs"
    out.mkdir()
    doc = run_json(capsys, "partition", "--network", "alexnet", "--out", str(out), "--sweep-bitrates", "20:100:20")
    names = ["fig10_energy_cost.png", "fig12_savings.png", "fig13a_delay.png", "pareto.png"]
    assert doc["files"] == [str(out / name) for name in names]
    for name in names:
        assert (out / name).read_bytes()[:8] == PNG_SIGNATURE


def test_partition_jpeg_input(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "partition", "--network", "alexnet", "--jpeg-bytes", "20000")
    assert doc["points"][0]["sent_bits"] == 160000.0  # 8 bits per byte
    assert doc["quartiles"] == []
    assert doc["input"] == "JPEG of 20000 bytes"
    # default channel 60 Mbit/s at 0.5 W: the JPEG costs 0.5 * 160000 / 60e6 J
    assert doc["points"][0]["energy_cost_j"] == pytest.approx(0.5 * 160000 / 60e6, rel=1e-12)
    assert doc["best"] == "input"


def test_partition_send_modes(capsys: pytest.CaptureFixture[str]) -> None:
    ofmap = run_json(capsys, "partition", "--network", "alexnet", "--send", "ofmap")
    assert [p["name"] for p in ofmap["points"]] == ["input", "C1", "C2", "C3", "C4", "C5", "FC6", "FC7", "FC8"]
    # C1's ofmap 55*55*96 = 290400 values; its RLC size follows the table's s_of
    c1 = reference_network("alexnet")[0]
    assert ofmap["points"][1]["sent_bits"] == pytest.approx(64 * 290400 * (1 - c1.ofmap_sparsity) / 5, rel=1e-12)


def test_partition_vgg16_is_fully_cloud(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "partition", "--network", "vgg16")
    # NeuPart: for VGG-16 sending the image (FCC) is optimal
    assert doc["best"] == "input" and doc["best_index"] == 0
    assert doc["savings_vs_fcc"] == 0.0
    assert doc["channel"] == {"bitrate_bps": 60e6, "tx_power_w": 0.5}


def test_partition_zoo_alexnet_ir_path(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "partition", "alexnet", "--sparsity", "table")
    points = doc["points"]
    assert points[0]["name"] == "input"
    # the zoo AlexNet's input is 3*224*224 = 150528 values, 60.8% zero, 5 per word
    assert points[0]["sent_bits"] == pytest.approx(64 * 150528 * 0.392 / 5, rel=1e-12)
    assert points[-1]["sent_bits"] == 0.0 and points[-1]["cloud_latency_s"] == 0.0
    assert doc["sparsity_source"] == "sparsity borrowed from table alexnet"
    names = [p["name"] for p in points]
    assert "features.0" not in names  # no split between conv1 and its ReLU
    assert "features.1" in names


def test_partition_unknown_system(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nnperf.store import Store

    db = tmp_path / "x.db"
    code, out, err = run_cli(capsys, "partition", "alexnet", "--sparsity", "table", "--system", "999", "--db", str(db))
    assert out == ""
    assert_error(code, err, f"no store at {db}")  # reading a system's calibration creates no store
    assert not db.exists()
    Store(db).close()
    code, out, err = run_cli(capsys, "partition", "alexnet", "--sparsity", "table", "--system", "999", "--db", str(db))
    assert out == ""
    assert_error(code, err, "no system with id 999")


def test_reference_name_as_model_takes_the_shipped_table(capsys: pytest.CaptureFixture[str]) -> None:
    # `nnperf partition alexnet` is NeuPart's AlexNet (the two-tower table), not the zoo's single tower
    doc = run_json(capsys, "partition", "alexnet", "--bitrate", "100Mbps", "--tx-power", "1W")
    assert doc["network"] == "alexnet" and "sparsity_source" not in doc
    assert doc["best"] == "C2+pool" and doc["points"][doc["best_index"]]["name"] == "C2+pool"
    energy = run_json(capsys, "accel", "energy", "alexnet")
    assert energy["total_energy_j"] == network_energy(reference_network("alexnet"), eyeriss_spec(16)).total_j
    # asking for a sparsity source maps the zoo network instead (its conv1 has 64 filters, the table's 96)
    ir = run_json(capsys, "accel", "energy", "alexnet", "--sparsity", "table")
    assert ir["layers"][0]["schedule"] and ir["total_energy_j"] != energy["total_energy_j"]


def test_sparsity_options_do_not_apply_to_layer_tables(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "accel", "energy", "--network", "alexnet", "--sparsity", "measure")
    assert code == 1 and "layer tables carry their own sparsities" in err


def test_partition_out_naming_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "figs"
    out.write_text("not a folder")
    code, stdout, err = run_cli(capsys, "partition", "--network", "alexnet", "--out", str(out))
    assert stdout == ""
    assert_error(code, err, str(out), "cannot write", "is a file, not a folder")


def test_energy_plot_naming_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, err = run_cli(capsys, "accel", "energy", "--network", "alexnet", "--plot", str(tmp_path))
    assert stdout == ""
    assert_error(code, err, str(tmp_path), "cannot write", "Is a directory")


def test_partition_reads_the_figure_sweeps_only_for_figures(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "partition", "--network", "alexnet", "--sweep-bitrates", "1:0:1")  # no --out: not read
    assert doc["best"] and doc["files"] == []
    code, out, err = run_cli(capsys, "partition", "--network", "alexnet", "--out", str(tmp_path),
                             "--sweep-bitrates", "1:0:1")
    assert out == ""
    assert_error(code, err, "--sweep-bitrates", "0 < START <= STOP", "'1:0:1'")

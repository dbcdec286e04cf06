"""Synthesis end to end on a small digits CNN trained here: Table I's stages measured, the budget kept with a
planted int8-sensitive layer, the written program reproduced by its runner in a fresh process, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from cli_helpers import assert_error, run_cli
from nnperf.api import synthesize, verify_program
from nnperf.errors import NnperfError
from nnperf.measure import HarnessConfig, RoundsConfig
from nnperf.optimize.synthesize import (
    STAGES,
    BudgetError,
    ProgramSpec,
    SynthesisError,
    TrainedDigits,
    UnsupportedModeError,
    ValidationDataError,
    ValidationSet,
    make_sources,
    read_manifest,
    train_digits,
)
from nnperf.optimize.synthesize import synthesize as synthesize_sources
from nnperf.optimize.synthesize._onnx import node_macs

QUICK = HarnessConfig(warmup_s=0.0, min_block_s=2e-4, target_ci=0.1, budget_s=0.05, min_samples=5)
QUICK_ROUNDS = RoundsConfig(min_rounds=5, max_rounds=8, min_block_s=1e-3, warmup_s=0.0, target_ci=0.05,
                            budget_s=0.5)
SIZE = 32  # at 16x16 and width 8 every layer is too small for int8 to save time here: nothing to search


@pytest.fixture(scope="module")
def digits() -> TrainedDigits:
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # two threads on a loaded 2-core machine wait on each other
    try:
        return train_digits(size=SIZE, width=16, epochs=6, seed=0)
    finally:
        torch.set_num_threads(before)


def planted(trained: TrainedDigits) -> torch.nn.Module:
    """The digits CNN with an int8-sensitive second convolution and exactly the same fp32 function: the first
    convolution gets one more output channel with zero weights (its batch norm maps it to 0), and the second
    convolution reads that dead channel with weights 1000 times its largest. fp32 multiplies them by zero; int8
    with per-channel weight scales rounds every other weight of the second convolution to zero."""
    import copy

    from torch import nn

    module = copy.deepcopy(trained.module)
    conv1, bn1, conv2 = module.features[0], module.features[1], module.features[3]
    width = conv1.out_channels
    wider1 = nn.Conv2d(1, width + 1, 3, padding=1, bias=False)
    wider_bn = nn.BatchNorm2d(width + 1).eval()
    wider2 = nn.Conv2d(width + 1, conv2.out_channels, 3, padding=1, bias=False)
    with torch.no_grad():
        wider1.weight.zero_()
        wider1.weight[:width] = conv1.weight
        for name in ("weight", "bias", "running_mean", "running_var"):
            getattr(wider_bn, name)[:width] = getattr(bn1, name)
        wider_bn.bias[width] = 0.0
        wider_bn.running_mean[width] = 0.0
        wider2.weight[:, :width] = conv2.weight
        wider2.weight[:, width] = 1000 * conv2.weight.abs().max()
    module.features[0], module.features[1], module.features[3] = wider1, wider_bn, wider2
    return module.eval()


def run_planted(trained: TrainedDigits, tmp_path: Path, budget: float, **kwargs):  # type: ignore[no-untyped-def]
    calibration, evaluation = trained.validation.split(0.1, seed=0)
    sources = make_sources(planted(trained), None, calibration, tmp_path / "work")
    return synthesize_sources(sources, evaluation.take(150), budget, tmp_path / "program", network="planted",
                              harness=QUICK, rounds=QUICK_ROUNDS, check_rounds=QUICK_ROUNDS,
                              **{"max_threads": 1, "aot": False, **kwargs})


def test_the_stages_are_measured_and_the_budget_kept_around_a_planted_sensitive_layer(
        digits: TrainedDigits, tmp_path: Path) -> None:
    result = run_planted(digits, tmp_path, budget=0.01, protocol="sequential")
    assert tuple(s.name for s in result.stages) == STAGES
    assert result.stages[0].program.spec == ProgramSpec("torch")  # single thread, fp32, chw
    assert result.stages[0].program.accuracy.drop == 0.0  # the reference itself
    assert result.reference_top1 is not None and result.reference_top1 > 0.9
    with torch.no_grad():  # the plant left the fp32 function as it was
        x = torch.from_numpy(digits.validation.inputs[:64])
        torch.testing.assert_close(planted(digits)(x), digits.module(x), rtol=1e-5, atol=1e-5)
    ort = next(s for s in result.searches if s.runtime == "onnxruntime")
    sensitive = ort.effects[1]  # the ONNX graph's second Conv: features.3
    assert sensitive.drop > 0.2  # int8 alone on it ruins the network
    assert ort.all_inexact.accuracy.drop > 0.01
    # which other layers save time in int8 depends on this machine's timings (CI once measured only one): the
    # searches take at least one of them, never one that saves nothing, and never the sensitive one
    saving = {e.layer for e in ort.effects if e.gain_s > 0} - {sensitive.layer}
    assert saving, "int8 saved time on no layer but the sensitive one: nothing to search"
    for found in (ort.greedy, ort.ilp):
        assert sensitive.layer not in found.inexact and found.drop <= 0.01
    assert ort.greedy.inexact and set(ort.greedy.inexact) <= saving
    # the ILP counts the borders of int8 regions with a model fitted to probe programs: whatever it chose, the
    # model predicts it no slower than fp32 (no layer int8 is a choice it had)
    assert ort.cost is not None and ort.cost.probes >= 1 and len(ort.cost.edges) >= len(ort.effects)
    assert ort.ilp.predicted_s is not None and ort.ilp.predicted_s <= ort.cost.base_s * (1 + 1e-9)
    assert ort.greedy.predicted_s == pytest.approx(ort.cost.latency_s(ort.greedy.inexact))
    # after the search, the all-int8 program (which the model was fitted to) and the searches' programs are timed
    # with fp32 in paired rounds, each against the model's prediction
    checked = {check.programs.split(" = ")[0]: check for check in ort.checked}
    assert "all int8" in checked and checked["all int8"].fitted
    assert checked["all int8"].layers == len(ort.effects) and checked["all int8"].measured.paired
    named = " = ".join(check.programs for check in ort.checked)
    assert "greedy" in named and ("ILP" in named) == bool(ort.ilp.inexact)
    assert checked["all int8"].predicted_ratio == pytest.approx(ort.cost.ratio(ort.all_inexact.spec.inexact))
    for check in ort.checked:
        assert check.measured.median > 0 and check.measured.denominator == "fp32"
    # the fastest of them within the budget there (fp32 included) is kept; the others are not chosen, whatever
    # their search timings
    within = [check for check in ort.checked if check.drop <= 0.01]
    fastest = min(within, key=lambda check: check.measured.median, default=None)
    kept = fastest if fastest is not None and fastest.measured.median < 1.0 else None
    assert ort.kept == ("fp32" if kept is None else kept.programs)
    others = {check.spec for check in ort.checked if check is not kept} | ({ort.all_inexact.spec.with_(inexact=())}
                                                                           if kept is not None else set())
    assert result.stage("inexact").program.spec not in others
    # the kept int8 program is tried with its weights per tensor: within the budget and faster in paired rounds,
    # it replaces the per-channel program; else it is not chosen
    granularity = ort.granularity
    assert (granularity is None) == (kept is None)
    if granularity is not None and kept is not None:
        assert granularity.spec == kept.spec.with_(int8_weights="per_tensor")
        assert (granularity.measured is None) == (granularity.drop > 0.01)
        measured = {m.spec for m in result.candidates}
        if granularity.kept:
            assert granularity.measured is not None and granularity.measured.median < 1.0
            assert granularity.measured.denominator == "per channel" and granularity.spec in measured
            assert result.stage("inexact").program.spec != kept.spec
        else:
            assert result.stage("inexact").program.spec != granularity.spec
    final = result.stage("final").program
    assert final.accuracy.drop <= 0.01
    for stage in result.stages:
        assert stage.program.latency_s > 0
    assert result.stage("final").note == result.artifact
    # sequential: the old figures, each speed-up the ratio of the search's own medians, nothing timed again
    assert result.comparison is not None and not result.comparison.rounds.paired
    base = result.stages[0].program
    for stage, row in zip(result.stages, result.manifest["table1"], strict=True):
        assert stage.speedup is not None and not stage.speedup.paired
        assert stage.speedup.median == pytest.approx(base.latency_s / stage.program.latency_s)
        assert row["speedup"] == stage.speedup.median
        assert stage.compared_s == stage.program.latency_s


def test_the_written_program_reproduces_its_outputs_in_a_fresh_process(digits: TrainedDigits,
                                                                       tmp_path: Path) -> None:
    result = run_planted(digits, tmp_path, budget=0.02)
    folder = tmp_path / "program"
    manifest = read_manifest(folder)
    assert manifest == json.loads((folder / "manifest.json").read_text()) == result.manifest
    assert manifest["budget"] == 0.02 and manifest["accuracy"]["drop"] <= 0.02
    assert [row["stage"] for row in manifest["table1"]] == list(STAGES)
    # interleaved (the default): each speed-up is the median of the per-round ratios baseline / program, taken
    # in the same rounds, with its bootstrap interval stored beside it
    comparison = result.comparison
    assert comparison is not None and comparison.rounds.paired
    assert manifest["comparison"]["protocol"] == "interleaved"
    rounds = manifest["comparison"]["rounds"]
    assert QUICK_ROUNDS.min_rounds <= rounds <= QUICK_ROUNDS.max_rounds
    baseline = np.asarray(comparison.rounds.times(comparison.baseline))
    assert len(baseline) == rounds
    for stage, row in zip(result.stages, manifest["table1"], strict=True):
        name = "final artifact" if stage.name == "final" else stage.program.spec.label()
        per_round = baseline / np.asarray(comparison.rounds.times(name))
        assert stage.speedup is not None and stage.speedup.paired
        assert row["speedup"] == stage.speedup.median == pytest.approx(float(np.median(per_round)))
        assert row["speedup_ci"] == [stage.speedup.ci_low, stage.speedup.ci_high]
        assert row["speedup_ci"][0] <= row["speedup"] <= row["speedup_ci"][1]
        assert row["compared_latency_s"] == pytest.approx(float(np.median(comparison.rounds.times(name))))
    over_ort = manifest["speedup_over_ort_fp32"]
    assert over_ort is not None and over_ort["paired"] and over_ort["rounds"] == rounds
    assert over_ort["denominator"] == "final artifact"
    # ONNX Runtime's best fp32 program is the fastest in these rounds of every one the search measured
    ort_fp32 = {m.spec.label() for m in result.candidates if m.spec.runtime == "onnxruntime" and not m.spec.inexact}
    assert len(ort_fp32) >= 2
    medians = {label: float(np.median(comparison.rounds.times(label))) for label in ort_fp32}
    assert result.ort_best_fp32 is not None and over_ort["numerator"] == result.ort_best_fp32.spec.label()
    assert result.ort_best_fp32.spec.label() == min(medians, key=medians.__getitem__)
    assert manifest["program"]["runtime"] in ("onnxruntime", "torch")
    assert set(manifest["versions"]) >= {"python", "numpy", "onnxruntime"}
    model = "model.onnx" if manifest["program"]["runtime"] == "onnxruntime" else "model.pt2"
    assert (folder / model).exists() and (folder / "run.py").exists()
    verified = verify_program(folder)
    assert verified.returncode == 0, verified.output
    assert json.loads(verified.output.splitlines()[-1])["top1_equal"] is True
    # the runner on the command line: a batch in, outputs out, the same as the stored ones
    import subprocess
    import sys

    subprocess.run([sys.executable, str(folder / "run.py"), "--input", str(folder / "check_inputs.npy"),
                    "--output", str(tmp_path / "y.npy")], check=True, timeout=300)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), np.load(folder / "check_outputs.npy"), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.slow
def test_the_faster_of_the_onnx_and_aotinductor_artifacts_is_written(digits: TrainedDigits, tmp_path: Path) -> None:
    pytest.importorskip("torch._inductor")
    result = run_planted(digits, tmp_path, 0.01, aot=True)
    note = result.stage("final").note
    # both runtimes' best programs within the budget were packaged, loaded back and timed; the note names the other
    assert {"ONNX model with its session options", "AOTInductor package"} == {
        result.artifact, note.split(" (against ")[1].rsplit(" ", 2)[0]}
    folder = tmp_path / "program"
    model = "model.onnx" if result.artifact.startswith("ONNX") else "model.pt2"
    assert (folder / model).exists()
    verified = verify_program(folder)
    assert verified.returncode == 0, verified.output


@pytest.mark.slow
def test_the_generated_runner_runs_an_aotinductor_package_in_a_fresh_process(digits: TrainedDigits,
                                                                             tmp_path: Path) -> None:
    from nnperf.optimize.synthesize._artifact import runner_script, write_artifact
    from nnperf.optimize.synthesize._torch import aoti_package, torch_runner, with_precision

    pytest.importorskip("torch._inductor")
    program = with_precision(digits.module, layout="hwc")
    x = digits.validation.inputs[:4]
    package = aoti_package(program, torch.from_numpy(x[:1]), tmp_path / "p.pt2", "hwc")
    outputs = torch_runner(program, "hwc", 1)(x)
    runner = runner_script("digits", "torch, hwc", "torch", "model.pt2", 1, (1, SIZE, SIZE), channels_last=True)
    folder = write_artifact(tmp_path / "program", package, "torch", {"format": "nnperf-synthesis", "version": 1},
                            x, outputs, None, runner)
    verified = verify_program(folder)
    assert verified.returncode == 0, verified.output
    assert json.loads(verified.output.splitlines()[-1])["max_rel_error"] < 1e-4


# ---------------------------------------------------------------------------------------------------- errors


def test_data_that_does_not_fit_the_network_is_refused(digits: TrainedDigits, tmp_path: Path) -> None:
    with pytest.raises(ValidationDataError, match=r"digits are 1-channel|\(3, 224, 224\)"):
        synthesize("resnet18", data="digits", out=tmp_path / "p")
    wrong = ValidationSet("wrong", np.zeros((4, 1, 8, 8), np.float32), None)
    with pytest.raises(ValidationDataError, match=r"\(1, 8, 8\).*\(1, 32, 32\)"):
        synthesize(digits.module, data=wrong, input_shape=(1, 1, SIZE, SIZE), out=tmp_path / "p")


def test_an_empty_or_single_sample_validation_set_is_refused(digits: TrainedDigits, tmp_path: Path) -> None:
    empty = tmp_path / "empty.npz"
    np.savez(empty, inputs=np.zeros((0, 1, SIZE, SIZE), np.float32))
    with pytest.raises(ValidationDataError, match="empty"):
        synthesize(digits.module, data=empty, input_shape=(1, 1, SIZE, SIZE), out=tmp_path / "p")
    one = ValidationSet("one", np.zeros((1, 1, SIZE, SIZE), np.float32), None)
    with pytest.raises(ValidationDataError, match="at least 2"):
        synthesize(digits.module, data=one, input_shape=(1, 1, SIZE, SIZE), out=tmp_path / "p")


@pytest.mark.parametrize("budget", ["-1%", "100%", "a lot"])
def test_a_budget_no_program_can_meet_is_refused(budget: str, tmp_path: Path) -> None:
    with pytest.raises(BudgetError, match="budget"):
        synthesize("digits-cnn", budget=budget, out=tmp_path / "p")


def test_a_layer_a_mode_cannot_take_is_refused(digits: TrainedDigits, tmp_path: Path) -> None:
    calibration, _ = digits.validation.split(0.1, seed=0)
    sources = make_sources(digits.module, None, calibration, tmp_path / "work")
    relu = next(n for n in _onnx_nodes(sources.onnx_path) if n.startswith(("Relu", "node_relu")))
    with pytest.raises(UnsupportedModeError, match=relu):
        sources.runner(ProgramSpec("onnxruntime", inexact=(relu,)))
    with pytest.raises(UnsupportedModeError, match="features.1"):  # a batch norm has no bf16 per-layer mode here
        sources.runner(ProgramSpec("torch", inexact=("features.1",)))


def _onnx_nodes(path: Path) -> list[str]:
    import onnx

    from nnperf.optimize.synthesize._onnx import named_model

    return [node.name for node in named_model(onnx.load(str(path))).graph.node]


def test_the_cli_refuses_bad_input_with_a_clear_message(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "synthesize", "resnet18", "--data", "digits", "--out", str(tmp_path / "p"))
    assert_error(code, err, "digits")
    code, _, err = run_cli(capsys, "synthesize", "digits-cnn", "--budget", "2 percent", "--out", str(tmp_path))
    assert_error(code, err, "budget")
    code, _, err = run_cli(capsys, "synthesize", "resnet18", "--data", str(tmp_path / "missing"), "--out",
                           str(tmp_path / "p"))
    assert_error(code, err, "missing")


# ------------------------------------------------------------------------------ ranked by predicted latency


def test_each_program_maps_to_the_backend_system_a_calibration_is_stored_under() -> None:
    assert ProgramSpec("torch", 2, "hwc").backend_system() == ("torch", 2, {"memory_format": "channels_last"})
    assert ProgramSpec("onnxruntime", 2, "nchwc", "parallel").backend_system() == (
        "onnxruntime", 2, {"opt_level": "all", "execution": "parallel", "inter_threads": "2"})
    assert ProgramSpec("onnxruntime").backend_system() == (
        "onnxruntime", 1, {"opt_level": "extended", "execution": "sequential", "inter_threads": "1"})
    assert ProgramSpec("onnxruntime", inexact=("conv",)).backend_system()[2]["precision"] == "int8"
    assert ProgramSpec("torch", inexact=("conv",)).backend_system()[2]["precision"] == "bf16"
    per_tensor = ProgramSpec("onnxruntime", inexact=("conv",), int8_weights="per_tensor").backend_system()[2]
    assert (per_tensor["precision"], per_tensor["int8_weights"]) == ("int8", "per_tensor")


def test_int8_weights_per_tensor_are_a_program_of_their_own_and_only_for_int8() -> None:
    per_channel = ProgramSpec("onnxruntime", inexact=("a", "b"))
    per_tensor = per_channel.with_(int8_weights="per_tensor")
    assert per_tensor != per_channel and per_tensor.mode == "int8"
    assert per_tensor.label() == "onnxruntime, 1 thread(s), plain, 2 layers int8 per tensor"
    assert per_channel.label() == "onnxruntime, 1 thread(s), plain, 2 layers int8"
    assert per_tensor.to_dict()["int8_weights"] == "per_tensor"
    # an fp32 program has no int8 weights: whatever it is given, it is the one fp32 program
    assert per_tensor.with_(inexact=()) == ProgramSpec("onnxruntime")
    with pytest.raises(SynthesisError, match="torch runs no int8 layers"):
        ProgramSpec("torch", inexact=("conv",), int8_weights="per_tensor")
    with pytest.raises(SynthesisError, match="per_channel or per_tensor, not 'per_row'"):
        ProgramSpec("onnxruntime", inexact=("a",), int8_weights="per_row")


def test_candidates_are_measured_in_the_order_of_their_predicted_latency(digits: TrainedDigits,
                                                                          tmp_path: Path) -> None:
    def predicted(spec: ProgramSpec) -> float | None:  # ONNX Runtime predicted faster with more threads
        if spec.runtime == "torch":
            return None if spec.layout == "hwc" or spec.inexact else 1e-3 / spec.threads  # no bf16 calibration
        if spec.inexact:  # asked only for every quantizable layer in int8
            return 2e-5 / spec.threads
        return 1e-4 / spec.threads + (1e-5 if spec.execution == "parallel" else 0.0)

    result = run_planted(digits, tmp_path, 0.01, max_threads=2, predict=predicted)
    order = [m.spec for m in result.candidates if not m.spec.inexact]  # in the order they were measured
    # the baseline (the reference) first; then the parallel stage, fastest predicted first (torch at 1 thread is
    # the baseline, measured already); then the kept layouts, the one without a prediction last
    assert order[:5] == [ProgramSpec("torch"), ProgramSpec("onnxruntime", 2),
                         ProgramSpec("onnxruntime", 2, execution="parallel"), ProgramSpec("onnxruntime", 1),
                         ProgramSpec("torch", 2)]
    assert (order[5].runtime, order[5].layout) == ("onnxruntime", "nchwc")
    assert (order[6].runtime, order[6].layout) == ("torch", "hwc") and len(order) == 7
    assert [m.predicted_s for m in result.candidates if m.spec == ProgramSpec("onnxruntime", 2)] == [5e-5]
    assert all(m.predicted_s is None for m in result.candidates if m.spec.inexact and m.spec.runtime == "torch")
    # an int8 program lies between its fp32 and all-int8 predictions by the MAC share of its int8 layers
    int8 = [m for m in result.candidates if m.spec.inexact and m.spec.runtime == "onnxruntime"]
    search = next(s for s in result.searches if s.runtime == "onnxruntime")
    layers = search.all_inexact.spec.inexact
    macs = node_macs(tmp_path / "work" / "fp32.onnx", layers)  # the file run_planted's sources exported
    assert len(int8) >= 2 and len({m.predicted_s for m in int8}) >= 2
    for m in int8:
        base = predicted(m.spec.with_(inexact=()))
        assert base is not None
        share = sum(macs[name] for name in m.spec.inexact) / sum(macs.values())
        assert m.predicted_s == pytest.approx(base + share * (2e-5 / m.spec.threads - base))
    assert result.manifest["table1"][0]["predicted_s"] == pytest.approx(1e-3)


def test_the_search_skips_the_candidates_a_planted_prediction_ranks_last(digits: TrainedDigits,
                                                                         tmp_path: Path) -> None:
    slowest = ProgramSpec("onnxruntime", 2, execution="parallel")

    def predicted(spec: ProgramSpec) -> float | None:  # every fp32 candidate predicted; the parallel executor last
        if spec.inexact:
            return None
        return (1.0 if spec == slowest else 1e-3) / spec.threads + (1e-4 if spec.layout in ("hwc", "nchwc") else 0.0)

    result = run_planted(digits, tmp_path, 0.01, max_threads=2, predict=predicted, inexact=False, measure_best=2)
    measured = {m.spec for m in result.candidates}
    skipped = {k.spec: k.predicted_s for k in result.skipped}
    assert slowest not in measured and skipped == {slowest: pytest.approx(0.5)}  # ranked third of ONNX Runtime's
    assert {ProgramSpec("onnxruntime", 1), ProgramSpec("onnxruntime", 2), ProgramSpec("torch", 2)} <= measured
    assert result.skipping_saved_s > 0
    assert result.manifest["skipped"] == [{"program": slowest.label(), "predicted_s": pytest.approx(0.5)}]
    # with the prediction turned round, the parallel executor is among the two measured and nothing is skipped
    fast = run_planted(digits, tmp_path / "again", 0.01, max_threads=2, inexact=False, measure_best=2,
                       predict=lambda spec: None if spec.inexact else (1e-6 if spec == slowest else 1e-3))
    assert slowest in {m.spec for m in fast.candidates}
    assert {k.spec for k in fast.skipped} == {ProgramSpec("onnxruntime", 2)}  # a tie: the first listed is kept
    with pytest.raises(NnperfError, match="measure_best must be at least 1"):
        run_planted(digits, tmp_path / "bad", 0.01, measure_best=0)


class _Sleepy(torch.nn.Module):
    """``inner`` with 3 ms of sleep in torch before it; its ONNX export (traced once) has none."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import time

        time.sleep(0.003)
        return self.inner(x)


def test_the_fastest_fp32_program_is_decided_in_paired_rounds_not_by_single_timings(digits: TrainedDigits,
                                                                                     tmp_path: Path) -> None:
    import dataclasses

    from nnperf.optimize.synthesize._candidates import Candidates
    from nnperf.optimize.synthesize._synthesize import paired_fastest_fp32

    calibration, evaluation = digits.validation.split(0.1, seed=0)
    sources = make_sources(_Sleepy(digits.module), None, calibration, tmp_path / "work")
    candidates = Candidates(sources, evaluation.take(50), QUICK, None, lambda *_: None)
    specs = [ProgramSpec("torch"), ProgramSpec("torch", layout="hwc"), ProgramSpec("onnxruntime"),
             ProgramSpec("onnxruntime", layout="nchwc")]
    measured = [candidates.run(spec) for spec in specs]
    fastest_ort = min(measured[2:], key=lambda m: m.latency_s)
    # planted single timings that put torch, 3 ms slower a run, ahead of ONNX Runtime
    misled = [dataclasses.replace(m, timing=fastest_ort.timing) for m in measured[:2]] + [
        dataclasses.replace(m, timing=measured[0].timing) for m in measured[2:]]
    best = paired_fastest_fp32(candidates, misled)
    assert best.spec.runtime == "onnxruntime"
    # each runtime keeps exactly one fp32 program: the inexact search starts from it
    for runtime in ("torch", "onnxruntime"):
        kept = candidates.kept_fp32(runtime)
        assert len(kept) == 1, runtime
    assert candidates.kept_fp32("onnxruntime")[0].spec == best.spec
    assert candidates.within(0.01) == [*candidates.kept_fp32("torch"), *candidates.kept_fp32("onnxruntime")]


def test_an_inexact_program_is_predicted_by_the_kernel_aware_predictor_where_the_calibration_has_it() -> None:
    from nnperf.api._synthesize import program_latency_s
    from nnperf.prediction import NetworkPrediction

    both = NetworkPrediction("net", "sys", (), {"composed": 3e-3, "kernel": 1e-3, "previous": 5e-3})
    composed_only = NetworkPrediction("net", "sys", (), {"composed": 3e-3, "previous": 5e-3})
    int8 = ProgramSpec("onnxruntime", layout="nchwc", inexact=("conv1", "conv2"))
    fp32, bf16 = ProgramSpec("onnxruntime", layout="nchwc"), ProgramSpec("torch", inexact=("conv1",))
    assert int8.mode == "int8" and bf16.mode == "bf16"
    assert program_latency_s(both, int8) == 1e-3
    assert program_latency_s(composed_only, int8) == 3e-3  # no kernel-aware fit: the primary prediction
    assert program_latency_s(both, bf16) == 1e-3  # bf16 as well: every inexact program
    assert program_latency_s(composed_only, bf16) == 3e-3
    assert program_latency_s(both, fp32) == 3e-3  # fp32 keeps the composed prediction

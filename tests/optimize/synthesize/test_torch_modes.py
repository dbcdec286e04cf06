"""Torch programs of inference-program synthesis: per-layer bf16 and fp16, the whole-network bf16 fast path,
channels-last, threads, and the AOTInductor package (nnperf.optimize.synthesize._torch)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from nnperf.ir import AxisAttrs, BatchNormAttrs, ConvAttrs, Layer, LinearAttrs, Network, OpType, TensorSpec
from nnperf.measure.backends import build_torch
from nnperf.optimize.synthesize import _torch
from nnperf.optimize.synthesize._errors import SynthesisError, UnsupportedModeError
from nnperf.optimize.synthesize._torch import (
    TORCH_LAYOUTS,
    aoti_package,
    bf16_native,
    fp16_native,
    intra_op_threads,
    load_aoti,
    quantizable_modules,
    torch_runner,
    with_precision,
)

CONVS = ("layers.c1", "layers.c2", "layers.c3")
QUANTIZABLE = (*CONVS, "layers.fc")

BF16_UNIT_ROUNDOFF = 2.0 ** -8
FP16_UNIT_ROUNDOFF = 2.0 ** -11
ROUNDINGS_PER_LAYER = 3
"""A layer in reduced precision rounds its input, its weights and its output once each (oneDNN accumulates the
products in fp32), each by at most the format's unit roundoff relative to the value: 2**-8 for bf16 (8 significant
bits), 2**-11 for fp16 (11). With the seeded weights the layers' gains are about 1, so the errors of the network's
L reduced layers add to at most about L * 3 * u of the output's largest magnitude: 4 * 3 * 2**-8 = 0.047 for
bf16 on every layer (0.006 is measured), 4 * 3 * 2**-11 = 0.006 for fp16 (0.0007 measured)."""
FP32_NOISE = 1e-5
"""Above what reordering fp32 sums gives (about 1e-6 here): a reduced-precision program must err by more than
this, or it did not run in reduced precision."""


def _bound(layers: int, unit_roundoff: float) -> float:
    return layers * ROUNDINGS_PER_LAYER * unit_roundoff


def residual_cnn() -> Network:
    """conv-bn-relu x3 with a residual add of the first block's output, global average pooling and a linear
    classifier, on a 1x3x16x16 input."""
    x, a = (1, 3, 16, 16), (1, 8, 16, 16)
    conv = ConvAttrs((3, 3), padding=(1,) * 4)
    return Network("residual_cnn", (TensorSpec("x", x),), (
        Layer("c1", OpType.CONV, ("x",), (x,), a, conv),
        Layer("bn1", OpType.BATCH_NORM, ("c1",), (a,), a, BatchNormAttrs()),
        Layer("r1", OpType.RELU, ("bn1",), (a,), a),
        Layer("c2", OpType.CONV, ("r1",), (a,), a, conv),
        Layer("bn2", OpType.BATCH_NORM, ("c2",), (a,), a, BatchNormAttrs()),
        Layer("r2", OpType.RELU, ("bn2",), (a,), a),
        Layer("c3", OpType.CONV, ("r2",), (a,), a, conv),
        Layer("bn3", OpType.BATCH_NORM, ("c3",), (a,), a, BatchNormAttrs()),
        Layer("add", OpType.ADD, ("bn3", "r1"), (a, a), a),
        Layer("r3", OpType.RELU, ("add",), (a,), a),
        Layer("gap", OpType.GLOBAL_AVG_POOL, ("r3",), (a,), (1, 8, 1, 1)),
        Layer("flatten", OpType.FLATTEN, ("gap",), ((1, 8, 1, 1),), (1, 8), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 8),), (1, 10), LinearAttrs()),
    ), ("fc",))


@pytest.fixture(scope="module")
def module() -> torch.nn.Module:
    return build_torch(residual_cnn())


@pytest.fixture(scope="module")
def batch() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((32, 3, 16, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def reference(module: torch.nn.Module, batch: np.ndarray) -> np.ndarray:
    return torch_runner(module, "chw", 1)(batch)


needs_bf16 = pytest.mark.skipif(not bf16_native(), reason="this CPU has no native bf16 (oneDNN reports none)")
needs_fp16 = pytest.mark.skipif(not fp16_native(), reason="this CPU has no AVX512-FP16 or AMX-FP16")


def relative_error(y: np.ndarray, reference: np.ndarray) -> float:
    return float(np.abs(y - reference).max() / np.abs(reference).max())


def test_quantizable_modules_are_the_convolutions_and_the_linear_in_order(module: torch.nn.Module) -> None:
    assert quantizable_modules(module) == QUANTIZABLE
    assert TORCH_LAYOUTS == ("chw", "hwc")


@needs_bf16
def test_with_precision_casts_exactly_the_listed_modules_and_leaves_the_original(
        module: torch.nn.Module, batch: np.ndarray, reference: np.ndarray) -> None:
    program = with_precision(module, bf16=["layers.c2"])
    dtypes = {name: program.get_submodule(name).weight.dtype for name in QUANTIZABLE}
    assert dtypes == {"layers.c1": torch.float32, "layers.c2": torch.bfloat16, "layers.c3": torch.float32,
                      "layers.fc": torch.float32}
    assert program.get_submodule("layers.bn2").weight.dtype == torch.float32
    assert not program.training and not any(p.requires_grad for p in program.parameters())
    assert {p.dtype for p in module.parameters()} == {torch.float32}
    assert not module.get_submodule("layers.c2")._forward_hooks
    np.testing.assert_array_equal(torch_runner(module, "chw", 1)(batch), reference)
    error = relative_error(torch_runner(program, "chw", 1)(batch), reference)
    assert FP32_NOISE < error <= _bound(1, BF16_UNIT_ROUNDOFF)


@needs_bf16
def test_every_layer_bf16_takes_the_fast_path_with_the_per_layer_paths_top1(
        module: torch.nn.Module, batch: np.ndarray, reference: np.ndarray) -> None:
    fast = with_precision(module, bf16=QUANTIZABLE)
    assert {p.dtype for p in fast.parameters()} == {torch.bfloat16}  # batch normalisation too
    assert fast.get_submodule("layers.bn1").running_mean.dtype == torch.bfloat16
    assert not fast.get_submodule("layers.c1")._forward_hooks and len(fast._forward_hooks) == 1
    slow = with_precision(module, bf16=CONVS)  # one fp32 layer: every other one cast in and out
    assert slow.get_submodule("layers.bn1").weight.dtype == torch.float32
    fast_y, slow_y = torch_runner(fast, "chw", 1)(batch), torch_runner(slow, "chw", 1)(batch)
    assert FP32_NOISE < relative_error(fast_y, reference) <= _bound(4, BF16_UNIT_ROUNDOFF)
    assert FP32_NOISE < relative_error(slow_y, reference) <= _bound(3, BF16_UNIT_ROUNDOFF)
    # The smallest gap between the top two logits is 0.024 of the largest logit, above twice the bound of either
    # path's error, so both must pick the reference's class for every sample.
    np.testing.assert_array_equal(fast_y.argmax(1), slow_y.argmax(1))
    np.testing.assert_array_equal(fast_y.argmax(1), reference.argmax(1))


@needs_fp16
def test_fp16_where_native(module: torch.nn.Module, batch: np.ndarray, reference: np.ndarray) -> None:
    program = with_precision(module, fp16=["layers.c1"], bf16=["layers.c3"])
    assert program.get_submodule("layers.c1").weight.dtype == torch.float16
    assert program.get_submodule("layers.c3").weight.dtype == torch.bfloat16
    every = torch_runner(with_precision(module, fp16=QUANTIZABLE), "chw", 1)(batch)
    assert FP32_NOISE < relative_error(every, reference) <= _bound(4, FP16_UNIT_ROUNDOFF)


@needs_bf16
def test_hwc_is_channels_last_end_to_end_and_computes_what_chw_does(
        module: torch.nn.Module, batch: np.ndarray, reference: np.ndarray) -> None:
    program = with_precision(module, layout="hwc")
    weight = program.get_submodule("layers.c2").weight
    assert weight.is_contiguous(memory_format=torch.channels_last) and not weight.is_contiguous()
    seen = []
    program.get_submodule("layers.r3").register_forward_hook(lambda m, args, y: seen.append(y))
    y = torch_runner(program, "hwc", 1)(batch)
    assert seen[0].is_contiguous(memory_format=torch.channels_last)  # still channels-last after the add
    np.testing.assert_allclose(y, reference, rtol=0, atol=1e-5 * np.abs(reference).max())
    bf16 = with_precision(module, bf16=QUANTIZABLE, layout="hwc")
    assert relative_error(torch_runner(bf16, "hwc", 1)(batch), reference) <= _bound(4, BF16_UNIT_ROUNDOFF)


class _ThreadProbe(torch.nn.Module):
    """Records torch's intra-op thread count when it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(torch.get_num_threads())
        return x * 2


def test_torch_runner_sets_threads_for_the_call_and_restores_them() -> None:
    before = torch.get_num_threads()
    wanted = 1 if before > 1 else 2
    probe = _ThreadProbe()
    y = torch_runner(probe, "hwc", wanted)(np.ones((2, 3, 4, 4), dtype=np.float64))
    assert probe.seen == [wanted] and torch.get_num_threads() == before
    assert y.dtype == np.float32 and y.shape == (2, 3, 4, 4) and float(y.sum()) == 2 * 3 * 4 * 4 * 2.0
    with pytest.raises(RuntimeError, match="inside"), intra_op_threads(wanted):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


class _FixedBatch(torch.nn.Module):
    """A network whose definition fixes a batch of one, as an IR reshape to (1, 8) does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=(2, 3)).reshape(1, 3) * 3


def test_torch_runner_runs_a_fixed_batch_network_one_sample_at_a_time() -> None:
    x = np.arange(4 * 3 * 2 * 2, dtype=np.float32).reshape(4, 3, 2, 2)
    y = torch_runner(_FixedBatch(), "chw", 1)(x)
    np.testing.assert_allclose(y, x.mean(axis=(2, 3)) * 3, rtol=1e-6)


class _TwoOutputs(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x, x


def test_errors(module: torch.nn.Module, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UnsupportedModeError, match=r"'layers\.bn1', 'nope' are not a quantizable module.*"
                                                   r"layers\.c1, layers\.c2, layers\.c3, layers\.fc"):
        with_precision(module, bf16=["nope", "layers.bn1"])
    with pytest.raises(UnsupportedModeError, match="unknown layout 'nhwc'; torch programs run in chw, hwc"):
        with_precision(module, layout="nhwc")
    with pytest.raises(SynthesisError, match=r"'layers\.c1' are listed in both bf16 and fp16"):
        with_precision(module, bf16=["layers.c1"], fp16=["layers.c1"])
    with pytest.raises(SynthesisError, match="at least 1 thread, not 0"):
        torch_runner(module, "chw", 0)
    with pytest.raises(SynthesisError, match="gives 2 outputs; a synthesised program gives one"):
        torch_runner(_TwoOutputs(), "chw", 1)(np.zeros((1, 3), dtype=np.float32))
    monkeypatch.setattr(_torch, "bf16_native", lambda: False)
    monkeypatch.setattr(_torch, "fp16_native", lambda: False)
    with pytest.raises(UnsupportedModeError, match="bf16 was asked for, but this CPU has no native bf16"):
        with_precision(module, bf16=["layers.c1"])
    with pytest.raises(UnsupportedModeError, match="fp16 was asked for, but this CPU has no native fp16"):
        with_precision(module, fp16=["layers.c1"])
    assert with_precision(module).get_submodule("layers.c1").weight.dtype == torch.float32  # fp32 needs neither


def test_aoti_errors(module: torch.nn.Module, tmp_path: Path) -> None:
    with pytest.raises(SynthesisError, match=r"a \.pt2 file, not '.*model\.so'"):
        aoti_package(module, torch.zeros(1, 3, 16, 16), tmp_path / "model.so")
    with pytest.raises(SynthesisError, match="torch.export cannot capture the network: .*"):
        aoti_package(module, torch.zeros(1, 5, 16, 16), tmp_path / "model.pt2")  # 5 channels for a 3-channel conv
    with pytest.raises(SynthesisError, match="no AOTInductor package at"):
        load_aoti(tmp_path / "missing.pt2", 1)
    (tmp_path / "junk.pt2").write_bytes(b"not a zip")
    with pytest.raises(SynthesisError, match="cannot load the AOTInductor package"):
        load_aoti(tmp_path / "junk.pt2", 1)


def _compiler() -> str | None:
    return next((c for c in ("g++", "c++", "clang++") if shutil.which(c)), None)


@needs_bf16
@pytest.mark.skipif(_compiler() is None, reason="AOTInductor needs a C++ compiler (g++ or clang++); none found")
def test_aoti_round_trip_of_a_per_layer_bf16_channels_last_program(
        module: torch.nn.Module, batch: np.ndarray, tmp_path: Path) -> None:
    program = with_precision(module, bf16=["layers.c2"], layout="hwc")
    path = aoti_package(program, torch.from_numpy(batch[:1]), tmp_path / "model.pt2", "hwc")
    assert path == tmp_path / "model.pt2" and path.stat().st_size > 0
    before = torch.get_num_threads()
    run = load_aoti(path, 1)
    y = run(batch[:4])  # compiled for a batch of one: run in four chunks
    assert torch.get_num_threads() == before
    eager = torch_runner(program, "hwc", 1)(batch[:4])
    # The same bf16 layer either way, but Inductor may fuse and order the fp32 layers' sums differently, and a
    # changed last bit of c2's fp32 input can round to a different bf16 value: one bf16 rounding of slack.
    assert relative_error(y, eager) <= _bound(1, BF16_UNIT_ROUNDOFF)
    np.testing.assert_array_equal(y.argmax(1), eager.argmax(1))

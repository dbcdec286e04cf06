"""Plausibility bounds on network sizes: absurd layers are refused when built, naming the layer; the bounds
can be changed or lifted for a genuinely huge network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import assert_error, run_cli
from nnperf.errors import ImplausibleSizeError, InvalidNetworkError, NnperfError
from nnperf.ir import (
    DEFAULT_SIZE_LIMITS,
    ConvAttrs,
    Layer,
    LinearAttrs,
    Network,
    OpType,
    SizeLimits,
    TensorSpec,
    network_to_dict,
    size_limits,
)


def conv(name: str, src: str, c_in: int, c_out: int, hw: int = 56) -> Layer:
    return Layer(name, OpType.CONV, (src,), ((1, c_in, hw, hw),), (1, c_out, hw, hw),
                 ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))


def million_channel_network() -> Network:
    """The issue's example: a 1,000,000-channel convolution after a plausible one (9e12 weights)."""
    return Network("huge", (TensorSpec("x", (1, 3, 56, 56)),),
                   (conv("c1", "x", 3, 1_000_000), conv("c2", "c1", 1_000_000, 1_000_000)), ("c2",))


def test_million_channel_convolution_is_refused_naming_the_layer_and_the_way_out() -> None:
    with pytest.raises(ImplausibleSizeError) as info:
        million_channel_network()
    text = str(info.value)
    assert text.startswith("layer 'c2' (conv): 9e+12 parameters")  # 1e6 * 1e6 * 3 * 3 weights, plus 1e6 biases
    assert "4.29e+09" in text and "NNPERF_SIZE_LIMITS=off" in text
    assert isinstance(info.value, InvalidNetworkError)  # every reader already maps it to a one-line error


def test_a_dimension_of_ten_to_the_thirty_is_refused() -> None:
    with pytest.raises(ImplausibleSizeError, match=r"input 'x': 3e\+30 elements"):
        TensorSpec("x", (1, 3, 10**30, 1))
    with pytest.raises(ImplausibleSizeError, match=r"about 10\^400 elements"):  # beyond a float: no OverflowError
        TensorSpec("x", (10**400,))


def test_each_bound_is_checked_against_its_own_count() -> None:
    # a 2^32-element output is allowed, one more element is not
    relu = Layer("r", OpType.RELU, ("x",), ((2**16, 2**16),), (2**16, 2**16))
    assert relu.output_shape == (65536, 65536)
    with pytest.raises(ImplausibleSizeError, match=r"layer 'r' \(relu\): 4.3e\+09 elements in input 0"):
        Layer("r", OpType.RELU, ("x",), ((2**16 + 1, 2**16),), (2**16 + 1, 2**16))
    # a small bound on MACs alone: 100 x 11 = 1,100 MACs
    with size_limits(SizeLimits(max_macs=1000)), pytest.raises(ImplausibleSizeError, match=r"1\.1e\+03 MACs"):
        Layer("fc", OpType.LINEAR, ("x",), ((1, 100),), (1, 11), LinearAttrs())


def test_network_totals_are_bounded_even_when_every_layer_is_within() -> None:
    limits = SizeLimits(max_params=100_000)
    with size_limits(limits):
        c1 = conv("c1", "x", 3, 64, hw=8)  # 1,792 params
        c2 = conv("c2", "c1", 64, 64, hw=8)  # 36,928 params each
        c3 = conv("c3", "c2", 64, 64, hw=8)
        Network("ok", (TensorSpec("x", (1, 3, 8, 8)),), (c1, c2, c3), ("c3",))  # 75,648 in all
        c4 = conv("c4", "c3", 64, 64, hw=8)
        with pytest.raises(ImplausibleSizeError, match=r"network 'big' \(4 layers\): 1.13e\+05 parameters"):
            Network("big", (TensorSpec("x", (1, 3, 8, 8)),), (c1, c2, c3, c4), ("c4",))


def test_bounds_can_be_lifted_for_a_block_or_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with size_limits(None):
        assert million_channel_network().layers[1].output_shape == (1, 1_000_000, 56, 56)
    with pytest.raises(ImplausibleSizeError):  # restored after the block
        million_channel_network()
    monkeypatch.setenv("NNPERF_SIZE_LIMITS", "off")
    assert len(million_channel_network().layers) == 2


def test_limits_themselves_are_validated() -> None:
    assert DEFAULT_SIZE_LIMITS == SizeLimits(2**32, 2**32, 10**14)
    with pytest.raises(NnperfError, match="max_macs must be a positive int, got 0"):
        SizeLimits(max_macs=0)


def huge_ir_file(tmp_path: Path) -> Path:
    with size_limits(None):
        document = network_to_dict(million_channel_network())
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("command", [("inspect",), ("accel", "energy")])
def test_cli_refuses_an_absurd_ir_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    # before the bound: inspect printed 36 TB of memOPs without a word, and accel energy tried to allocate
    # 36 TB and ended in an internal error
    code, _, err = run_cli(capsys, *command, str(huge_ir_file(tmp_path)))
    assert_error(code, err, "huge.json", "layer 'c2' (conv)", "9e+12 parameters", "NNPERF_SIZE_LIMITS=off")

"""The memory check before a network or layer is built for measurement: what would not fit in the free
memory is refused in one line, before anything is allocated."""

from __future__ import annotations

import numpy as np
import pytest

from cli_helpers import assert_error, run_cli
from nnperf.errors import InsufficientMemoryError
from nnperf.ir import ConvAttrs, Layer, OpType
from nnperf.measure import _memory
from nnperf.measure._memory import available_memory_bytes, build_bytes, require_memory

CONV = Layer("conv", OpType.CONV, ("x",), ((1, 3, 8, 8),), (1, 16, 8, 8), ConvAttrs(kernel=(3, 3), padding=(1, 1, 1, 1)))


def test_build_bytes_counts_weights_twice_and_outputs_in_float32() -> None:
    weights = 16 * 3 * 3 * 3 + 16  # 448 parameters
    assert build_bytes([CONV]) == (2 * weights + 16 * 8 * 8) * 4  # 7,680 bytes


def test_require_memory_refuses_what_exceeds_the_headroom() -> None:
    needed = build_bytes([CONV]) + 3 * 8 * 8 * 4  # 8,448 bytes with the input
    require_memory([CONV], CONV.input_shapes, "layer 'conv'", available_bytes=needed * 2)  # fits in 80%
    with pytest.raises(InsufficientMemoryError, match=r"layer 'conv' needs about 0.0 GiB .* 0.0 GiB free"):
        require_memory([CONV], CONV.input_shapes, "layer 'conv'", available_bytes=needed)


def test_weights_drawn_a_chunk_at_a_time_are_the_values_drawn_at_once() -> None:
    # a 20,000-channel 3x3 convolution's weights were drawn in float64 at once: 26.8 GiB for 14.4 GB of float32
    from nnperf.measure.backends import _weights

    shape = (3, _weights._NORMAL_CHUNK + 5)  # more than two chunks, the last one short
    at_once, chunked = np.random.default_rng(3), np.random.default_rng(3)
    expected = (at_once.standard_normal(shape) * 0.25).astype(np.float32)
    drawn = _weights._normal(chunked, shape, 0.25)
    assert drawn.dtype == np.float32 and np.array_equal(drawn, expected)
    assert at_once.standard_normal() == chunked.standard_normal()  # the generators end in the same state


def test_the_machine_reports_its_free_memory() -> None:
    free = available_memory_bytes()
    assert free is not None and 2**26 < free < 2**50


def test_torch_backend_refuses_a_layer_that_does_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    from nnperf.measure.backends import create_backend

    monkeypatch.setattr(_memory, "available_memory_bytes", lambda: 1000)
    with create_backend("torch") as backend, pytest.raises(InsufficientMemoryError, match="layer 'conv'"):
        backend.layer_timer(CONV)


def test_accel_energy_refuses_a_network_that_does_not_fit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # before the check, a network beyond the free memory ended in the allocator's RuntimeError (exit 3)
    monkeypatch.setattr(_memory, "available_memory_bytes", lambda: 2**25)  # 32 MiB: ResNet-18 needs about 55 MB
    code, _, err = run_cli(capsys, "accel", "energy", "resnet18")
    assert_error(code, err, "network 'resnet18' needs about 0.1 GiB", "0.0 GiB free")

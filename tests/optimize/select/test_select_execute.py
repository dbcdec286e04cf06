"""Running a selection: every uniform selection and mixed ones (layouts changing between layers, ONNX Runtime's
blocked layout, OpenCV, Winograd) compute what build_torch computes, within NETWORK_TOLERANCE; what cannot run
is refused; a wrong primitive is caught; the harness times the result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch

from harness_presets import SMOKE_HARNESS
from networks import asymmetric_residual_network, conv_chain_network, relu_network, tiny_network
from nnperf.ir import Network
from nnperf.optimize.select import (
    NETWORK_TOLERANCE,
    InvalidSelectionError,
    NoConvolutionError,
    PrimitiveCosts,
    SelectionAccuracyError,
    build_selected,
    measure_selected,
    network_cost_graph,
    solve,
    uniform_selections,
    verify_selected,
)
from nnperf.primitives import (
    CHW,
    PRIMITIVES,
    Family,
    LayoutTransform,
    Primitive,
    all_primitives,
    all_transforms,
    conv_layer_configs,
    get_primitive,
    reference_conv2d,
)

NCHWC = get_primitive("ort-nchwc").availability().ok
OPENCV = get_primitive("opencv").availability().ok


def every_primitive_costs(network: Network) -> PrimitiveCosts:
    """Every registered primitive at 1 ms on every convolution, every transformation at 1 ns per element."""
    names = [p.name for p in all_primitives()]
    moves = {t.name: 1e-9 for t in all_transforms() if t.src != t.dst}
    shapes = [spec.shape for spec in network.inputs] + [layer.output_shape for layer in network.layers]
    table = {(n, c, (h, w)): {name: rate * n * c * h * w for name, rate in moves.items()}
             for n, c, h, w in (s for s in shapes if len(s) == 4)}
    return PrimitiveCosts({c: dict.fromkeys(names, 1e-3) for c in set(conv_layer_configs(network).values())}, table)


@pytest.mark.parametrize("make", [tiny_network, asymmetric_residual_network], ids=["tiny", "residual"])
def test_every_uniform_selection_computes_what_build_torch_computes(make: Any) -> None:
    network = make()
    graph = network_cost_graph(network, every_primitive_costs(network))
    uniform = uniform_selections(graph)
    usable = {p.name for p in all_primitives() if p.availability().ok}
    assert set(uniform) == usable & {o for n in graph.nodes for o in n.options}
    errors = {name: verify_selected(network, selection) for name, selection in uniform.items()}
    assert max(errors.values()) <= NETWORK_TOLERANCE
    assert max(errors.values()) > 0  # some primitive (FFT, Winograd) rounds differently: the check compares


def test_a_solved_selection_runs() -> None:
    network = asymmetric_residual_network()
    selection = solve(network_cost_graph(network, every_primitive_costs(network)), "pbqp")
    assert verify_selected(network, selection) <= NETWORK_TOLERANCE


@pytest.mark.skipif(not OPENCV, reason="OpenCV is not installed")
def test_a_mixed_selection_on_tiny_matches_build_torch() -> None:
    selection = {"conv1": "winograd-2x3", "bn1": "hwc", "relu1": "hwc", "conv2": "opencv", "add": "chw",
                 "pool": "hwc", "dw": "im2row-fhw", "cat": "hwc", "gap": "chw", "flatten": "hwc"}
    assert verify_selected(tiny_network(), selection) <= NETWORK_TOLERANCE


@pytest.mark.skipif(not NCHWC, reason="ONNX Runtime has no NCHWc kernels here")
def test_a_mixed_selection_with_the_blocked_layout_matches_build_torch() -> None:
    # c1 writes blocked for r1 to read in hwc; c2 reads hwc into blocked; add reads the blocked c2 and the chw x as
    # hwc; c3 hands its blocked output back in chw
    network = asymmetric_residual_network()
    selection = {"c1": "ort-nchwc", "r1": "hwc", "c2": "ort-nchwc", "add": "hwc", "r2": "chw", "c3": "ort-nchwc"}
    assert verify_selected(network, selection) <= NETWORK_TOLERANCE
    selection = {"c1": "im2col-hwf", "r1": "hwc", "c2": "conv1x1-hwf", "add": "chw", "c3": "ort-nchwc"}
    assert verify_selected(network, selection) <= NETWORK_TOLERANCE


def counted_moves(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the layout transformations run from now on, in order."""
    moves: list[str] = []
    run = LayoutTransform.run

    def counted(self: LayoutTransform, x: torch.Tensor, channels: int | None = None) -> torch.Tensor:
        moves.append(self.name)
        return run(self, x, channels)

    monkeypatch.setattr(LayoutTransform, "run", counted)
    return moves


def test_mec_on_a_residual_network_matches_build_torch_with_the_moves_around_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    network = asymmetric_residual_network()
    selection = {"c1": "mec-row-partition", "r1": "chw", "c2": "mec-row-partition", "add": "hwc", "r2": "hwc",
                 "c3": "mec-col"}
    moves = counted_moves(monkeypatch)
    error = verify_selected(network, selection)
    assert error <= 1e-5  # three GEMM-like convolutions, each within 1e-5
    # x to hcw for c1; c1's hcw to chw for r1; r1 to hcw for c2; c2's hcw and x to hwc for add; add, r2 and c3 stay
    # hwc (mec-col reads it); c3's hwc output back to chw
    assert sorted(moves) == ["chw->hcw", "chw->hcw", "chw->hwc", "hcw->chw", "hcw->hwc", "hwc->chw"]


def test_convolutions_in_a_row_on_mec_row_partition_keep_hcw_between_them(monkeypatch: pytest.MonkeyPatch) -> None:
    network = conv_chain_network()
    moves = counted_moves(monkeypatch)
    assert verify_selected(network, dict.fromkeys(("a", "b", "c"), "mec-row-partition")) <= 1e-5
    assert moves == ["chw->hcw", "hcw->chw"]  # in once, out once
    moves.clear()
    assert verify_selected(network, {"a": "mec-col", "b": "mec-row-partition", "c": "direct"}) <= 1e-5
    assert moves == ["chw->hwc", "hwc->hcw", "hcw->chw"]


@pytest.mark.skipif(not NCHWC, reason="ONNX Runtime has no NCHWc kernels here")
def test_the_blocked_layout_moves_straight_to_and_from_hcw(monkeypatch: pytest.MonkeyPatch) -> None:
    network = conv_chain_network()
    blocked = str(get_primitive("ort-nchwc").input_layout)
    layers = conv_layer_configs(network)
    if not get_primitive("ort-nchwc").applies(layers["a"]):
        pytest.skip("ONNX Runtime does not block the first layer here")
    moves = counted_moves(monkeypatch)
    assert verify_selected(network, {"a": "ort-nchwc", "b": "mec-row-partition", "c": "mec-col"}) <= 1e-5
    assert moves == [f"chw->{blocked}", f"{blocked}->hcw", "hcw->hwc", "hwc->chw"]


def test_mec_on_the_tiny_network_matches_build_torch() -> None:
    selection = {"conv1": "mec-col", "bn1": "hwc", "relu1": "hwc", "conv2": "mec-row-partition", "add": "chw",
                 "pool": "hwc", "dw": "mec-row-partition", "cat": "hwc", "gap": "chw", "flatten": "chw"}
    assert verify_selected(tiny_network(), selection) <= 1e-5


def test_an_activation_moves_once_per_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    network = asymmetric_residual_network()
    module = build_selected(network, {"c1": "onednn-hwc", "r1": "hwc", "c2": "onednn-chw", "add": "hwc",
                                      "r2": "hwc", "c3": "direct"})
    moves = counted_moves(monkeypatch)
    y = module(torch.rand(1, 16, 8, 8))
    # x to hwc once for c1 and add; r1 to chw for c2; c2 to hwc for add; r2 to chw for c3; c3 writes chw
    assert sorted(moves) == ["chw->hwc", "chw->hwc", "hwc->chw", "hwc->chw"]
    assert y.shape == (1, 32, 4, 4) and y.is_contiguous()


# --------------------------------------------------------------------------------------------------- errors


def test_a_selection_that_cannot_run_is_refused() -> None:
    tiny, residual = tiny_network(), asymmetric_residual_network()
    with pytest.raises(InvalidSelectionError, match=r"'c2': primitive winograd-2x3 does not apply to c16 f16 8x8 k1x1"):
        build_selected(residual, {"c1": "direct", "c2": "winograd-2x3", "c3": "direct"})
    with pytest.raises(InvalidSelectionError, match="'conv2': primitive conv1x1-fhw does not apply"):
        build_selected(tiny, {"conv1": "direct", "conv2": "conv1x1-fhw", "dw": "direct"})
    with pytest.raises(InvalidSelectionError, match="gives convolution 'dw' no primitive"):
        build_selected(tiny, {"conv1": "direct", "conv2": "direct"})
    with pytest.raises(InvalidSelectionError, match="'conv1': unknown primitive 'fastest'"):
        build_selected(tiny, {"conv1": "fastest", "conv2": "direct", "dw": "direct"})
    with pytest.raises(InvalidSelectionError, match="'nope', which is not a layer or input"):
        build_selected(tiny, {"conv1": "direct", "conv2": "direct", "dw": "direct", "nope": "chw"})
    with pytest.raises(InvalidSelectionError, match="layer 'fc' .* cannot run in 'hwc'; its layouts: chw"):
        build_selected(tiny, {"conv1": "direct", "conv2": "direct", "dw": "direct", "fc": "hwc"})
    with pytest.raises(InvalidSelectionError, match="input 'x' is handed over in chw"):
        build_selected(tiny, {"conv1": "direct", "conv2": "direct", "dw": "direct", "x": "hwc"})
    with pytest.raises(NoConvolutionError):
        build_selected(relu_network(), {})


@dataclass(frozen=True)
class _ScaledConv(Primitive):
    """A wrong convolution: its weights 1% too large."""

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: Any, threads: int = 1) -> Any:
        return lambda x: reference_conv2d(x, w * 1.01, b, config)


def test_a_wrong_primitive_is_caught() -> None:
    PRIMITIVES.register("scaled", lambda: _ScaledConv("scaled", Family.DIRECT, CHW, CHW, "test", "any"))
    try:
        # c3 is the output layer: its 1% error reaches the output unchanged
        with pytest.raises(SelectionAccuracyError, match=r"at output 'c3' by 0\.0099") as caught:
            verify_selected(asymmetric_residual_network(), {"c1": "direct", "c2": "direct", "c3": "scaled"})
        assert caught.value.error == pytest.approx(0.01, rel=0.05)
        assert caught.value.tolerance == NETWORK_TOLERANCE
    finally:
        PRIMITIVES.unregister("scaled")


def test_measure_selected_times_the_network_and_restores_threads() -> None:
    before = torch.get_num_threads()
    timing = measure_selected(asymmetric_residual_network(), {"c1": "direct", "c2": "onednn-hwc", "r1": "hwc", "c3": "direct"},
                              SMOKE_HARNESS, threads=1)
    assert 0 < timing.stats.median_s < 0.1
    assert timing.block_size >= 1
    assert torch.get_num_threads() == before

"""Vendor convolutions reachable from Python: torch's own ``conv2d`` dispatch (the framework default), oneDNN and
NNPACK through torch, ATen's im2col + GEMM, ONNX Runtime (NCHW and its NCHWc blocked kernels) and OpenCV DNN
(Winograd on and off).

Each is one library call on an already prepared layer (weights reordered, session or net built), so that
timing it times the library's kernel and the Python call, nothing else. All but torch's ``conv2d`` compute on the
CPU only (:attr:`Primitive.devices`): on CUDA operands ``conv2d`` is cuDNN's dispatch.
"""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from nnperf.primitives._base import CPU_AND_CUDA, ERROR_BOUNDS, Bound, Family, Primitive
from nnperf.primitives._config import ConvConfig, PrimitiveError, pad_input
from nnperf.primitives._device import device_type
from nnperf.primitives._layout import CHW, HWC, Layout, blocked
from nnperf.registry import Availability

if TYPE_CHECKING:
    import torch


def _torch_tuple(config: ConvConfig) -> tuple[list[int], list[int], list[int]]:
    return list(config.stride), [config.padding[0], config.padding[1]], list(config.dilation)


@dataclass(frozen=True)
class TorchConv2d(Primitive):
    """``torch.nn.functional.conv2d`` as a user's model calls it: torch picks the kernel for each layer (on a CPU
    with torch 2.13: oneDNN for larger or grouped layers, ATen's slow_conv2d or slow_conv_dilated2d for small batch-1
    NCHW ones; on CUDA, cuDNN's heuristics). This is the framework default a selection is judged against.
    Symmetric padding is ``conv2d``'s own argument; asymmetric padding, which ``conv2d`` cannot express, is applied
    with ``F.pad`` first, as an exported model's padding module does (and as
    :func:`~nnperf.primitives.reference_conv2d` does)."""

    devices: ClassVar[frozenset[str]] = CPU_AND_CUDA

    @property
    def error_bound(self) -> float:
        import torch

        # with oneDNN off, conv2d sends batches of 16 or more to NNPACK, which may choose Winograd
        onednn = torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled
        return ERROR_BOUNDS[Family.VENDOR if onednn else Family.WINOGRAD]

    def error_bound_on(self, device: str) -> float:
        # cuDNN's heuristics may pick its FFT or Winograd algorithms for a float32 convolution
        return ERROR_BOUNDS[Family.WINOGRAD] if device_type(device) == "cuda" else self.error_bound

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch.nn.functional as F

        wc = w.contiguous()
        stride, dilation, groups = list(config.stride), list(config.dilation), config.groups
        if config.symmetric_padding:
            padding = [config.padding[0], config.padding[1]]
            return lambda x: F.conv2d(x, wc, b, stride, padding, dilation, groups)
        return lambda x: F.conv2d(pad_input(x, config), wc, b, stride, 0, dilation, groups)


@dataclass(frozen=True)
class OneDnn(Primitive):
    """oneDNN's convolution through torch, on a contiguous (chw) or channels-last (hwc) tensor.

    It calls ``torch.ops.aten.mkldnn_convolution``, the op ``torch.nn.functional.conv2d`` dispatches to for
    larger layers while ``torch.backends.mkldnn`` is enabled: ``conv2d`` itself sends small batch-1 NCHW
    layers (under 20480 input elements, kernels up to 3x3, no groups) to ATen's slow_conv2d and dilated
    NCHW ones to slow_conv_dilated2d, which would not be oneDNN."""

    def applies(self, config: ConvConfig) -> bool:
        return config.symmetric_padding

    def availability(self) -> Availability:
        import torch

        if not torch.backends.mkldnn.is_available():
            return Availability.no(f"this torch build ({torch.__version__}) has no oneDNN (mkldnn)")
        if not torch.backends.mkldnn.enabled:
            return Availability.no("oneDNN is disabled (torch.backends.mkldnn.enabled is False)")
        return Availability.yes()

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch

        fmt = torch.channels_last if self.input_layout == HWC else torch.contiguous_format
        wc = w.contiguous(memory_format=fmt)
        stride, padding, dilation = _torch_tuple(config)
        conv = torch.ops.aten.mkldnn_convolution
        return lambda x: conv(x, wc, b, padding, stride, dilation, config.groups)


@functools.lru_cache(maxsize=1)
def _nnpack_probe() -> Availability:
    """NNPACK is compiled into torch's CPU wheels, but its initialisation or kernels can fail on a CPU it does not
    recognise: try one tiny convolution (after ``_nnpack_available()``, which initialises it)."""
    import torch

    if not torch._nnpack_available():
        return Availability.no("NNPACK is unavailable in this torch build (torch._nnpack_available() is False)")
    try:
        torch._nnpack_spatial_convolution(torch.ones(1, 1, 4, 4), torch.ones(1, 1, 3, 3), None, [1, 1], [1, 1])
    except RuntimeError as exc:
        return Availability.no(f"NNPACK is compiled in but its convolution fails on this CPU: {exc}".strip())
    return Availability.yes()


@dataclass(frozen=True)
class Nnpack(Primitive):
    """``torch._nnpack_spatial_convolution``: NNPACK picks its algorithm (Winograd, FFT or implicit GEMM)."""

    def applies(self, config: ConvConfig) -> bool:
        # ATen's wrapper has one (h, w) padding pair, no groups or dilation, and strides only for batch 1
        # (nnp_convolution_inference); batches go to nnp_convolution_output, which is unstrided.
        # NNPACK itself refuses padding as large as the kernel (nnp_status_unsupported_padding)
        top, left, _, _ = config.padding
        return (config.groups == 1 and config.dilation == (1, 1) and config.symmetric_padding
                and top < config.k[0] and left < config.k[1] and (config.stride == (1, 1) or config.batch == 1))

    @property
    def error_bound(self) -> float:
        return ERROR_BOUNDS[Family.WINOGRAD]  # NNPACK's 3x3 algorithm is Winograd F(6,3): 1.0e-5 seen at 64->64

    def availability(self) -> Availability:
        return _nnpack_probe()

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch

        # torch._nnpack_available() initialises NNPACK; without it every call fails ("updateOutput failed")
        torch._nnpack_available()
        stride, padding, _ = _torch_tuple(config)
        wc = w.contiguous()
        return lambda x: torch._nnpack_spatial_convolution(x, wc, b, padding, stride)


@dataclass(frozen=True)
class AtenIm2col(Primitive):
    """``torch._C._nn.thnn_conv2d(x, w, kernel, b, stride, padding)``: ATen's own unfold + GEMM (slow_conv2d)."""

    def applies(self, config: ConvConfig) -> bool:
        # the signature has neither groups nor dilation, and one padding pair
        return config.groups == 1 and config.dilation == (1, 1) and config.symmetric_padding

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch

        stride, padding, _ = _torch_tuple(config)
        wc, kernel = w.contiguous(), list(config.k)
        return lambda x: torch._C._nn.thnn_conv2d(x, wc, kernel, b, stride, padding)


def _conv_model(config: ConvConfig, w: Any, b: Any | None, input_shape: tuple[int, ...] | None = None) -> Any:
    """A one-node ONNX Conv model (opset 17) with ``w`` and ``b`` (numpy) as initializers."""
    from onnx import TensorProto, helper, numpy_helper

    inputs = ["X", "W"] + (["B"] if b is not None else [])
    node = helper.make_node("Conv", inputs, ["Y"], kernel_shape=list(config.k), strides=list(config.stride),
                            pads=list(config.padding), dilations=list(config.dilation), group=config.groups)
    inits = [numpy_helper.from_array(w, "W")] + ([numpy_helper.from_array(b, "B")] if b is not None else [])
    graph = helper.make_graph(
        [node], "conv",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(input_shape or config.input_shape()))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(config.output_shape()))], inits)
    return _onnx_model(graph, [helper.make_opsetid("", 17)])


ONNX_IR_VERSION = 8
"""The ONNX IR version the one-node models declare: the one opset 17 came with, so that an ONNX Runtime older
than the ``onnx`` package (which stamps its newest IR version by default) still reads them."""


def _onnx_model(graph: Any, opsets: list[Any]) -> Any:
    from onnx import helper

    return helper.make_model(graph, opset_imports=opsets, ir_version=ONNX_IR_VERSION)


def _ort_availability() -> Availability:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        return Availability.no(f"{exc.name} is not installed (pip install onnx onnxruntime)")
    return Availability.yes()


def _ort_session(model: Any, threads: int, level: str) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    return _inference_session(model, so)


def _inference_session(model: Any, options: Any) -> Any:
    """An ONNX Runtime CPU session of ``model``; ONNX Runtime's own errors (which are not ``RuntimeError`` s) become a
    :class:`PrimitiveError` naming it, so that a profile notes the refusal and goes on."""
    import onnxruntime as ort

    try:
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's Fail, InvalidArgument, ... derive from Exception
        raise PrimitiveError(f"ONNX Runtime {ort.__version__} refused the model: {str(exc).strip()[:300]}") from exc


@dataclass(frozen=True)
class OrtNchw(Primitive):
    """ONNX Runtime's CPU Conv (MLAS) in NCHW: a one-node session at ORT_ENABLE_EXTENDED, which leaves out the
    NCHWc transformer."""

    def availability(self) -> Availability:
        return _ort_availability()

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import torch

        model = _conv_model(config, w.detach().numpy(), None if b is None else b.detach().numpy())
        session = _ort_session(model, threads, "ORT_ENABLE_EXTENDED")
        return lambda x: torch.from_numpy(session.run(None, {"X": x.numpy()})[0])


NCHWC_DOMAIN = "com.microsoft.nchwc"


@functools.lru_cache(maxsize=1)
def nchwc_block() -> int:
    """The channel block of ONNX Runtime's NCHWc kernels on this CPU (MLAS: 16 with AVX-512, 8 with AVX2), read
    from a one-node ReorderInput session; 0 when ONNX Runtime is missing or has no NCHWc kernels."""
    if not _ort_availability().ok:
        return 0
    import numpy as np
    from onnx import TensorProto, helper

    c = 64
    node = helper.make_node("ReorderInput", ["X"], ["Y"], domain=NCHWC_DOMAIN)
    graph = helper.make_graph([node], "reorder", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, c, 1, 2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = _onnx_model(graph, [helper.make_opsetid("", 17), helper.make_opsetid(NCHWC_DOMAIN, 1)])
    try:
        session = _ort_session(model, 1, "ORT_DISABLE_ALL")
    except Exception:  # noqa: BLE001 - a build without the contrib NCHWc kernels
        return 0
    x = np.arange(c * 2, dtype=np.float32).reshape(1, c, 1, 2)  # x[c, 0, w] = 2c + w
    flat = session.run(None, {"X": x})[0].reshape(-1)
    # blocked memory is (c/B, h, w, B): channel 0 of pixel w=1 comes right after the first block's B channels
    return int(np.flatnonzero(flat == 1.0)[0])


@functools.lru_cache(maxsize=4096)
def _nchwc_graph(config: ConvConfig) -> tuple[str, ...]:
    """The node types ONNX Runtime's NCHWc transformer makes of ``config``'s Conv (ORT_ENABLE_ALL)."""
    import numpy as np
    import onnx

    w = np.zeros(config.weight_shape(), dtype=np.float32)
    model = _conv_model(config, w, np.zeros(config.f, dtype=np.float32))
    with tempfile.TemporaryDirectory(prefix="nnperf-nchwc-") as tmp:
        path = os.path.join(tmp, "optimized.onnx")
        _optimize_to(model, path)
        return tuple(f"{n.domain}:{n.op_type}" for n in onnx.load(path).graph.node)


def _optimize_to(model: Any, path: str) -> None:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = path
    _inference_session(model, so)


_NCHWC_PLAN = (f"{NCHWC_DOMAIN}:ReorderInput", f"{NCHWC_DOMAIN}:Conv", f"{NCHWC_DOMAIN}:ReorderOutput")


@dataclass(frozen=True)
class OrtNchwc(Primitive):
    """ONNX Runtime's NCHWc Conv kernel (domain com.microsoft.nchwc) on blocked input and output.

    ONNX Runtime reaches it only through its graph optimiser (ORT_ENABLE_ALL rewrites Conv into ReorderInput ->
    nchwc Conv -> ReorderOutput, reordering the weights). ``prepare`` lets the optimiser do that for the layer,
    then keeps only the nchwc Conv with the optimiser's weights, so the primitive's boundaries are blocked
    tensors and the reorders are the layout transformations. ``applies`` asks the optimiser (cached per config):
    it blocks the input only for inputs of at least 16 channels.
    """

    def applies(self, config: ConvConfig) -> bool:
        if not self.availability().ok or config.c < 16:
            return False
        return _nchwc_graph(config) == _NCHWC_PLAN

    def availability(self) -> Availability:
        available = _ort_availability()
        if available.ok and nchwc_block() == 0:
            return Availability.no("this ONNX Runtime build has no NCHWc kernels (com.microsoft.nchwc)")
        return available

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import onnx
        import torch
        from onnx import TensorProto, helper

        block = self.input_layout.block
        if block != nchwc_block():
            raise PrimitiveError(f"{self.name} was made for blocks of {block}, but ONNX Runtime uses {nchwc_block()}")
        model = _conv_model(config, w.detach().numpy(), None if b is None else b.detach().numpy())
        with tempfile.TemporaryDirectory(prefix="nnperf-nchwc-") as tmp:
            path = os.path.join(tmp, "optimized.onnx")
            _optimize_to(model, path)
            optimized = onnx.load(path)
        nodes = list(optimized.graph.node)
        if tuple(f"{n.domain}:{n.op_type}" for n in nodes) != _NCHWC_PLAN:
            raise PrimitiveError(f"ONNX Runtime did not block {config} (nodes {[n.op_type for n in nodes]})")
        conv = nodes[1]
        n_, cp = config.batch, -(-config.c // block) * block
        graph = helper.make_graph(
            [conv], "nchwc", [helper.make_tensor_value_info(conv.input[0], TensorProto.FLOAT, [n_, cp, *config.im])],
            [helper.make_tensor_value_info(conv.output[0], TensorProto.FLOAT, None)], list(optimized.graph.initializer))
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid(NCHWC_DOMAIN, 1)]
        session = _ort_session(_onnx_model(graph, opsets), threads, "ORT_DISABLE_ALL")
        name = conv.input[0]
        fb = -(-config.f // block)

        def run(x: torch.Tensor) -> torch.Tensor:
            n, cb, h, wd, bl = x.shape
            y = session.run(None, {name: x.numpy().reshape(n, cb * bl, h, wd)})[0]
            return torch.from_numpy(y).view(n, fb, *config.out, block)

        return run


@dataclass(frozen=True)
class OpenCvConv(Primitive):
    """OpenCV DNN's Convolution layer: a one-layer net read from a one-node ONNX model by the classic engine,
    with its Winograd F(6,3) kernel enabled or not (``net.enableWinograd``). With it enabled OpenCV still decides per layer
    whether Winograd applies (3x3, stride 1, dilation 1, no groups)."""

    winograd: bool = False

    @property
    def error_bound(self) -> float:
        return ERROR_BOUNDS[Family.WINOGRAD if self.winograd else Family.VENDOR]

    def applies(self, config: ConvConfig) -> bool:
        # Wrong results found by tests/primitives/test_primitive_property.py and a grid over small layers:
        # a padded unstrided 1x1 convolution returns uninitialised memory at the border (both engines), and the
        # classic engine's 3x3 depthwise kernel (groups == c == f) is wrong with some paddings and dilations.
        if config.k == (1, 1) and config.stride == (1, 1) and any(config.padding):
            return False
        if config.k == (3, 3) and 1 < config.groups == config.c == config.f:
            return False
        if not self.winograd:
            return True
        return config.k == (3, 3) and config.stride == (1, 1) and config.dilation == (1, 1) and config.groups == 1

    def availability(self) -> Availability:
        try:
            import cv2
        except ImportError:
            return Availability.no("OpenCV is not installed (pip install opencv-python-headless)")
        if not hasattr(cv2, "dnn") or not hasattr(cv2.dnn.Net, "enableWinograd"):
            return Availability.no(f"this OpenCV build ({cv2.__version__}) has no dnn module with enableWinograd")
        try:
            import onnx  # noqa: F401
        except ImportError:
            return Availability.no("onnx is not installed (pip install onnx)")
        return Availability.yes()

    def prepare(self, w: torch.Tensor, b: torch.Tensor | None, config: ConvConfig, threads: int = 1) -> Bound:
        import cv2
        import torch

        cv2.setNumThreads(threads)
        model = _conv_model(config, w.detach().numpy(), None if b is None else b.detach().numpy())
        with tempfile.TemporaryDirectory(prefix="nnperf-cv-") as tmp:
            path = os.path.join(tmp, "conv.onnx")
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
            # OpenCV 5's new engine (the default) ignores enableWinograd (2.8 ms either way on a 64->64 3x3
            # layer here); the classic engine honours it (5.2 ms off, 2.3 ms on). OpenCV 4 has only that one.
            if hasattr(cv2.dnn, "ENGINE_CLASSIC"):
                net = cv2.dnn.readNetFromONNX(path, cv2.dnn.ENGINE_CLASSIC)
            else:
                net = cv2.dnn.readNetFromONNX(path)
        net.enableWinograd(self.winograd)

        def run(x: torch.Tensor) -> torch.Tensor:
            net.setInput(x.numpy())
            return torch.from_numpy(net.forward())

        return run


SYMMETRIC = "symmetric padding"


def vendor_primitives() -> tuple[Primitive, ...]:
    """The vendor primitives; the NCHWc one's layout carries the block size ONNX Runtime uses here."""
    block = nchwc_block() or 8
    nchwc: Layout = blocked(block)
    return (
        TorchConv2d("torch-conv2d", Family.VENDOR, CHW, CHW, "torch (conv2d's own dispatch)",
                    "any kernel, stride, padding, groups, dilation"),
        OneDnn("onednn-chw", Family.VENDOR, CHW, CHW, "oneDNN (torch mkldnn_convolution)",
               f"{SYMMETRIC}; any kernel, stride, groups, dilation"),
        OneDnn("onednn-hwc", Family.VENDOR, HWC, HWC, "oneDNN (torch mkldnn_convolution)",
               f"{SYMMETRIC}; any kernel, stride, groups, dilation"),
        Nnpack("nnpack", Family.VENDOR, CHW, CHW, "NNPACK (torch)",
               f"groups 1, dilation 1, {SYMMETRIC} smaller than the kernel; stride > 1 only at batch 1"),
        AtenIm2col("aten-im2col", Family.VENDOR, CHW, CHW, "ATen slow_conv2d", f"groups 1, dilation 1, {SYMMETRIC}"),
        OrtNchw("ort-chw", Family.VENDOR, CHW, CHW, "ONNX Runtime (MLAS)",
                "any kernel, stride, padding, groups, dilation"),
        OrtNchwc("ort-nchwc", Family.VENDOR, nchwc, nchwc, "ONNX Runtime (MLAS NCHWc)",
                 "where ONNX Runtime's NCHWc transformer blocks the input (c >= 16; it decides)"),
        OpenCvConv("opencv", Family.VENDOR, CHW, CHW, "OpenCV DNN (classic engine)",
                   "any kernel, stride, padding, groups, dilation, except a padded unstrided 1x1 and a 3x3 depthwise "
                   "(OpenCV computes them wrongly)",
                   winograd=False),
        OpenCvConv("opencv-winograd", Family.VENDOR, CHW, CHW, "OpenCV DNN (classic engine)",
                   "3x3 kernel, stride 1, dilation 1, groups 1", winograd=True),
    )

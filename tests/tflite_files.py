"""Small .tflite files written for the tests, without TensorFlow: LiteRT's own schema (``ai_edge_litert``'s
generated object API) packed with ``flatbuffers``, as the TFLite converter lays models out (NHWC activations,
CONV_2D filters OHWI, DEPTHWISE_CONV_2D filters 1HW(C*m), FULLY_CONNECTED weights (out, in), int8 tensors with
their scales and zero points).

:class:`TfliteWriter` builds one subgraph; :func:`float_cnn`, :func:`int8_cnn` and :func:`ops_model` are the
models the importer's tests read (each also valid for LiteRT's interpreter, which the tests run).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6, "int16": 7, "int8": 9}
"""numpy name -> LiteRT's TensorType."""


class TfliteWriter:
    """One subgraph's tensors and operators, packed into a .tflite file by :meth:`to_bytes`."""

    def __init__(self) -> None:
        from ai_edge_litert import schema_py_generated as schema

        self.schema = schema
        self.tensors: list[Any] = []
        self.buffers: list[Any] = [schema.BufferT()]  # buffer 0: the empty one activations point at
        self.codes: dict[tuple[int, str, int], int] = {}
        self.operators: list[Any] = []
        self.rng = np.random.default_rng(0)

    def tensor(self, name: str, shape: Sequence[int], dtype: str = "float32", data: np.ndarray | None = None,
               scale: Sequence[float] | None = None, zero_point: Sequence[int] | None = None,
               axis: int = 0) -> int:
        """A tensor (an activation, or a constant when ``data`` is given), quantised when ``scale`` is given;
        its index."""
        s = self.schema
        t = s.TensorT()
        t.name, t.shape, t.type = name, list(shape), _TYPES[dtype]
        if data is not None:
            raw = np.ascontiguousarray(np.asarray(data, dtype=dtype)).reshape(-1).view(np.uint8)
            buffer = s.BufferT()
            buffer.data = raw
            self.buffers.append(buffer)
            t.buffer = len(self.buffers) - 1
        if scale is not None:
            q = s.QuantizationParametersT()
            q.scale = [float(v) for v in scale]
            q.zeroPoint = [int(v) for v in (zero_point if zero_point is not None else [0] * len(scale))]
            q.quantizedDimension = axis
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def weights(self, name: str, shape: Sequence[int], dtype: str = "float32", **quant: Any) -> int:
        """A constant of random values (int8 in -127..127 for an int8 one)."""
        if dtype == "int8":
            values = self.rng.integers(-127, 128, size=shape)
        elif dtype == "int32":
            values = self.rng.integers(-1000, 1000, size=shape)
        else:
            values = self.rng.standard_normal(shape) * 0.1
        return self.tensor(name, shape, dtype, np.asarray(values, dtype=dtype), **quant)

    def constant(self, name: str, value: Any, dtype: str = "int32") -> int:
        """A small constant operand (axes, a shape, paddings)."""
        array = np.asarray(value, dtype=dtype)
        return self.tensor(name, array.shape, dtype, array)

    def op(self, code: str, inputs: Sequence[int], outputs: Sequence[int], options: Any = None, version: int = 1,
           custom: str = "") -> None:
        """An operator by its builtin name (``CONV_2D``), with its options object (``Conv2DOptionsT``)."""
        s = self.schema
        number = getattr(s.BuiltinOperator, code)
        key = (number, custom, version)
        if key not in self.codes:
            opcode = s.OperatorCodeT()
            opcode.builtinCode, opcode.deprecatedBuiltinCode, opcode.version = number, min(number, 127), version
            if custom:
                opcode.customCode = custom
            self.codes[key] = len(self.codes)
        o = s.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = self.codes[key], list(inputs), list(outputs)
        if options is not None:
            o.builtinOptionsType = getattr(s.BuiltinOptions, type(options).__name__.removesuffix("T"))
            o.builtinOptions = options
        self.operators.append(o)

    def to_bytes(self, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
        """The .tflite file of the subgraph reading ``inputs`` and writing ``outputs``."""
        import flatbuffers

        s = self.schema
        graph = s.SubGraphT()
        graph.tensors, graph.operators = self.tensors, self.operators
        graph.inputs, graph.outputs, graph.name = list(inputs), list(outputs), "main"
        model = s.ModelT()
        model.version, model.description, model.subgraphs, model.buffers = 3, "nnperf test model", [graph], self.buffers
        model.operatorCodes = [None] * len(self.codes)
        for (number, custom, version), index in self.codes.items():
            opcode = s.OperatorCodeT()
            opcode.builtinCode, opcode.deprecatedBuiltinCode, opcode.version = number, min(number, 127), version
            opcode.customCode = custom or None
            model.operatorCodes[index] = opcode
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())

    def save(self, path: Path, inputs: Sequence[int], outputs: Sequence[int]) -> Path:
        path.write_bytes(self.to_bytes(inputs, outputs))
        return path


def _options(w: TfliteWriter, name: str, **values: Any) -> Any:
    options = getattr(w.schema, name)()
    for key, value in values.items():
        setattr(options, key, value)
    return options


def float_cnn(path: Path) -> Path:
    """A float MobileNet-like block on 1x224x224x3: conv 3x3/2 SAME + fused RELU6 (16 channels), depthwise 3x3
    SAME + fused RELU, pointwise 1x1 (a zero bias: LiteRT's CONV_2D needs one), a residual ADD, AVERAGE_POOL_2D 2x2/2, MEAN over H and W,
    FULLY_CONNECTED 16 -> 10 and SOFTMAX."""
    w = TfliteWriter()
    s = w.schema
    x = w.tensor("input", (1, 224, 224, 3))
    c1 = w.tensor("model/conv1/Relu6;model/conv1/BiasAdd;model/conv1/Conv2D", (1, 112, 112, 16))
    w.op("CONV_2D", [x, w.weights("conv1/w", (16, 3, 3, 3)), w.weights("conv1/b", (16,))], [c1],
         _options(w, "Conv2DOptionsT", padding=s.Padding.SAME, strideH=2, strideW=2,
                  fusedActivationFunction=s.ActivationFunctionType.RELU6))
    dw = w.tensor("model/dw/Relu", (1, 112, 112, 16))
    w.op("DEPTHWISE_CONV_2D", [c1, w.weights("dw/w", (1, 3, 3, 16)), w.weights("dw/b", (16,))], [dw],
         _options(w, "DepthwiseConv2DOptionsT", padding=s.Padding.SAME, strideH=1, strideW=1, depthMultiplier=1,
                  fusedActivationFunction=s.ActivationFunctionType.RELU))
    pw = w.tensor("model/pw/Conv2D", (1, 112, 112, 16))
    w.op("CONV_2D", [dw, w.weights("pw/w", (16, 1, 1, 16)),
                   w.tensor("pw/b", (16,), data=np.zeros(16))], [pw],
         _options(w, "Conv2DOptionsT", padding=s.Padding.VALID, strideH=1, strideW=1))
    add = w.tensor("model/add/add", (1, 112, 112, 16))
    w.op("ADD", [pw, c1], [add], _options(w, "AddOptionsT"))
    pool = w.tensor("model/pool/AvgPool", (1, 56, 56, 16))
    w.op("AVERAGE_POOL_2D", [add], [pool], _options(w, "Pool2DOptionsT", padding=s.Padding.VALID, strideH=2,
                                                    strideW=2, filterHeight=2, filterWidth=2))
    mean = w.tensor("model/gap/Mean", (1, 16))
    w.op("MEAN", [pool, w.constant("gap/axes", [1, 2])], [mean], _options(w, "ReducerOptionsT", keepDims=False))
    fc = w.tensor("model/fc/MatMul;model/fc/BiasAdd", (1, 10))
    w.op("FULLY_CONNECTED", [mean, w.weights("fc/w", (10, 16)), w.weights("fc/b", (10,))], [fc],
         _options(w, "FullyConnectedOptionsT"))
    out = w.tensor("Identity", (1, 10))
    w.op("SOFTMAX", [fc], [out], _options(w, "SoftmaxOptionsT", beta=1.0))
    return w.save(path, [x], [out])


def _int8(w: TfliteWriter, name: str, shape: Sequence[int], scale: float = 0.05, zero_point: int = -128) -> int:
    """An int8 activation of one scale and zero point."""
    return w.tensor(name, shape, "int8", scale=[scale], zero_point=[zero_point])


def _int8_weights(w: TfliteWriter, name: str, shape: Sequence[int], axis: int, input_scale: float,
                  per_channel: bool = True) -> tuple[int, int]:
    """int8 weights (per-channel scales along ``axis``, or one) and their int32 bias, scaled as LiteRT requires:
    bias scale = input scale * weight scale, zero points 0."""
    channels = shape[axis]
    scales = [0.01 + 0.001 * i for i in range(channels)] if per_channel else [0.02]
    weights = w.weights(name + "/w", shape, "int8", scale=scales, zero_point=[0] * len(scales), axis=axis)
    bias_scales = [input_scale * s for s in (scales if per_channel else scales * channels)][:channels]
    bias = w.weights(name + "/b", (channels,), "int32", scale=bias_scales, zero_point=[0] * channels)
    return weights, bias


def int8_cnn(path: Path) -> Path:
    """A fully int8 network between a float input and a float output, as the TFLite converter writes one:
    QUANTIZE -> CONV_2D 3x3/1 SAME (8 channels, per-channel scales) + fused RELU -> MAX_POOL_2D 2x2/2 ->
    DEPTHWISE_CONV_2D 3x3 SAME (per-channel) -> RESHAPE to 1x512 -> FULLY_CONNECTED 512 -> 10 (one scale) ->
    DEQUANTIZE -> SOFTMAX in float."""
    w = TfliteWriter()
    s = w.schema
    x = w.tensor("serving_default_input:0", (1, 16, 16, 3))
    q = _int8(w, "tfl.quantize", (1, 16, 16, 3), scale=1 / 128, zero_point=0)
    w.op("QUANTIZE", [x], [q], version=2)
    c1 = _int8(w, "model/conv1/Relu", (1, 16, 16, 8))
    wt, b = _int8_weights(w, "conv1", (8, 3, 3, 3), 0, 1 / 128)
    w.op("CONV_2D", [q, wt, b], [c1], _options(w, "Conv2DOptionsT", padding=s.Padding.SAME, strideH=1, strideW=1,
                                               fusedActivationFunction=s.ActivationFunctionType.RELU), version=3)
    pool = _int8(w, "model/pool/MaxPool", (1, 8, 8, 8))
    w.op("MAX_POOL_2D", [c1], [pool], _options(w, "Pool2DOptionsT", padding=s.Padding.VALID, strideH=2, strideW=2,
                                               filterHeight=2, filterWidth=2), version=2)
    dw = _int8(w, "model/dw/BiasAdd", (1, 8, 8, 8))
    wt, b = _int8_weights(w, "dw", (1, 3, 3, 8), 3, 0.05)
    w.op("DEPTHWISE_CONV_2D", [pool, wt, b], [dw], _options(w, "DepthwiseConv2DOptionsT", padding=s.Padding.SAME,
                                                            strideH=1, strideW=1, depthMultiplier=1), version=3)
    flat = _int8(w, "model/flatten/Reshape", (1, 512))
    w.op("RESHAPE", [dw, w.constant("flatten/shape", [1, 512])], [flat], _options(w, "ReshapeOptionsT",
                                                                                   newShape=[1, 512]))
    fc = _int8(w, "model/fc/BiasAdd", (1, 10), scale=0.1, zero_point=0)
    wt, b = _int8_weights(w, "fc", (10, 512), 0, 0.05, per_channel=False)
    w.op("FULLY_CONNECTED", [flat, wt, b], [fc], _options(w, "FullyConnectedOptionsT"), version=4)
    deq = w.tensor("tfl.dequantize", (1, 10))
    w.op("DEQUANTIZE", [fc], [deq], version=2)
    out = w.tensor("StatefulPartitionedCall:0", (1, 10))
    w.op("SOFTMAX", [deq], [out], _options(w, "SoftmaxOptionsT", beta=1.0))
    return w.save(path, [x], [out])


def ops_model(path: Path) -> Path:
    """More operators on 1x32x32x8: PAD, CONV_2D 3x3 VALID + fused RELU, MUL and ADD by per-channel constants (a
    scale with a bias), HARD_SWISH, MAX_POOL_2D 3x3/2 SAME, DEPTHWISE_CONV_2D 3x3/2 SAME with multiplier 2,
    LEAKY_RELU, AVERAGE_POOL_2D, CONCATENATION on channels, PRELU per channel, RESIZE_BILINEAR, TRANSPOSE_CONV
    3x3/2 SAME, STRIDED_SLICE of channels, SPLIT, SUB, MEAN keeping dims, FULLY_CONNECTED of a 4-D input + fused RELU_N1_TO_1, TANH,
    SOFTMAX; and a second output, a TRANSPOSE of the slice to NCHW."""
    w = TfliteWriter()
    s = w.schema
    x = w.tensor("x", (1, 32, 32, 8))
    padded = w.tensor("pad", (1, 34, 34, 8))
    w.op("PAD", [x, w.constant("pad/paddings", [[0, 0], [1, 1], [1, 1], [0, 0]])], [padded])
    conv = w.tensor("conv", (1, 32, 32, 16))
    w.op("CONV_2D", [padded, w.weights("conv/w", (16, 3, 3, 8)), w.weights("conv/b", (16,))], [conv],
         _options(w, "Conv2DOptionsT", padding=s.Padding.VALID, strideH=1, strideW=1,
                  fusedActivationFunction=s.ActivationFunctionType.RELU))
    mul = w.tensor("bn/mul", (1, 32, 32, 16))
    w.op("MUL", [conv, w.weights("bn/scale", (16,))], [mul], _options(w, "MulOptionsT"))
    bn = w.tensor("bn/add", (1, 32, 32, 16))
    w.op("ADD", [mul, w.weights("bn/shift", (16,))], [bn], _options(w, "AddOptionsT"))
    hs = w.tensor("hswish", (1, 32, 32, 16))
    w.op("HARD_SWISH", [bn], [hs])
    mp = w.tensor("maxpool", (1, 16, 16, 16))
    w.op("MAX_POOL_2D", [hs], [mp], _options(w, "Pool2DOptionsT", padding=s.Padding.SAME, strideH=2, strideW=2,
                                             filterHeight=3, filterWidth=3))
    dw = w.tensor("dw", (1, 8, 8, 32))
    w.op("DEPTHWISE_CONV_2D", [mp, w.weights("dw/w", (1, 3, 3, 32)), w.weights("dw/b", (32,))], [dw],
         _options(w, "DepthwiseConv2DOptionsT", padding=s.Padding.SAME, strideH=2, strideW=2, depthMultiplier=2))
    leaky = w.tensor("leaky", (1, 8, 8, 32))
    w.op("LEAKY_RELU", [dw], [leaky], _options(w, "LeakyReluOptionsT", alpha=0.1))
    ap = w.tensor("avgpool", (1, 8, 8, 16))
    w.op("AVERAGE_POOL_2D", [mp], [ap], _options(w, "Pool2DOptionsT", padding=s.Padding.VALID, strideH=2,
                                                 strideW=2, filterHeight=2, filterWidth=2))
    cat = w.tensor("concat", (1, 8, 8, 48))
    w.op("CONCATENATION", [leaky, ap], [cat], _options(w, "ConcatenationOptionsT", axis=3))
    prelu = w.tensor("prelu", (1, 8, 8, 48))
    w.op("PRELU", [cat, w.weights("prelu/alpha", (1, 1, 48))], [prelu])
    up = w.tensor("resize", (1, 16, 16, 48))
    w.op("RESIZE_BILINEAR", [prelu, w.constant("resize/size", [16, 16])], [up], _options(w, "ResizeBilinearOptionsT"))
    deconv = w.tensor("deconv", (1, 32, 32, 8))
    w.op("TRANSPOSE_CONV", [w.constant("deconv/shape", [1, 32, 32, 8]), w.weights("deconv/w", (8, 3, 3, 48)), up,
                            w.weights("deconv/b", (8,))], [deconv],
         _options(w, "TransposeConvOptionsT", padding=s.Padding.SAME, strideH=2, strideW=2), version=3)
    sliced = w.tensor("slice", (1, 32, 32, 4))
    w.op("STRIDED_SLICE", [deconv, w.constant("slice/begin", [0, 0, 0, 2]), w.constant("slice/end", [1, 32, 32, 6]),
                           w.constant("slice/strides", [1, 1, 1, 1])], [sliced], _options(w, "StridedSliceOptionsT"))
    halves = [w.tensor("split:0", (1, 32, 32, 2)), w.tensor("split:1", (1, 32, 32, 2))]
    w.op("SPLIT", [w.constant("split/axis", 3), sliced], halves, _options(w, "SplitOptionsT", numSplits=2))
    diff = w.tensor("sub", (1, 32, 32, 2))
    w.op("SUB", [halves[0], halves[1]], [diff], _options(w, "SubOptionsT"))
    mean = w.tensor("mean", (1, 1, 1, 2))
    w.op("MEAN", [diff, w.constant("mean/axes", [1, 2])], [mean], _options(w, "ReducerOptionsT", keepDims=True))
    fc = w.tensor("fc", (1, 5))
    w.op("FULLY_CONNECTED", [mean, w.weights("fc/w", (5, 2)), w.weights("fc/b", (5,))], [fc],
         _options(w, "FullyConnectedOptionsT", fusedActivationFunction=s.ActivationFunctionType.RELU_N1_TO_1))
    tanh = w.tensor("tanh", (1, 5))
    w.op("TANH", [fc], [tanh])
    probs = w.tensor("probs", (1, 5))
    w.op("SOFTMAX", [tanh], [probs], _options(w, "SoftmaxOptionsT", beta=1.0))
    nchw = w.tensor("nchw", (1, 4, 32, 32))
    w.op("TRANSPOSE", [sliced, w.constant("nchw/perm", [0, 3, 1, 2])], [nchw])
    return w.save(path, [x], [probs, nchw])


def twins_model(path: Path, unsupported: bool = False) -> Path:
    """Operators the IR has no layer type for, on 1x8x8x4: ABS, RSQRT, MINIMUM by a per-channel constant and
    DEPTH_TO_SPACE (block 2), each with an ONNX twin; with ``unsupported``, an L2_NORMALIZATION after them, which
    has none."""
    w = TfliteWriter()
    x = w.tensor("x", (1, 8, 8, 4))
    a = w.tensor("abs", (1, 8, 8, 4))
    w.op("ABS", [x], [a])
    r = w.tensor("rsqrt", (1, 8, 8, 4))
    w.op("RSQRT", [a], [r])
    m = w.tensor("minimum", (1, 8, 8, 4))
    w.op("MINIMUM", [r, w.constant("minimum/bound", [0.5, 1.0, 2.0, 4.0], "float32")], [m])
    d = w.tensor("d2s", (1, 16, 16, 1))
    w.op("DEPTH_TO_SPACE", [m], [d], _options(w, "DepthToSpaceOptionsT", blockSize=2))
    if not unsupported:
        return w.save(path, [x], [d])
    n = w.tensor("l2norm", (1, 16, 16, 1))
    w.op("L2_NORMALIZATION", [d], [n], _options(w, "L2NormOptionsT"))
    return w.save(path, [x], [n])


def compressed_model(path: Path) -> Path:
    """The two weight-compressed float forms on 1x16x16x3: a CONV_2D (8 filters 3x3 SAME) whose filters and bias
    are float16 tensors through DEQUANTIZE (float16 quantisation: the model computes in float), and a
    FULLY_CONNECTED 2048 -> 4 by int8 weights on a float input (dynamic-range quantisation: LiteRT quantises the
    activation on the fly and multiplies in int8)."""
    w = TfliteWriter()
    s = w.schema
    x = w.tensor("x", (1, 16, 16, 3))
    filters, bias = w.tensor("conv/w", (8, 3, 3, 3)), w.tensor("conv/b", (8,))
    w.op("DEQUANTIZE", [w.weights("conv/w_fp16", (8, 3, 3, 3), "float16")], [filters], version=3)
    w.op("DEQUANTIZE", [w.weights("conv/b_fp16", (8,), "float16")], [bias], version=3)
    conv = w.tensor("conv", (1, 16, 16, 8))
    w.op("CONV_2D", [x, filters, bias], [conv], _options(w, "Conv2DOptionsT", padding=s.Padding.SAME, strideH=1,
                                                         strideW=1))
    fc = w.tensor("fc", (1, 4))
    weights = w.weights("fc/w", (4, 2048), "int8", scale=[0.02], zero_point=[0])
    w.op("FULLY_CONNECTED", [conv, weights, w.weights("fc/b", (4,))], [fc],
         _options(w, "FullyConnectedOptionsT", asymmetricQuantizeInputs=True), version=9)
    return w.save(path, [x], [fc])


def sequence_model(path: Path) -> Path:
    """A transformer-like block on a 1x16x32 sequence (3-D: no image): a layer norm as TensorFlow writes it (MEAN,
    SQUARED_DIFFERENCE, MEAN, ADD of epsilon, RSQRT, SUB, MUL), FULLY_CONNECTED 32 -> 64 keeping the rows, SiLU as
    LOGISTIC and MUL, self-attention scores by BATCH_MATMUL against a TRANSPOSE, SOFTMAX, BATCH_MATMUL, then a
    RESHAPE whose target a SHAPE, STRIDED_SLICE and PACK compute at run time, and FULLY_CONNECTED 1024 -> 4."""
    w = TfliteWriter()
    x = w.tensor("x", (1, 16, 32))
    axis = w.constant("norm/axis", [2])
    mean = w.tensor("norm/mean", (1, 16, 1))
    w.op("MEAN", [x, axis], [mean], _options(w, "ReducerOptionsT", keepDims=True))
    sq = w.tensor("norm/squared", (1, 16, 32))
    w.op("SQUARED_DIFFERENCE", [x, mean], [sq])
    var = w.tensor("norm/variance", (1, 16, 1))
    w.op("MEAN", [sq, axis], [var], _options(w, "ReducerOptionsT", keepDims=True))
    eps = w.tensor("norm/eps_added", (1, 16, 1))
    w.op("ADD", [var, w.constant("norm/eps", [1e-5], "float32")], [eps], _options(w, "AddOptionsT"))
    inv = w.tensor("norm/rsqrt", (1, 16, 1))
    w.op("RSQRT", [eps], [inv])
    centred = w.tensor("norm/centred", (1, 16, 32))
    w.op("SUB", [x, mean], [centred], _options(w, "SubOptionsT"))
    normed = w.tensor("norm/out", (1, 16, 32))
    w.op("MUL", [centred, inv], [normed], _options(w, "MulOptionsT"))
    hidden = w.tensor("mlp/fc", (1, 16, 64))
    w.op("FULLY_CONNECTED", [normed, w.weights("mlp/w", (64, 32)), w.weights("mlp/b", (64,))], [hidden],
         _options(w, "FullyConnectedOptionsT", keepNumDims=True))
    gate = w.tensor("mlp/sigmoid", (1, 16, 64))
    w.op("LOGISTIC", [hidden], [gate])
    silu = w.tensor("mlp/silu", (1, 16, 64))
    w.op("MUL", [hidden, gate], [silu], _options(w, "MulOptionsT"))
    keys = w.tensor("attn/keys", (1, 64, 16))
    w.op("TRANSPOSE", [silu, w.constant("attn/perm", [0, 2, 1])], [keys])
    scores = w.tensor("attn/scores", (1, 16, 16))
    w.op("BATCH_MATMUL", [silu, keys], [scores], _options(w, "BatchMatMulOptionsT"))
    weights = w.tensor("attn/softmax", (1, 16, 16))
    w.op("SOFTMAX", [scores], [weights], _options(w, "SoftmaxOptionsT", beta=1.0))
    context = w.tensor("attn/context", (1, 16, 64))
    w.op("BATCH_MATMUL", [weights, silu], [context], _options(w, "BatchMatMulOptionsT"))
    shape = w.tensor("flat/shape", (3,), "int32")
    w.op("SHAPE", [context], [shape], _options(w, "ShapeOptionsT", outType=_TYPES["int32"]))
    batch = w.tensor("flat/batch", (), "int32")
    w.op("STRIDED_SLICE", [shape, w.constant("flat/begin", [0]), w.constant("flat/end", [1]),
                           w.constant("flat/strides", [1])], [batch],
         _options(w, "StridedSliceOptionsT", shrinkAxisMask=1))
    target = w.tensor("flat/target", (2,), "int32")
    w.op("PACK", [batch, w.constant("flat/rest", -1)], [target], _options(w, "PackOptionsT", valuesCount=2))
    flat = w.tensor("flat", (1, 1024))
    w.op("RESHAPE", [context, target], [flat])
    out = w.tensor("logits", (1, 4))
    w.op("FULLY_CONNECTED", [flat, w.weights("head/w", (4, 1024)), w.weights("head/b", (4,))], [out],
         _options(w, "FullyConnectedOptionsT"))
    return w.save(path, [x], [out])

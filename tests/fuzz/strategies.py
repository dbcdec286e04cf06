"""What the parser fuzz tests share: inputs as hypothesis strategies, and the call that feeds each input to its
parser the way the CLI does (``bench/fuzz_parsers.py`` runs the same tests on many more inputs).

Every parser of user input must either return or raise an ``NnperfError`` (the CLI prints it as one line,
exit 1); anything else is an internal error (exit 3). ``PARSERS`` names each parser with the strategy of its
inputs and the call; ``outcome`` runs one input and classifies what happened.

Sizes stay at or below ``MAX_DIM`` (10**6): absurd sizes are refused where a ``Network`` is built, which
is not the parsers' business (and not yet there everywhere).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from nnperf.errors import NnperfError

MAX_DIM = 10**6
"""The largest tensor dimension generated (see the module docstring)."""

settings.register_profile(
    "nnperf-fuzz", max_examples=int(os.environ.get("NNPERF_FUZZ_EXAMPLES", "400")), deadline=None, database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate, Phase.shrink))
FUZZ = settings.get_profile("nnperf-fuzz")
"""The bounded profile of the fuzz tests: 400 examples per test (``$NNPERF_FUZZ_EXAMPLES`` when set: the long run
of ``bench/fuzz_parsers.py``), no deadline, no .hypothesis database, the same examples on every run (reproducible
CI)."""

REFUSALS: tuple[type[BaseException], ...] = (NnperfError,)
ARG_REFUSALS: tuple[type[BaseException], ...] = (NnperfError, argparse.ArgumentTypeError)
"""An argparse ``type=`` callable may also refuse with ArgumentTypeError (argparse prints a usage error)."""


# ---------------------------------------------------------------------------------------------- shared pieces
def _scratch() -> Path:
    """One scratch folder per process for the files the file parsers read."""
    global _SCRATCH
    if _SCRATCH is None:
        _SCRATCH = Path(tempfile.mkdtemp(prefix="nnperf-fuzz-"))
    return _SCRATCH


_SCRATCH: Path | None = None


def write(name: str, data: bytes | str) -> Path:
    path = _scratch() / name
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


def deep(opening: str, closing: str, depth: int, inner: str = "") -> str:
    return opening * depth + inner + closing * depth


ODD_NUMBERS = ("0", "-0", "-1", "1e400", "-1e400", "nan", "NaN", "inf", "-inf", "Infinity", "1.5", "1e-400",
               "9" * 30, "9" * 5000, "999999999999", "0x10", "1_000", "+1", "1e6", "٣", "１", "")
"""Texts that parse as odd numbers (or almost): overflow, NaN, infinities, digit limits, unicode digits."""

odd_text = st.one_of(
    st.sampled_from(ODD_NUMBERS),
    st.text(max_size=30),
    st.text(alphabet=",;:=x[]{}()\"'\\\n\r\t\x00 -+.e0123456789", max_size=30),
    st.integers(0, 3).map(lambda k: ("[", "-", "1+", "{")[k] * 50_000),
)
"""Short texts a user might type or a corrupted file might hold, plus a few deeply nested ones."""

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
"""Any JSON value (NaN and infinities included, which ``json.dumps`` writes and ``json.loads`` reads)."""


def mutate_tree(data: Any, draw: Callable[[st.SearchStrategy[Any]], Any], rounds: int) -> Any:
    """``data`` (nested dicts and lists, copied) with ``rounds`` random edits: a value dropped, replaced by an
    odd value, or nested deeply; keys are followed at random from the root."""
    data = json.loads(json.dumps(data))
    for _ in range(rounds):
        parent: Any = None
        key: Any = None
        node = data
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = node[key]
        if parent is None:
            continue
        action = draw(st.sampled_from(("drop", "replace", "replace", "nest", "huge")))
        if action == "drop":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(json_values | st.sampled_from(ODD_NUMBERS))
        elif action == "nest":
            value: Any = parent[key]
            for _ in range(draw(st.sampled_from((2, 20, 150)))):
                value = [value]
            parent[key] = value
        else:
            parent[key] = draw(st.sampled_from((10**30, -(10**30), 1e308, float("nan"), float("inf"), 2**63, 0, -1)))
    return data


def corrupt_bytes(data: bytes, draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
    """``data`` truncated, with bits flipped, or with bytes spliced in."""
    kind = draw(st.sampled_from(("truncate", "flip", "flip", "splice")))
    if kind == "truncate":
        return data[: draw(st.integers(0, max(0, len(data) - 1)))]
    buffer = bytearray(data)
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            index = draw(st.integers(0, len(buffer) - 1))
            buffer[index] ^= 1 << draw(st.integers(0, 7))
        return bytes(buffer)
    index = draw(st.integers(0, len(buffer)))
    return bytes(buffer[:index]) + draw(st.binary(min_size=1, max_size=16)) + bytes(buffer[index:])


# ------------------------------------------------------------------------------------------------------ ONNX
def _vi(name: str, shape: list[Any] | None, elem: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
           inits: list[onnx.TensorProto], opset: int = 17, ir_version: int = 8) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)


def _weights(shape: tuple[int, ...], name: str, seed: int = 0) -> onnx.TensorProto:
    return numpy_helper.from_array(np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(np.float32), name)


def conv_model(c: int, h: int, w: int, m: int, k: int, stride: int, pad: int, groups: int) -> onnx.ModelProto:
    """x -> Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm(10): a valid model for any consistent sizes."""
    nodes = [
        helper.make_node("Conv", ["x", "W"], ["c"], name="conv", kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, group=groups),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "Wfc", "Bfc"], ["y"], name="fc", transB=1),
    ]
    inits = [_weights((m, c // groups, k, k), "W"), _weights((10, m), "Wfc", 1), _weights((10,), "Bfc", 2)]
    return _model(nodes, [_vi("x", [1, c, h, w])], [_vi("y", [1, 10])], inits)


def _valid_models() -> list[bytes]:
    mlp = _model([helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
                  helper.make_node("Add", ["m", "B"], ["a"], name="add"),
                  helper.make_node("Sigmoid", ["a"], ["s"], name="sig"),
                  helper.make_node("Mul", ["a", "s"], ["y"], name="mul")],
                 [_vi("x", ["N", 16])], [_vi("y", [None, 8])], [_weights((16, 8), "W"), _weights((8,), "B")])
    pooled = _model([helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
                     helper.make_node("BatchNormalization", ["p", "s", "b", "mu", "var"], ["n"], name="bn"),
                     helper.make_node("Clip", ["n", "lo", "hi"], ["y"], name="relu6")],
                    [_vi("x", [1, 4, 8, 8])], [_vi("y", None)],
                    [_weights((4,), n, i) for i, n in enumerate(("s", "b", "mu", "var"))]
                    + [numpy_helper.from_array(np.float32(0.0), "lo"), numpy_helper.from_array(np.float32(6.0), "hi")])
    return [conv_model(3, 16, 16, 8, 3, 1, 1, 1).SerializeToString(), mlp.SerializeToString(),
            pooled.SerializeToString()]


VALID_ONNX = _valid_models()
"""Serialized valid models whose corruptions are fuzzed."""

ONNX_OPS = ("Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "ReduceMean", "ReduceMax",
            "BatchNormalization", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Add", "Mul", "Concat", "Softmax", "LRN",
            "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Resize", "Upsample", "Pad", "Identity", "Dropout",
            "Constant", "Shape", "Gather", "LSTM", "Loop", "If", "Einsum", "NoSuchOp", "", "conv")
ATTR_NAMES = ("kernel_shape", "strides", "pads", "dilations", "group", "axis", "axes", "alpha", "beta", "bias",
              "size", "epsilon", "mode", "auto_pad", "ceil_mode", "count_include_pad", "transA", "transB", "min",
              "max", "value", "value_float", "value_ints", "perm", "to", "no_such_attribute")
DIMS = st.one_of(st.integers(1, 8), st.sampled_from((0, -1, -7, 32, 224, MAX_DIM, "N", None)))
ELEM_TYPES = st.sampled_from((TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64,
                              TensorProto.INT8, TensorProto.BOOL, TensorProto.STRING, TensorProto.UNDEFINED, 999))
small_ints = st.integers(-3, 8)
attr_values = st.one_of(
    small_ints, st.floats(allow_nan=True, allow_infinity=True, width=32), st.lists(small_ints, max_size=5),
    st.lists(st.floats(-10, 10, width=32), min_size=1, max_size=4),
    st.sampled_from((b"NOTSET", b"SAME_UPPER", b"VALID", b"nearest", b"linear", b"edge", b"reflect", b"\xff\xfe",
                     b"")),
    st.integers(-(2**62), 2**62), st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=4),
    st.just("tensor"),
)
METADATA_KEYS = ("pkg.torch.onnx.name_scopes", "pkg.torch.onnx.class_hierarchy", "other")
metadata_values = st.one_of(
    st.sampled_from(("['a', 'a.b']", "['torch.nn.modules.conv.Conv2d', 'x']", "[]", "['']", "5", "{}", "{[]}",
                     "[1, 2]", "'text'", "[[['a']]]", "None", "['a'", "__import__('os')")),
    st.integers(1, 3).map(lambda k: deep(("-", "[", "1+")[k - 1], "", 100_000, "1")),
    st.text(max_size=40),
)


def _attribute(name: str, value: Any, draw: Callable[[st.SearchStrategy[Any]], Any]) -> onnx.AttributeProto:
    if value == "tensor":
        shape = draw(st.lists(st.integers(0, 3), max_size=3))
        array = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
        return helper.make_attribute(name, numpy_helper.from_array(array))
    if isinstance(value, list) and not value:
        return helper.make_attribute(name, value, attr_type=onnx.AttributeProto.INTS)
    return helper.make_attribute(name, value)


@st.composite
def onnx_models(draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
    """A model built with onnx.helper from random nodes: op types, attributes of any type, odd shapes and dtypes,
    inputs that name no tensor or a later node's output (cycles), duplicate names, missing initializers,
    metadata and doc strings."""
    rank = draw(st.integers(0, 5))
    x_shape = [draw(DIMS) for _ in range(rank)] if draw(st.integers(0, 9)) else None
    tensors = ["x"]
    inits: list[onnx.TensorProto] = []
    for index in range(draw(st.integers(0, 3))):
        shape = tuple(draw(st.lists(st.integers(0, 6), max_size=4)))
        init = _weights(shape, f"w{index}")
        if draw(st.integers(0, 5)) == 0:
            init.data_type = draw(ELEM_TYPES)
        inits.append(init)
        tensors.append(init.name)
    count = draw(st.integers(1, 4))
    outputs = [f"t{i}" for i in range(count)]
    nodes = []
    for index in range(count):
        op = draw(st.sampled_from(ONNX_OPS))
        names = tensors + outputs + ["missing", ""]
        inputs = draw(st.lists(st.sampled_from(names), min_size=0, max_size=3))
        if draw(st.integers(0, 3)):
            inputs = [tensors[-1] if index == 0 else outputs[index - 1]] + inputs  # mostly a chain
        node_outputs = [draw(st.sampled_from(outputs)) if draw(st.integers(0, 9)) == 0 else outputs[index]]
        attrs = [_attribute(name, draw(attr_values), draw)
                 for name in draw(st.lists(st.sampled_from(ATTR_NAMES), max_size=4, unique=True))]
        node = helper.make_node(op, inputs, node_outputs, name=draw(st.sampled_from((f"n{index}", "n0", "", "a/b"))),
                                doc_string=draw(st.text(max_size=10)))
        node.attribute.extend(attrs)
        if draw(st.integers(0, 3)) == 0:
            node.domain = draw(st.sampled_from(("ai.onnx", "com.microsoft", "custom")))
        for key in draw(st.lists(st.sampled_from(METADATA_KEYS), max_size=2, unique=True)):
            entry = node.metadata_props.add()
            entry.key, entry.value = key, draw(metadata_values)
        nodes.append(node)
    if draw(st.integers(0, 4)) == 0 and inits:
        inits.pop(draw(st.integers(0, len(inits) - 1)))  # a missing initializer
    out_names = draw(st.lists(st.sampled_from(outputs + ["x", "missing"]), min_size=1, max_size=2))
    graph_outputs = [_vi(n, draw(st.sampled_from((None, [None] * 4, [1, 10], []))), TensorProto.FLOAT)
                     for n in out_names]
    model = _model(nodes, [_vi("x", x_shape, draw(ELEM_TYPES))], graph_outputs, inits,
                   opset=draw(st.sampled_from((17, 17, 1, 7, 11, 13, 18, 21, 99))),
                   ir_version=draw(st.sampled_from((8, 8, 3, 10, 0, 99))))
    model.doc_string = draw(st.text(max_size=20))
    for key, value in draw(st.dictionaries(st.text(max_size=5), st.text(max_size=10), max_size=2)).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    return model.SerializeToString()


@st.composite
def corrupted_onnx(draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
    """A valid serialized model truncated, with bits flipped or bytes spliced in."""
    return corrupt_bytes(draw(st.sampled_from(VALID_ONNX)), draw)


@st.composite
def edited_onnx(draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
    """A valid model with one or two edits that often keep it past onnx's checker: an attribute set to a value of
    any type, another op type, an input dimension or dtype changed, an edge renamed, an initializer dropped,
    metadata added."""
    model = onnx.ModelProto()
    model.ParseFromString(draw(st.sampled_from(VALID_ONNX)))
    graph = model.graph
    for _ in range(draw(st.integers(1, 2))):
        node = graph.node[draw(st.integers(0, len(graph.node) - 1))]
        edit = draw(st.sampled_from(("attribute", "attribute", "op", "dim", "dtype", "edge", "initializer",
                                     "metadata", "metadata")))
        if edit == "attribute":
            name = draw(st.sampled_from([a.name for a in node.attribute] + list(ATTR_NAMES)))
            kept = [a for a in node.attribute if a.name != name]
            del node.attribute[:]
            node.attribute.extend(kept + [_attribute(name, draw(attr_values), draw)])
        elif edit == "op":
            node.op_type = draw(st.sampled_from(ONNX_OPS))
        elif edit == "dim":
            dims = graph.input[0].type.tensor_type.shape.dim
            dim = dims[draw(st.integers(0, len(dims) - 1))]
            value = draw(DIMS)
            dim.Clear()
            if isinstance(value, int):
                dim.dim_value = value
            elif value is not None:
                dim.dim_param = value
        elif edit == "dtype":
            graph.input[0].type.tensor_type.elem_type = draw(ELEM_TYPES)
        elif edit == "edge" and node.input:
            node.input[draw(st.integers(0, len(node.input) - 1))] = draw(st.sampled_from(
                [o for n in graph.node for o in n.output] + ["missing", "", "x"]))
        elif edit == "initializer" and graph.initializer:
            graph.initializer.pop(draw(st.integers(0, len(graph.initializer) - 1)))
        else:
            entry = node.metadata_props.add()
            entry.key, entry.value = draw(st.sampled_from(METADATA_KEYS)), draw(metadata_values)
    return model.SerializeToString()


onnx_inputs = st.one_of(edited_onnx(), corrupted_onnx(), onnx_models(), st.binary(max_size=64))


def parse_onnx(data: bytes) -> Any:
    from nnperf.api import load_model

    return load_model(write("model.onnx", data))


# --------------------------------------------------------------------------------------------------- IR JSON
def _valid_network_document() -> dict[str, Any]:
    from nnperf.ir import AxisAttrs, ConvAttrs, Layer, LinearAttrs, Network, OpType, TensorSpec
    from nnperf.ir._json import network_to_dict

    a = (1, 4, 8, 8)
    network = Network("doc", (TensorSpec("x", (1, 3, 8, 8)),), (
        Layer("conv", OpType.CONV, ("x",), ((1, 3, 8, 8),), a, ConvAttrs((3, 3), padding=(1,) * 4)),
        Layer("relu", OpType.RELU, ("conv",), (a,), a),
        Layer("add", OpType.ADD, ("relu", "conv"), (a, a), a),
        Layer("flatten", OpType.FLATTEN, ("add",), (a,), (1, 256), AxisAttrs(1)),
        Layer("fc", OpType.LINEAR, ("flatten",), ((1, 256),), (1, 10), LinearAttrs()),
    ), ("fc",))
    return network_to_dict(network)


VALID_NETWORK = _valid_network_document()


@st.composite
def network_documents(draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
    """A valid IR document with random edits, any JSON value, a corrupted file, or deep nesting."""
    kind = draw(st.sampled_from(("mutated", "mutated", "mutated", "random", "bytes", "deep")))
    if kind == "mutated":
        doc = mutate_tree(VALID_NETWORK, draw, draw(st.integers(1, 3)))
        return json.dumps(doc).encode()
    if kind == "random":
        return json.dumps(draw(json_values)).encode()
    if kind == "bytes":
        return corrupt_bytes(json.dumps(VALID_NETWORK).encode(), draw)
    return deep(draw(st.sampled_from(("[", '{"a":'))), "", draw(st.sampled_from((100, 100_000)))).encode()


def parse_network_json(data: bytes) -> Any:
    from nnperf.api import load_model

    return load_model(write("network.json", data))


# ----------------------------------------------------------------------------------------------- layer tables
def _shipped_table() -> str:
    from importlib import resources

    return resources.files("nnperf.accel").joinpath("tables", "alexnet.csv").read_text(encoding="utf-8")


VALID_TABLE = _shipped_table()


@st.composite
def layer_tables(draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
    """The shipped AlexNet table with cells, rows or the header edited; random text; random bytes."""
    kind = draw(st.sampled_from(("cells", "cells", "cells", "lines", "text", "bytes", "long")))
    if kind == "text":
        return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    if kind == "bytes":
        return corrupt_bytes(VALID_TABLE.encode(), draw) if draw(st.booleans()) else draw(st.binary(max_size=100))
    lines = VALID_TABLE.splitlines()
    if kind == "long":  # a cell longer than csv's field limit (131072 characters)
        return (lines[0] + "\n" + '"' + "a" * 140_000 + '"' + lines[1][lines[1].index(","):] + "\n").encode()
    if kind == "lines":
        for _ in range(draw(st.integers(1, 3))):
            index = draw(st.integers(0, len(lines) - 1))
            action = draw(st.sampled_from(("drop", "duplicate", "replace")))
            if action == "drop":
                lines.pop(index)
            elif action == "duplicate":
                lines.insert(index, lines[index])
            else:
                lines[index] = draw(odd_text)
            if not lines:
                break
        return "\n".join(lines).encode("utf-8", "surrogatepass")
    rows = [line.split(",") for line in lines]
    for _ in range(draw(st.integers(1, 4))):
        row = draw(st.sampled_from(rows))
        row[draw(st.integers(0, len(row) - 1))] = draw(odd_text)
    return "\n".join(",".join(row) for row in rows).encode("utf-8", "surrogatepass")


def parse_layer_table(data: bytes) -> Any:
    from nnperf.accel import read_table

    return read_table(write("table.csv", data))


# --------------------------------------------------------------------------------------------------- spec YAML
def _valid_spec() -> dict[str, Any]:
    from nnperf.accel import eyeriss_spec

    return eyeriss_spec(8).to_dict()


VALID_SPEC = _valid_spec()
YAML_SNIPPETS = ("version: 1\n", "version: 1\n? [a, b]\n: 1\n", "version: 1\n1: 2\na: 3\n", "version: 1\nbits: 8.0\n",
                 "&a [*a]", "!!python/object:os.system x", "version: 1\npe_rows: !!binary aGk=\n", "--- 1\n--- 2\n",
                 "version: 1\nname: 2001-01-01\n", "version: !!float 1\n", "version: 1\nglb_kb: .inf\n",
                 "version: 1\nglb_kb: .nan\n", "version: 1\npe_rows: 0x10\n", "<<: {version: 1}\n", "{version: 1, {a: 1}: 2}",
                 "version: 1\nbits: 16\npe_rows: 99999999999999999999999\n", "\t", "%YAML 9.9\n---\n1", "x: !!set {a}")


@st.composite
def spec_files(draw: Callable[[st.SearchStrategy[Any]], Any]) -> bytes:
    """A valid spec with random edits, odd YAML, random text and bytes, deep nesting."""
    import yaml

    kind = draw(st.sampled_from(("mutated", "mutated", "mutated", "snippet", "random", "text", "bytes", "deep")))
    if kind == "mutated":
        doc = mutate_tree({"spec": VALID_SPEC}, draw, draw(st.integers(1, 3))).get("spec")
        if draw(st.booleans()) and isinstance(doc, dict):
            doc[draw(st.sampled_from((1, None, True, 2.5, "bits", "version")))] = draw(json_values)
        return yaml.safe_dump(doc).encode()
    if kind == "snippet":
        return draw(st.sampled_from(YAML_SNIPPETS)).encode()
    if kind == "random":
        return yaml.safe_dump(draw(json_values)).encode()
    if kind == "text":
        return draw(st.text(max_size=100)).encode("utf-8", "surrogatepass")
    if kind == "bytes":
        return corrupt_bytes(yaml.safe_dump(VALID_SPEC).encode(), draw)
    return deep(draw(st.sampled_from(("[", "{a: ", "- "))), "", draw(st.sampled_from((100, 10_000)))).encode()


def parse_spec(data: bytes) -> Any:
    from nnperf.accel import load_spec

    return load_spec(write("spec.yaml", data))


# ------------------------------------------------------------------------------------- CLI shapes and units
def _argument_parsers() -> dict[str, Callable[[str], Any]]:
    from nnperf.cli._backend_args import key_value, positive_int
    from nnperf.cli._shapes import parse_input_shape, parse_shape
    from nnperf.cli._units import parse_bitrate_sweep
    from nnperf.cli.accel_cmd import _array, _numbers
    from nnperf.cli.advise_cmd import _fraction
    from nnperf.measure.sweep import parse_fixed, parse_range
    from nnperf.optimize.partition import parse_bitrate, parse_power

    return {"shape": parse_shape, "input_shape": parse_input_shape, "positive_int": positive_int,
            "key_value": key_value, "fraction": _fraction, "glb_numbers": lambda t: _numbers(t, "--glb"),
            "pe_array": _array, "bitrate": parse_bitrate, "power": parse_power, "range": parse_range,
            "fixed": parse_fixed, "bitrate_sweep": parse_bitrate_sweep}


ARGUMENT_PARSERS = tuple(sorted(("shape", "input_shape", "positive_int", "key_value", "fraction", "glb_numbers",
                                 "pe_array", "bitrate", "power", "range", "fixed", "bitrate_sweep")))
UNITS = ("", "x", "X", "W", "mW", "uW", "µW", "kW", "Mbps", "Gbps", "kbps", "bit/s", "MB/s", "%", ":", "=", ",")


@st.composite
def argument_texts(draw: Callable[[st.SearchStrategy[Any]], Any]) -> tuple[str, str]:
    """(argument parser, text): numbers joined by separators with units, odd numbers, random text."""
    parser = draw(st.sampled_from(ARGUMENT_PARSERS))
    kind = draw(st.sampled_from(("joined", "joined", "pair", "odd", "text")))
    if kind == "pair":  # two odd numbers: the shortest form of START:STOP, RxC, NAME=VALUE, a list
        first, second = draw(st.sampled_from(ODD_NUMBERS)), draw(st.sampled_from(ODD_NUMBERS + ("1", "8")))
        return parser, first + draw(st.sampled_from(("x", ":", ",", "="))) + second
    if kind == "odd":
        return parser, draw(odd_text)
    if kind == "text":
        return parser, draw(st.text(max_size=40))
    parts = draw(st.lists(st.integers(1, 999).map(str) | st.sampled_from(ODD_NUMBERS) | st.integers(-5, MAX_DIM).map(str)
                          | st.floats(allow_nan=True, allow_infinity=True).map(repr), min_size=1, max_size=5))
    separator = draw(st.sampled_from(("x", "X", ":", ",", "=", " ", "")))
    return parser, draw(st.sampled_from(("", "input=", "a=", "=", " "))) + separator.join(parts) + draw(
        st.sampled_from(UNITS))


def parse_argument(case: tuple[str, str]) -> Any:
    parser, text = case
    return _argument_parsers()[parser](text)


# -------------------------------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class FuzzTarget:
    """A parser under fuzzing: the strategy of its inputs, the call, and what counts as a clean refusal."""

    name: str
    inputs: st.SearchStrategy[Any]
    parse: Callable[[Any], Any]
    refusals: tuple[type[BaseException], ...] = REFUSALS


PARSERS: dict[str, FuzzTarget] = {
    "onnx": FuzzTarget("onnx", onnx_inputs, parse_onnx),
    "ir_json": FuzzTarget("ir_json", network_documents(), parse_network_json),
    "layer_csv": FuzzTarget("layer_csv", layer_tables(), parse_layer_table),
    "spec_yaml": FuzzTarget("spec_yaml", spec_files(), parse_spec),
    "cli_args": FuzzTarget("cli_args", argument_texts(), parse_argument, ARG_REFUSALS),
}


def outcome(target: FuzzTarget, value: Any) -> tuple[str, Any]:
    """('ok', result), ('refused', the NnperfError) or ('internal', any other exception) for one input."""
    try:
        return "ok", target.parse(value)
    except target.refusals as exc:
        return "refused", exc
    except Exception as exc:  # noqa: BLE001 - what the fuzzing looks for
        return "internal", exc


def parses_or_refuses(target: FuzzTarget, value: Any) -> Any:
    """The parser's result for ``value``, or None when it refused it with one line the CLI can print;
    any other exception fails the test (it would be an internal error, exit 3)."""
    kind, result = outcome(target, value)
    if kind == "internal":
        raise AssertionError(f"{target.name}: internal error {type(result).__name__}: {result}") from result
    if kind == "refused":
        text = str(result)
        assert text and "\n" not in text, f"{target.name}: refusal is not one line: {text!r}"
        return None
    return result

"""Versioned JSON form of a Network (STYLE.md, habit 7)."""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

from nnperf.errors import FormatVersionError, InvalidNetworkError, ModelFileError
from nnperf.ir._network import Layer, Network, SourceFile, TensorSpec
from nnperf.ir._op_specs import attributes_class
from nnperf.ir._ops import OpType

FORMAT = "nnperf-network"
VERSION = 1


def network_to_dict(network: Network) -> dict[str, Any]:
    """A plain, JSON-ready dictionary of ``network`` with its format version (``int8_layers`` and ``source`` only
    when the network has them, so a float network built in nnperf has the document it always had)."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "name": network.name,
        "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype} for s in network.inputs],
        "layers": [
            {
                "name": layer.name,
                "op": layer.op.value,
                "inputs": list(layer.inputs),
                "input_shapes": [list(s) for s in layer.input_shapes],
                "output_shape": list(layer.output_shape),
                "attrs": dataclasses.asdict(layer.attrs),
            }
            for layer in network.layers
        ],
        "outputs": list(network.outputs),
    }
    if network.int8_layers:
        document["int8_layers"] = sorted(network.int8_layers)
    if network.source is not None:
        document["source"] = dataclasses.asdict(network.source)
    return document


def network_from_dict(data: dict[str, Any], source: str = "<dict>") -> Network:
    """Rebuilds a Network; refuses other formats and versions with a clear message."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ModelFileError(f"{source}: not an nnperf network file (expected \"format\": \"{FORMAT}\")")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelFileError(f"{source}: \"version\" must be an integer, got {version!r}")
    if version != VERSION:
        raise FormatVersionError(
            f"{source}: network format version {version!r} is not supported "
            f"(this nnperf reads version {VERSION}; upgrade nnperf for newer files)"
        )
    try:
        layers = tuple(_layer_from_dict(item) for item in data["layers"])
        return Network(
            name=str(data["name"]),
            inputs=tuple(
                TensorSpec(name=i["name"], shape=tuple(i["shape"]), dtype=i.get("dtype", "float32"))
                for i in data["inputs"]
            ),
            layers=layers,
            outputs=tuple(data["outputs"]),
            int8_layers=frozenset(str(name) for name in data.get("int8_layers", [])),
            source=SourceFile(**{key: str(value) for key, value in data["source"].items()}) if "source" in data else None,
        )
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(f"{source}: {exc}") from exc
    except ModelFileError as exc:
        raise ModelFileError(f"{source}: {exc}") from exc
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{source}: malformed network file ({type(exc).__name__}: {exc})") from exc


def _layer_from_dict(item: dict[str, Any]) -> Layer:
    op = OpType(item["op"])
    attrs_cls = attributes_class(op)
    raw = dict(item.get("attrs", {}))
    hints = typing.get_type_hints(attrs_cls)
    for name, value in raw.items():
        if name not in hints:
            raise ModelFileError(f"layer {item.get('name')!r}: unknown attribute {name!r} for {op.value}")
        raw[name] = _typed(value, hints[name], f"layer {item.get('name')!r}, attribute {name!r}")
    return Layer(
        name=item["name"],
        op=op,
        inputs=tuple(item["inputs"]),
        input_shapes=tuple(tuple(s) for s in item["input_shapes"]),
        output_shape=tuple(item["output_shape"]),
        attrs=attrs_cls(**raw),
    )


def _typed(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked against a simple type hint (int, float, bool, str, tuple[int, ...])."""
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if args[-1:] == (Ellipsis,) and isinstance(value, (list, tuple)):  # tuple[int, ...]: any length
            return tuple(_typed(v, int, where) for v in value)
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            raise ModelFileError(f"{where}: expected a list of {len(args)} integers, got {value!r}")
        return tuple(_typed(v, int, where) for v in value)
    ok = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
        str: isinstance(value, str),
    }.get(hint, True)
    if not ok:
        raise ModelFileError(f"{where}: expected {getattr(hint, '__name__', hint)}, got {value!r}")
    return float(value) if hint is float else value


def save_network(network: Network, path: str | Path) -> None:
    """Writes ``network`` as versioned JSON."""
    try:
        Path(path).write_text(json.dumps(network_to_dict(network), indent=1) + "\n")
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot write the network ({exc.strerror or exc})") from exc


def load_network_json(path: str | Path) -> Network:
    """Reads a network written by :func:`save_network`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path}: not a readable JSON file ({exc})") from exc
    except RecursionError:  # json's decoder recurses once per nesting level
        raise ModelFileError(f"{path}: not a readable JSON file (nested too deeply)") from None
    return network_from_dict(data, source=str(path))

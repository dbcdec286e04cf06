"""Versioned JSON form of a Network (STYLE.md, habit 7)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from nnperf.errors import FormatVersionError, InvalidNetworkError, ModelFileError
from nnperf.ir._network import Layer, Network, TensorSpec
from nnperf.ir._ops import OpType, attributes_class

FORMAT = "nnperf-network"
VERSION = 1


def network_to_dict(network: Network) -> dict[str, Any]:
    """A plain, JSON-ready dictionary of ``network`` with its format version."""
    return {
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


def network_from_dict(data: dict[str, Any], source: str = "<dict>") -> Network:
    """Rebuilds a Network; refuses other formats and versions with a clear message."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ModelFileError(f"{source}: not an nnperf network file (expected \"format\": \"{FORMAT}\")")
    version = data.get("version")
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
        )
    except InvalidNetworkError as exc:
        raise InvalidNetworkError(f"{source}: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{source}: malformed network file ({type(exc).__name__}: {exc})") from exc


def _layer_from_dict(item: dict[str, Any]) -> Layer:
    op = OpType(item["op"])
    attrs_cls = attributes_class(op)
    raw = dict(item.get("attrs", {}))
    for f in dataclasses.fields(attrs_cls):
        if isinstance(raw.get(f.name), list):
            raw[f.name] = tuple(raw[f.name])
    return Layer(
        name=item["name"],
        op=op,
        inputs=tuple(item["inputs"]),
        input_shapes=tuple(tuple(s) for s in item["input_shapes"]),
        output_shape=tuple(item["output_shape"]),
        attrs=attrs_cls(**raw),
    )


def save_network(network: Network, path: str | Path) -> None:
    """Writes ``network`` as versioned JSON."""
    Path(path).write_text(json.dumps(network_to_dict(network), indent=1) + "\n")


def load_network_json(path: str | Path) -> Network:
    """Reads a network written by :func:`save_network`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path}: not a readable JSON file ({exc})") from exc
    return network_from_dict(data, source=str(path))

"""Fuzzing of the IR JSON reader: any JSON, edited valid documents and corrupted files either load or raise an
NnperfError; a valid document with another name or key order loads as the same network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import FUZZ, PARSERS, VALID_NETWORK, parses_or_refuses
from nnperf.errors import ModelFileError
from nnperf.ir import load_network_json, network_from_dict

IR_JSON = PARSERS["ir_json"]


@FUZZ
@given(IR_JSON.inputs)
def test_any_ir_json_input_loads_or_is_refused(data: bytes) -> None:
    network = parses_or_refuses(IR_JSON, data)
    if network is not None:
        assert network.name is not None and network.outputs


@FUZZ
@given(st.text(min_size=1, max_size=30), st.randoms(use_true_random=False))
def test_valid_document_renamed_and_reordered_loads_the_same_layers(name: str, random) -> None:  # type: ignore[no-untyped-def]
    items = list({**VALID_NETWORK, "name": name}.items())
    random.shuffle(items)
    network = parses_or_refuses(IR_JSON, json.dumps(dict(items)).encode())
    assert network == network_from_dict({**VALID_NETWORK, "name": name})
    assert network.name == name
    assert [layer.name for layer in network.layers] == ["conv", "relu", "add", "flatten", "fc"]


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 100_000])
def test_json_nested_too_deeply_is_a_model_file_error(tmp_path: Path, text: str) -> None:
    # found by the fuzzing: json's decoder raised RecursionError
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(ModelFileError) as info:
        load_network_json(path)
    assert str(info.value) == f"{path}: not a readable JSON file (nested too deeply)"

"""Fuzzing of the accelerator spec reader: edited valid specs, odd YAML, random text and bytes either load or
raise an NnperfError; random valid specs written as YAML load back unchanged."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import FUZZ, PARSERS, parses_or_refuses, write
from nnperf.accel import AcceleratorSpec, eyeriss_spec, spec_yaml

SPEC_YAML = PARSERS["spec_yaml"]


@pytest.mark.slow
@FUZZ
@given(SPEC_YAML.inputs)
def test_any_spec_file_loads_or_is_refused(data: bytes) -> None:
    spec = parses_or_refuses(SPEC_YAML, data)
    if spec is not None:
        assert isinstance(spec, AcceleratorSpec) and spec.bits in (8, 16)


positive = st.floats(1e-15, 1e15, allow_nan=False, allow_infinity=False)


@st.composite
def specs(draw) -> AcceleratorSpec:  # type: ignore[no-untyped-def]
    return replace(
        eyeriss_spec(draw(st.sampled_from((8, 16)))), name=draw(st.text(max_size=20)),
        pe_rows=draw(st.integers(1, 256)), pe_cols=draw(st.integers(1, 256)), glb_kb=draw(positive),
        rlc_factor=draw(st.integers(1, 8)), dram_energy_j=draw(positive), clock_power_w=draw(st.floats(0, 10)),
        control_fraction=draw(st.floats(0, 0.99)), glb_energy_law=draw(st.sampled_from(("constant", "sqrt"))))


@pytest.mark.slow
@FUZZ
@given(specs())
def test_valid_spec_reads_back_unchanged(spec: AcceleratorSpec) -> None:
    assert parses_or_refuses(SPEC_YAML, spec_yaml(spec).encode()) == spec
    assert SPEC_YAML.parse(write("spec.yaml", spec_yaml(spec)).read_bytes()) == spec

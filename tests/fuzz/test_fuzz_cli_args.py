"""Fuzzing of the CLI's argument parsers (shapes, counts, fractions, bit rates, powers, ranges): any text is
parsed or refused with an NnperfError or argparse's ArgumentTypeError; valid shapes and units parse exactly."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import FUZZ, MAX_DIM, PARSERS, parses_or_refuses
from nnperf.cli._shapes import parse_input_shape, parse_shape
from nnperf.cli._units import parse_bitrate_sweep
from nnperf.errors import NnperfError
from nnperf.optimize.partition import parse_bitrate, parse_power

CLI_ARGS = PARSERS["cli_args"]


@pytest.mark.slow
@FUZZ
@given(CLI_ARGS.inputs)
def test_any_argument_text_parses_or_is_refused(case: tuple[str, str]) -> None:
    parses_or_refuses(CLI_ARGS, case)


@FUZZ
@given(st.lists(st.integers(1, MAX_DIM), min_size=1, max_size=6), st.sampled_from(("x", "X")),
       st.sampled_from(("", "input=", "a=b=")))
def test_valid_shape_parses_to_its_sizes(shape: list[int], separator: str, name: str) -> None:
    text = separator.join(map(str, shape))
    assert parse_shape(text) == tuple(shape)
    assert parse_input_shape(name + text) == (name[:-1], tuple(shape))


@FUZZ
@given(st.floats(1e-3, 1e6), st.sampled_from((("W", 1.0), ("mW", 1e-3), ("kW", 1e3), ("", 1.0))),
       st.sampled_from((("Mbps", 1e6), ("kbit/s", 1e3), ("Gb/s", 1e9), ("", 1.0))))
def test_valid_units_parse_to_si(number: float, power_unit: tuple[str, float], rate_unit: tuple[str, float]) -> None:
    assert math.isclose(parse_power(f"{number!r}{power_unit[0]}"), number * power_unit[1])
    assert math.isclose(parse_bitrate(f"{number!r} {rate_unit[0]}"), number * rate_unit[1])


@pytest.mark.parametrize(("text", "message"), [
    # found by reading the inline parse the fuzzing could not call: OverflowError, a list of 10**15 rates
    ("1:inf:1", "need finite numbers"),
    ("1:1e300:1e-300", "gives inf bit rates, more than 10000"),
    ("1:1e9:1e-6", "gives 1e\\+15 bit rates, more than 10000"),
    ("nan:1:1", "need finite numbers"),
    ("1:2", "is not START:STOP:STEP"),
])
def test_bitrate_sweep_that_cannot_be_swept_is_one_line(text: str, message: str) -> None:
    with pytest.raises(NnperfError, match=f"^--sweep-bitrates: .*{message}"):
        parse_bitrate_sweep(text)


def test_bitrate_sweep_includes_its_stop() -> None:
    # (100 - 20) / 20 + 1 = 5 rates, in bit/s
    assert parse_bitrate_sweep("20:100:20") == [20e6, 40e6, 60e6, 80e6, 100e6]

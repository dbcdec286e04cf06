"""Fuzzing of the CLI's argument parsers (shapes, counts, fractions, bit rates, powers, ranges): any text is
parsed or refused with an NnperfError or argparse's ArgumentTypeError; valid shapes and units parse exactly."""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st

from fuzz.strategies import FUZZ, MAX_DIM, PARSERS, known_elsewhere, parses_or_refuses
from nnperf.cli._shapes import parse_input_shape, parse_shape
from nnperf.optimize.partition import parse_bitrate, parse_power

CLI_ARGS = PARSERS["cli_args"]


@FUZZ
@given(CLI_ARGS.inputs)
def test_any_argument_text_parses_or_is_refused(case: tuple[str, str]) -> None:
    assume(known_elsewhere(case) is None)  # parse_range's huge numbers and spans: see known_elsewhere
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

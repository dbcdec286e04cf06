"""No primitive claims a configuration it computes wrongly: random small configurations, every applicable and
available primitive against torch.nn.functional.conv2d within its bound (60 examples by default; set
NNPERF_PRIMITIVE_EXAMPLES for a longer search)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from prims_helpers import PRIMITIVES, relative_error

from nnperf.primitives import ConvConfig, PrimitiveError

AVAILABLE = [p for p in PRIMITIVES if p.availability().ok]


@st.composite
def configs(draw: st.DrawFn) -> ConvConfig:
    groups = draw(st.sampled_from([1, 1, 2, 4]))
    c = groups * draw(st.integers(1, 8))
    f = groups * draw(st.integers(1, 6))
    kh = draw(st.sampled_from([1, 2, 3, 3, 5]))
    k = (kh, kh) if draw(st.booleans()) else (kh, draw(st.sampled_from([1, 2, 3, 5])))  # Winograd needs square
    try:
        return ConvConfig.make(
            batch=draw(st.integers(1, 2)), c=c, f=f, im=(draw(st.integers(1, 10)), draw(st.integers(1, 10))), k=k,
            stride=(draw(st.sampled_from([1, 1, 2, 3])), draw(st.sampled_from([1, 1, 2, 3]))),
            padding=tuple(draw(st.integers(0, 2)) for _ in range(4)),  # type: ignore[arg-type]
            groups=groups, dilation=(draw(st.sampled_from([1, 1, 2])), draw(st.sampled_from([1, 1, 2]))))
    except PrimitiveError:  # a kernel larger than the padded input
        assume(False)
        raise


EXAMPLES = int(os.environ.get("NNPERF_PRIMITIVE_EXAMPLES", "60"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_every_applicable_primitive_computes_conv2d(config: ConvConfig) -> None:
    for primitive in AVAILABLE:
        if primitive.applies(config):
            error = relative_error(primitive, config)
            assert error <= primitive.error_bound, (primitive.name, error)


def test_the_square_symmetric_cases_reach_the_restricted_primitives() -> None:
    """The strategy can draw what Winograd, conv-1x1 and the symmetric-padding vendors claim."""
    examples = [ConvConfig.make(1, 4, 4, 6, 3, 1, 1), ConvConfig.make(1, 4, 4, 6, 5, 1, 2),
                ConvConfig.make(1, 4, 4, 6, 1)]
    claimed = {p.name for p in AVAILABLE for c in examples if p.applies(c)}
    assert {"winograd-2x3", "winograd-2x5", "conv1x1-fhw", "onednn-chw", "aten-im2col"} <= claimed

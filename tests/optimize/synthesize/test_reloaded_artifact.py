"""The written artifact is checked again once loaded back from its files: over the budget, or worse than the
program it was made from by more than one sample, it is refused with the figures."""

from __future__ import annotations

import pytest

from nnperf.optimize.synthesize._errors import SynthesisError
from nnperf.optimize.synthesize._package import check_reloaded
from nnperf.optimize.synthesize._program import Accuracy


def _accuracy(drop: float) -> Accuracy:
    return Accuracy(top1=0.95 - drop, agreement=1 - drop, max_rel_error=0.01, drop=drop)


def test_a_reloaded_artifact_over_the_budget_is_refused() -> None:
    # chosen at 0.90% (within 1%), reloaded at 1.05%: within one sample (of 150) of its program, over the budget
    with pytest.raises(SynthesisError, match=r"drops 1\.05% of top-1, over the 1\.00% budget"):
        check_reloaded("the ONNX model", _accuracy(0.0105), _accuracy(0.009), budget=0.01, samples=150)


def test_a_reloaded_artifact_worse_than_its_program_is_refused_within_the_budget() -> None:
    with pytest.raises(SynthesisError, match=r"lost accuracy against the program it was made from"):
        check_reloaded("the ONNX model", _accuracy(0.008), _accuracy(0.001), budget=0.02, samples=2000)


def test_a_faithful_artifact_within_the_budget_passes() -> None:
    check_reloaded("the ONNX model", _accuracy(0.0095), _accuracy(0.009), budget=0.01, samples=2000)
    check_reloaded("the ONNX model", _accuracy(0.0), _accuracy(0.0), budget=0.0, samples=2000)

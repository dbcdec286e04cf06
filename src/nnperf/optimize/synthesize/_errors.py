"""What inference-program synthesis raises."""

from __future__ import annotations

from nnperf.errors import NnperfError


class SynthesisError(NnperfError):
    """Base class of what ``nnperf.optimize.synthesize`` raises."""


class ValidationDataError(SynthesisError):
    """Validation data that cannot be used: missing, empty, non-finite, labels that do not match the inputs, or
    inputs whose shape does not fit the network's input."""


class UnsupportedModeError(SynthesisError):
    """An arithmetic mode (bf16, int8, fp16) that cannot run a layer or op of the network, or that this device
    does not run natively."""


class BudgetError(SynthesisError):
    """An accuracy budget that is not a fraction in [0, 1), or that no program meets."""

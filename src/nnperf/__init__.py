"""nnperf: predict and improve how a neural network performs on a device."""

__version__ = "0.1.0"

"""The width advisor: layers where a small change of filters lowers the predicted latency (Osterwind 3.4)."""

from nnperf.optimize.advise._advise import Advice, AdviceError, Suggestion, advise, layer_config

__all__ = ["Advice", "AdviceError", "Suggestion", "advise", "layer_config"]

"""nnperf: predict and improve how a neural network performs on a device.

The main job in four lines (see :mod:`nnperf.api` and the README)::

    import nnperf

    network = nnperf.load_model("resnet18")
    system = nnperf.System("torch", threads=1)
    nnperf.calibrate(system, if_needed=True)
    print(nnperf.predict(network, system).latency_s)
    print(nnperf.verify(network, system).error)

Every other command's counterpart is in :mod:`nnperf.api` (``nnperf.api.select``, ``nnperf.api.profile_primitives``,
...).

The public functions are imported on first use, so ``import nnperf`` stays
light (the command line starts without loading PyTorch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["System", "Verification", "__version__", "calibrate", "load_model", "predict", "predict_many", "profile",
           "verify"]
_API = frozenset(__all__) - {"__version__"}

if TYPE_CHECKING:
    from nnperf.api import System, Verification, calibrate, load_model, predict, predict_many, profile, verify


def __getattr__(name: str) -> Any:
    """The public functions of :mod:`nnperf.api`, imported when first asked for (PEP 562)."""
    if name in _API:
        from nnperf import api

        return getattr(api, name)
    raise AttributeError(f"module 'nnperf' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])

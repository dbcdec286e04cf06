"""Characterising a new configuration from about four measurements (Osterwind 3.3.3).

The global step depth d and fluctuation period r of a stepped parameter come
from a fitted full sweep on the same system; a new configuration only needs
its local slopes and intercepts, and ``characterisation_points`` names the
points that fix them. nnperf measures those points as a small sweep (stored,
resumed and reused like any other; ``nnperf.campaign.characterise``) in ``CHARACTERISE_ROUNDS`` interleaved
rounds: with one line fitted through two points, one point on a slow round
moves the whole line, and the median of three rounds keeps it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnperf.errors import NnperfError
from nnperf.measure.sweep import Sweep
from nnperf.prediction.steps._fits import global_fits, model_from_dict
from nnperf.prediction.steps._model import StepModel, StepShape

if TYPE_CHECKING:
    from nnperf.store import Store

CHARACTERISE_ROUNDS = 3
STEPPED = ("channels", "filters")


@dataclass(frozen=True)
class Characterisation:
    """A configuration's local model along ``parameter``: the points measured, their sweep and the fit."""

    parameter: str
    shape: StepShape
    points: tuple[int, ...]
    sweep: Sweep
    model: StepModel


def global_shape(store: Store, system_id: int, kind: str, parameter: str) -> StepShape:
    """The d and r fitted on this system's latest full sweep of ``kind`` ``parameter``."""
    if parameter not in STEPPED:
        raise NnperfError(f"characterisation works along {' or '.join(STEPPED)} (the stepped parameters), "
                          f"not {parameter}")
    fits = global_fits(store, system_id, kind)
    if (kind, parameter) not in fits:
        raise NnperfError(f"no fitted {kind} {parameter} sweep on this system: sweep {parameter} and run "
                          "`nnperf steps fit` first")
    return model_from_dict(fits[(kind, parameter)]).shape

"""The roles a system's model gives its network predictors, found from their names.

A :class:`~nnperf.prediction.NetworkPrediction` holds each network predictor's total by registry name; the
predictor classes say which role each plays (``primary_rank``, ``scales_layer_sum``, ``provides_fusion``), so
that which total is the prediction, which one is PreVIous' c x the sum and which one knows the fused layers is
asked of the classes, never of the names. A name that is not registered (a predictor unregistered since)
plays no role.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from nnperf.prediction._base import PREDICTORS, NetworkPredictor, predictor_class


def network_class(name: str) -> type[NetworkPredictor] | None:
    """The registered network predictor class named ``name``, or None when none is."""
    if name not in PREDICTORS.names():
        return None
    klass = predictor_class(name)
    return klass if issubclass(klass, NetworkPredictor) else None


def primary_name(names: Iterable[str]) -> str | None:
    """Of ``names``, the one whose class has the lowest ``primary_rank`` (the first of equal ranks); None when
    no class has one."""
    ranked: list[tuple[int, int, str]] = []
    for order, name in enumerate(names):
        klass = network_class(name)
        if klass is not None and klass.primary_rank is not None:
            ranked.append((klass.primary_rank, order, name))
    return min(ranked)[2] if ranked else None


def name_with(names: Iterable[str], role: Callable[[type[NetworkPredictor]], bool]) -> str | None:
    """The first of ``names`` whose class plays ``role``, or None."""
    for name in names:
        klass = network_class(name)
        if klass is not None and role(klass):
            return name
    return None


def scales_layer_sum(klass: type[NetworkPredictor]) -> bool:
    """The role of PreVIous' c x the sum of the per-layer predictions (Eq. 6)."""
    return klass.scales_layer_sum


def provides_fusion(klass: type[NetworkPredictor]) -> bool:
    """The role of knowing which layers the backend fuses."""
    return klass.provides_fusion

"""The registry of primitives (third parties add theirs through the ``nnperf.primitives`` entry-point group)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from nnperf.primitives._base import Primitive
from nnperf.primitives._layout import CHW, HWC, Layout, LayoutTransform, layout_order, layout_transforms
from nnperf.registry import Availability, Registry

PRIMITIVES: Registry[Primitive] = Registry("primitive", "nnperf.primitives")

VENDOR_NAMES = ("torch-conv2d", "onednn-chw", "onednn-hwc", "nnpack", "aten-im2col", "ort-chw", "ort-nchwc",
                "opencv", "opencv-winograd")


@functools.lru_cache(maxsize=1)
def _vendors() -> dict[str, Primitive]:
    from nnperf.primitives._vendor import vendor_primitives

    return {p.name: p for p in vendor_primitives()}


def _algorithm(name: str) -> Callable[[], Primitive]:
    def factory() -> Primitive:
        from nnperf.primitives._algorithms import ALGORITHMS
        from nnperf.primitives._mec import MECS
        from nnperf.primitives._winograd import WINOGRADS

        return next(p for p in ALGORITHMS + WINOGRADS + MECS if p.name == name)

    return factory


def _vendor(name: str) -> Callable[[], Primitive]:
    return lambda: _vendors()[name]


ALGORITHM_NAMES = ("direct", "im2col-fhw", "im2col-hwf", "im2row-hwf", "im2row-fhw", "kn2row", "kn2col",
                   "conv1x1-fhw", "conv1x1-hwf", "winograd-2x3", "winograd-4x3", "winograd-2x5", "fft", "mec-col",
                   "mec-row-partition")

for _name in VENDOR_NAMES:
    PRIMITIVES.register(_name, _vendor(_name))
for _name in ALGORITHM_NAMES:
    PRIMITIVES.register(_name, _algorithm(_name))


def get_primitive(name: str) -> Primitive:
    """The primitive called ``name``; an unknown name raises :class:`nnperf.registry.UnknownPluginError`
    (an :class:`NnperfError`) listing the known ones."""
    return PRIMITIVES.create(name)


def all_primitives() -> list[Primitive]:
    """Every registered primitive, by name."""
    return [PRIMITIVES.create(name) for name in PRIMITIVES.names()]


def primitive_report() -> list[tuple[Primitive, Availability]]:
    """Every primitive with whether it can run here."""
    return [(p, p.availability()) for p in all_primitives()]


def primitive_layouts() -> tuple[Layout, ...]:
    """The layouts the registered primitives read or write, chw and hwc always: chw, hwc, hcw, then any blocked
    one (:func:`~nnperf.primitives.layout_order`)."""
    found = {CHW, HWC}
    for p in all_primitives():
        found |= {p.input_layout, p.output_layout}
    return tuple(sorted(found, key=layout_order))


def all_transforms() -> list[LayoutTransform]:
    """Every transformation between the primitives' layouts (Mulder et al. 3.2.2: K*K, identities included)."""
    return layout_transforms(primitive_layouts())

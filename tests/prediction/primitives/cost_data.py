"""Synthetic primitive-time datasets shared by the cost-model tests: power laws in the MACs (convolutions) and in
the element count (layout transformations), with the primitives left out where they do not apply."""

from __future__ import annotations

from nnperf.primitives import ConvConfig, ConvSample, PrimitiveDataset, TransformSample, get_primitive, sample_configs

SEEDS = (ConvConfig.make(1, 64, 64, 56, 3, padding=1), ConvConfig.make(1, 128, 256, 28, 1),
         ConvConfig.make(1, 32, 64, 112, 3, stride=2, padding=1), ConvConfig.make(1, 48, 48, 28, 5, padding=2),
         ConvConfig.make(1, 96, 96, 28, 3, padding=1, groups=96))
"""Dense 3x3, 1x1, strided, 5x5 and depthwise layers: every primitive below applies to some of them only."""

LAW = {"direct": (2e-10, 1.0), "im2col-fhw": (5e-10, 0.9), "conv1x1-fhw": (1e-10, 1.05),
       "winograd-2x3": (3e-9, 0.8), "fft": (1e-8, 0.75)}
"""time_s = a * MACs ** b per primitive; conv1x1 applies to 1x1 kernels only, winograd-2x3 to unstrided 3x3."""

TRANSFORM_LAW = {"chw->hwc": (1e-9, 0.9), "hwc->chw": (3e-9, 0.85)}
"""time_s = a * numel ** b per transformation."""

SHAPES = [(1, c, (h, h)) for c in (3, 16, 32, 64, 128, 256) for h in (7, 14, 28, 56, 112)]
TEST_SHAPES = [(1, c, (h, h)) for c in (8, 24, 96, 200) for h in (10, 40, 150)]


def power_law_dataset(n: int, seed: int, factor: float = 1.0, shapes: list | None = None,
                      target: dict[str, tuple[float, float]] | None = None,
                      transform_factor: float = 1.0) -> PrimitiveDataset:
    """``n`` configurations sampled around :data:`SEEDS`, timed by :data:`LAW` where the primitive applies, and
    ``shapes`` (default :data:`SHAPES`) timed by :data:`TRANSFORM_LAW`, every time multiplied by ``factor``.

    ``target`` maps a primitive to (its own factor, an exponent replacing LAW's), ``transform_factor`` multiplies
    the transformations: another platform's times."""
    def time_s(name: str, macs: int) -> float:
        a, b = LAW[name]
        own, exponent = target[name] if target is not None else (1.0, b)
        return factor * own * a * macs ** exponent

    conv = tuple(ConvSample(c, {name: time_s(name, c.macs) for name in LAW if get_primitive(name).applies(c)})
                 for c in sample_configs(SEEDS, n, seed=seed))
    layout = tuple(TransformSample(batch, c, im, {t: factor * transform_factor * a * (batch * c * im[0] * im[1]) ** b
                                                  for t, (a, b) in TRANSFORM_LAW.items()})
                   for batch, c, im in (SHAPES if shapes is None else shapes))
    return PrimitiveDataset("synthetic", tuple(LAW), tuple(TRANSFORM_LAW), conv, layout)

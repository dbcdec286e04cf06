"""The primitive dataset and cost models from Python (Mulder et al.): profile, train, predict.

::

    import nnperf

    nnperf.profile_primitives(["resnet18", "model.onnx"], random=200, budget_s=600)  # stored as measured
    model, scores = nnperf.train_primitive_model(kind="nn2")                          # fitted, stored
    table = nnperf.predict_primitives("vgg16")                                        # every primitive, every layer
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nnperf.api._load import ModelLike, load_model
from nnperf.api._predict import Progress
from nnperf.api._session import StoreLike, opened_store

if TYPE_CHECKING:
    from nnperf.campaign import PrimitiveProfileReport
    from nnperf.primitives import ConvConfig, Primitive


def dataset_configs(models: Sequence[ModelLike] = (), random: int = 0, seed: int = 0) -> list[ConvConfig]:
    """The configurations a primitive dataset profiles: the distinct convolutions of ``models`` (every zoo
    network when none is given) followed by ``random`` configurations sampled around them."""
    from nnperf.primitives import conv_configs, sample_configs
    from nnperf.zoo import names

    networks = [load_model(m) for m in (models or names())]
    found = list(dict.fromkeys(c for network in networks for c in conv_configs(network)))
    return found + (sample_configs(found, random, seed) if random else [])


def select_primitives(names: Sequence[str]) -> list[Primitive]:
    """The primitives named by ``names``: primitive names or family names (``vendor``, ``winograd``, ...);
    every available primitive when empty. An unknown name is an error listing the known ones; a named primitive
    that cannot run here is an error saying why."""
    from nnperf.errors import NnperfError
    from nnperf.primitives import Family, all_primitives, get_primitive
    from nnperf.registry import UnavailableError

    if not names:
        return [p for p in all_primitives() if p.availability().ok]
    families = {f.value for f in Family}
    chosen: dict[str, Primitive] = {}
    for name in names:
        if name in families:
            chosen |= {p.name: p for p in all_primitives() if p.family.value == name and p.availability().ok}
            continue
        primitive = get_primitive(name)
        available = primitive.availability()
        if not available.ok:
            raise UnavailableError(f"primitive {name} is unavailable: {available.reason}")
        chosen[name] = primitive
    if not chosen:
        raise NnperfError(f"no primitive of {', '.join(names)} can run here")
    return list(chosen.values())


def profile_primitives(models: Sequence[ModelLike] = (), random: int = 0, *, primitives: Sequence[str] = (),
                       threads: int = 1, budget_s: float | None = None, store: StoreLike = None, seed: int = 0,
                       progress: Progress | None = None) -> PrimitiveProfileReport:
    """Profiles the ``primitives`` (names or families, see :func:`select_primitives`; all available ones by
    default) and every layout transformation on the configurations of :func:`dataset_configs` into the store,
    each time stored as it is taken; a configuration profiled before on this system is skipped, so calling it
    again after an interruption or a spent ``budget_s`` (seconds) goes on where it stopped."""
    from nnperf.campaign import profile_primitives as profile

    chosen = select_primitives(primitives)
    configs = dataset_configs(models, random, seed)
    with opened_store(store) as opened:
        return profile(opened, configs, threads, budget_s=budget_s, primitives=chosen, progress=progress)

"""Two runs, systems or predictions compared layer by layer, by op type and whole, from Python."""

from __future__ import annotations

import os

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.api._session import StoreLike, opened_store
from nnperf.ir import Network
from nnperf.report.compare import Comparison, SideSpec, load_side, parse_side


def compare(a: str | SideSpec, b: str | SideSpec, store: StoreLike = None, *, model: ModelLike | None = None,
            input_shape: InputShape | None = None, strict: bool = False) -> Comparison:
    """Side A against side B: per-layer times, time by op type and the whole network.

    Speed-up = A time / B time: above 1 B is faster. The store is only read.

    Parameters
    ----------
    a, b : str or SideSpec
        A side: 'run:ID' (a stored run), 'system:ID|KEY' (that stored system's newest finished run of ``model``)
        or 'predicted:ID|KEY' (that system's calibrated prediction of ``model``).
    store : Store, path or None, default None
        The measurement store (None: ``$NNPERF_DB``, else ``./nnperf.db``); a missing one is an error.
    model : str, path-like, Network or torch.nn.Module, optional
        The network of 'system:' sides (the name its runs were stored under, as given to :func:`profile`) and
        'predicted:' sides (loaded as :func:`load_model` does).
    input_shape : optional
        As for :func:`load_model`, for a 'predicted:' side.
    strict : bool, default False
        Refuse an ONNX file with operators nnperf has no dedicated layer type for.

    Returns
    -------
    Comparison
        ``layers`` and ``op_types`` (seconds, speed-ups), ``speedup`` and ``slower_pct`` of the whole network,
        ``slowdowns(count)``; ``to_dict(top)`` is the ``nnperf compare --json`` document.
    """
    from nnperf.report.compare import compare as side_by_side

    specs = tuple(side if isinstance(side, SideSpec) else parse_side(side) for side in (a, b))
    name, network = _model(model, input_shape, strict, any(s.kind == "predicted" for s in specs))
    with opened_store(store, create=False) as opened:
        first, second = (load_side(opened, spec, name, network) for spec in specs)
    return side_by_side(first, second)


def _model(model: ModelLike | None, input_shape: InputShape | None, strict: bool,
           predicted: bool) -> tuple[str | None, Network | None]:
    """The name the runs of ``model`` are stored under, and the network when a side predicts it (or when only
    the loaded network says its name)."""
    named = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
    if model is None or (named is not None and not predicted):
        return named, None
    network = load_model(model, input_shape, strict=strict)
    return named or network.name, network

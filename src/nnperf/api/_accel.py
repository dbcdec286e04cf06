"""The CNNergy accelerator model from Python (NeuPart): a network's energy per image on a row-stationary CNN
accelerator, design-space sweeps over its buffers and PE array, and the specs they run on.

A network is given as a model (zoo name, .onnx, .tflite or IR .json file, :class:`~nnperf.ir.Network`: its conv and FC
layers become rows, with sparsities measured or borrowed), as one of the public CNNergy model's networks
(``network=``, shipped layer tables) or as a layer table file (``table=``). The names of the four reference
networks given as the model take their shipped table unless a sparsity source (or, for
:func:`~nnperf.api.partition`, a stored system) asks for the IR network instead.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nnperf import accel
from nnperf.accel import AcceleratorSpec, AccelLayer, DesignSweep, IrMapping, NetworkEnergy
from nnperf.api._load import ModelLike, load_model
from nnperf.errors import NnperfError, ParameterError
from nnperf.ir import Network

Progress = Callable[[str, int, int], None]
"""Called with (what is being done, done, total)."""

PathLike = str | os.PathLike[str]
SpecLike = AcceleratorSpec | str | os.PathLike[str] | None
"""An accelerator spec, the path of a spec file (YAML, ``version: 1``), or None for the Eyeriss-like default."""

ZOO_TABLES = {"alexnet": "alexnet", "vgg16": "vgg16", "squeezenet1_1": "squeezenet_v11", "googlenet": "googlenet_v1"}
"""Zoo networks whose layers match a shipped CNNergy table row for row (for ``sparsity='table'``)."""

GLB_SIZES_KB = (4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 64.0, 88.0, 100.0, 128.0, 192.0, 256.0, 384.0, 512.0)
"""The GLB sizes (kB) a design sweep tries by default."""

GLB_LAWS = ("sqrt", "constant")
"""GLB energy per access against its size: CACTI-like square root, or constant (the public model's)."""


@dataclass(frozen=True)
class AccelSource:
    """The rows the accelerator model runs on, the spec, and where the rows come from."""

    name: str
    rows: tuple[AccelLayer, ...]
    spec: AcceleratorSpec
    batch: str
    """'table' for layer tables (their n), 'model' for IR networks (the model's choice)."""
    mapping: IrMapping | None = None
    sparsity: dict[str, float] | None = None
    sparsity_note: str = ""
    """Where the IR network's sparsities come from ('' for layer tables)."""

    @property
    def network(self) -> Network | None:
        return self.mapping.network if self.mapping is not None else None

    def energy(self) -> NetworkEnergy:
        """The rows' energy per image on the spec."""
        return accel.network_energy(self.rows, self.spec, self.name, batch=self.batch)


@dataclass(frozen=True)
class AccelEnergy:
    """A network's energy per image on the accelerator (``energy``: per layer, with breakdowns and schedules)."""

    energy: NetworkEnergy
    sparsity_source: str = ""
    """Where the IR network's sparsities come from; '' for a layer table."""
    files: tuple[Path, ...] = ()
    """The figure written (``plot``), if any."""

    @property
    def total_energy_j(self) -> float:
        return self.energy.total_j

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf accel energy --json`` document (energies in joules)."""
        document = self.energy.to_dict()
        document["sparsity_source"] = self.sparsity_source or "layer table"
        if self.files:
            document["files"] = [str(f) for f in self.files]
        return document


@dataclass(frozen=True)
class AccelSweep:
    """A design-space sweep (``sweep``: every point's energy, the optimum, the smallest GLB near it)."""

    sweep: DesignSweep
    files: tuple[Path, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf accel sweep --json`` document."""
        document = self.sweep.to_dict()
        if self.files:
            document["files"] = [str(f) for f in self.files]
        return document


def accel_energy(model: ModelLike | None = None, spec: SpecLike = None, *, network: str | None = None,
                 table: PathLike | None = None, bits: int | None = None, control: bool = True,
                 sparsity: str | None = None, images: Sequence[PathLike] | None = None, plot: PathLike | None = None,
                 progress: Progress | None = None) -> AccelEnergy:
    """Energy per image of each conv and FC layer on a row-stationary accelerator (CNNergy, NeuPart IV).

    Parameters
    ----------
    model : str, path-like, Network or torch.nn.Module, optional
        Anything :func:`load_model` takes; a reference network's name (alexnet, vgg16, squeezenet_v11 or
        squeezenet1_1, googlenet_v1 or googlenet) takes its shipped table unless ``sparsity`` or ``images`` is
        given. Give exactly one of ``model``, ``network`` and ``table``.
    spec : AcceleratorSpec, path or None, default None
        The accelerator (None: the Eyeriss-like one of ``bits``).
    network : str, optional
        One of the public CNNergy model's networks (shipped layer tables with their sparsities and batches).
    table : path, optional
        A layer table: ``name,R,M,H,C,U,E,s_if,s_of,n`` (optional ``groups,out,block``).
    bits : {16, 8}, optional
        Data width (default 16, the CNNergy reference model's; or the spec file's, which it must match).
    control : bool, default True
        Count clock and other control energy (False: the reference's 'without control' variant).
    sparsity : str, optional
        For ``model``: 'measure' (run it on ``images``; the default), 'table' (borrow the shipped table of the same
        zoo network), 'table:NAME', or a CSV file ``tensor,sparsity``.
    images : sequence of paths, optional
        Images or folders for ``sparsity='measure'`` (default: matplotlib's sample photograph).
    plot : path, optional
        Write the energy per layer as a figure here.
    progress : callable, optional
        Called with (what, done, total) while sparsity is measured.

    Returns
    -------
    AccelEnergy
        ``energy`` (per layer and ``total_j``, joules), where the sparsities come from, the figure written.
    """
    source = accel_source(model, spec, network=network, table=table, bits=bits, default_bits=16, control=control,
                          sparsity=sparsity, images=images, progress=progress)
    energy = source.energy()
    files = ()
    if plot is not None:
        from nnperf.report.accel import plot_energy

        files = (plot_energy(energy, Path(plot)),)
    return AccelEnergy(energy, source.sparsity_note, files)


def accel_sweep(model: ModelLike | None = None, spec: SpecLike = None, *, glb_kb: Sequence[float] = GLB_SIZES_KB,
                pe_arrays: Sequence[tuple[int, int]] | None = None, rf_scales: Sequence[float] = (1.0,),
                glb_law: str = "sqrt", network: str | None = None, table: PathLike | None = None,
                bits: int | None = None, control: bool = True, sparsity: str | None = None,
                images: Sequence[PathLike] | None = None, plot: PathLike | None = None,
                progress: Progress | None = None) -> AccelSweep:
    """The network's energy at every GLB size, PE array and register-file scale (NeuPart VIII-B, Fig. 13(c)).

    Every point re-schedules with the model's own batch choice. ``model``, ``spec``, ``network``, ``table``,
    ``control``, ``sparsity``, ``images`` and ``progress`` are as for :func:`accel_energy`; ``bits`` defaults to 8
    (NeuPart's design sweep).

    Parameters
    ----------
    glb_kb : sequence of float
        GLB sizes in kB (default 4 to 512).
    pe_arrays : sequence of (rows, cols), optional
        PE arrays (default: the spec's).
    rf_scales : sequence of float, default (1.0,)
        Register files as multiples of the spec's.
    glb_law : {'sqrt', 'constant'}, default 'sqrt'
        GLB energy per access against size: CACTI-like, or constant (the public model's, which shows no optimum).
    plot : path, optional
        Write energy against GLB size as a figure here.

    Returns
    -------
    AccelSweep
        ``sweep``: every point, ``best`` (the optimum) and ``smallest_near_best()`` (the smallest GLB within 2%).
    """
    _check_sweep(glb_kb, pe_arrays, rf_scales, glb_law)
    source = accel_source(model, spec, network=network, table=table, bits=bits, default_bits=8, control=control,
                          sparsity=sparsity, images=images, progress=progress)
    sweep = accel.sweep_design(source.rows, replace(source.spec, glb_energy_law=glb_law), list(glb_kb),
                               list(pe_arrays) if pe_arrays else None, list(rf_scales), source.name,
                               progress=(lambda d, t: progress("design sweep", d, t)) if progress else None)
    sweep.best  # noqa: B018  (raises when no configuration can run the network)
    files = ()
    if plot is not None:
        from nnperf.report.accel import plot_sweep

        files = (plot_sweep(sweep, Path(plot)),)
    return AccelSweep(sweep, files)


def accel_spec(spec: PathLike | None = None, *, bits: int = 16) -> AcceleratorSpec:
    """A complete accelerator spec: the Eyeriss-like defaults of ``bits`` (16 or 8), or a spec file's with the
    defaults filled in (as YAML: :func:`accel_spec_yaml`)."""
    if spec is not None:
        return accel.load_spec(spec)
    if bits not in (16, 8):
        raise NnperfError(f"bits must be 16 or 8, got {bits!r}")
    return accel.eyeriss_spec(bits)


def accel_spec_yaml(spec: SpecLike = None, *, bits: int = 16) -> str:
    """An accelerator spec as the YAML document a spec file holds (``nnperf accel spec``): a spec, or
    :func:`accel_spec`'s of a file or of the defaults of ``bits``; a starting point for one's own."""
    chosen = spec if isinstance(spec, AcceleratorSpec) else accel_spec(spec, bits=bits)
    return accel.spec_yaml(chosen)


def _check_sweep(glb_kb: Sequence[float], pe_arrays: Sequence[tuple[int, int]] | None,
                 rf_scales: Sequence[float], glb_law: str) -> None:
    """Refuses a design sweep's grid before anything is loaded, naming the bad value."""
    for name, values in (("glb_kb", glb_kb), ("rf_scales", rf_scales)):
        if not values or not all(isinstance(v, numbers.Real) and math.isfinite(v) and v > 0 for v in values):
            raise NnperfError(f"{name}: every value must be a finite number > 0, got {list(values)!r}")
    for array in pe_arrays or ():
        if len(array) != 2 or min(array) < 1:
            raise NnperfError(f"pe_arrays: {array!r} is not a PE array (rows, cols) of at least one row and column")
    if glb_law not in GLB_LAWS:
        raise NnperfError(f"glb_law must be one of {', '.join(GLB_LAWS)}, got {glb_law!r}")


def accel_source(model: ModelLike | None, spec: SpecLike, *, network: str | None, table: PathLike | None,
                 bits: int | None, default_bits: int, control: bool = True, sparsity: str | None = None,
                 images: Sequence[PathLike] | None = None, ir: bool = False,
                 progress: Progress | None = None) -> AccelSource:
    """The rows and spec of exactly one of ``model``, ``network`` and ``table`` (see :func:`accel_energy`);
    ``ir`` maps even a reference network's name through the IR (the zoo network, not the shipped table)."""
    if len([x for x in (model, network, table) if x is not None and x != ""]) != 1:
        raise ParameterError("name exactly one of {model}, {network} or {table}", "model", "network", "table")
    chosen = _spec(spec, bits, default_bits, control)
    if isinstance(model, str) and not (ir or sparsity is not None or images) and _is_reference(model):
        network, model = model, None
    if network or table:
        if sparsity or images:
            raise ParameterError("{sparsity} and {images} apply to {model}; layer tables carry their own sparsities",
                                 "sparsity", "images", "model")
        rows = accel.reference_network(network) if network else accel.read_table(table)  # type: ignore[arg-type]
        name = network or Path(table).stem  # type: ignore[arg-type]
        return AccelSource(name=name, rows=tuple(rows), spec=chosen, batch="table")
    assert model is not None
    loaded = load_model(model)
    found, note = _sparsity(model, loaded, sparsity, images, progress)
    mapping = accel.map_network(loaded, found)
    return AccelSource(name=loaded.name, rows=mapping.rows, spec=chosen, batch="model", mapping=mapping,
                       sparsity=found, sparsity_note=note)


def _is_reference(name: str) -> bool:
    """Whether ``name`` names a shipped table (a reference network or one of its aliases)."""
    return name.lower() in accel.REFERENCE_NETWORKS or name.lower() in accel.NETWORK_ALIASES


def _spec(spec: SpecLike, bits: int | None, default_bits: int, control: bool) -> AcceleratorSpec:
    if isinstance(spec, AcceleratorSpec):
        chosen = spec
    elif spec is not None:
        chosen = accel.load_spec(spec)
    else:
        chosen = accel.eyeriss_spec(bits or default_bits)
    if bits is not None and bits != chosen.bits:
        where = chosen.name if isinstance(spec, AcceleratorSpec) else spec
        raise ParameterError(f"{{bits}} {bits} contradicts {where} (bits: {chosen.bits}); drop one of them", "bits")
    if not control:
        chosen = replace(chosen, clock_power_w=0.0, control_fraction=0.0)
    return chosen


def _sparsity(model: ModelLike, network: Network, source: str | None, images: Sequence[PathLike] | None,
              progress: Progress | None) -> tuple[dict[str, float], str]:
    """Every tensor's zero fraction for ``network`` and a note saying where it comes from."""
    source = source or "measure"
    if images and source != "measure":
        raise ParameterError("{images} applies to {sparsity} measure only", "images", "sparsity")
    if source == "measure":
        files = accel.image_files(list(images)) if images else accel.sample_images()
        if not files:
            raise ParameterError("no images to measure sparsity on: give {images}", "images")
        found = accel.measure_sparsity(
            network, files, progress=(lambda d, t: progress("measuring sparsity", d, t)) if progress else None)
        return found, (f"sparsity measured on {len(files)} image(s) with nnperf's seeded weights "
                       "(the IR carries no trained weights)")
    if source == "table" or source.startswith("table:"):
        named = model if isinstance(model, str) else network.name
        table = source.partition(":")[2] or ZOO_TABLES.get(named.lower(), "")
        if not table:
            raise ParameterError(f"no shipped table matches {named!r}; name one with {{sparsity}} table:NAME "
                                 f"({', '.join(accel.REFERENCE_NETWORKS)})", "sparsity")
        return accel.table_sparsity(network, accel.reference_network(table)), f"sparsity borrowed from table {table}"
    return accel.read_sparsity(source, network), f"sparsity from {source}"

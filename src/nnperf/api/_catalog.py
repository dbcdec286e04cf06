"""What nnperf knows without measuring, from Python: the zoo, the backends and power meters that run here, a
network's metrics, and a zoo network written as ONNX (``nnperf zoo``, ``backends``, ``inspect``, ``export``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nnperf.api._load import InputShape, ModelLike, load_model
from nnperf.errors import ParameterError
from nnperf.ir.metrics import DType

if TYPE_CHECKING:
    from nnperf.ir import Network
    from nnperf.ir.metrics import NetworkMetrics
    from nnperf.zoo import ZooEntry


@dataclass(frozen=True)
class ZooNetwork:
    """A zoo network: its canonical input shape, MACs, parameters and layer count."""

    name: str
    input_shape: tuple[int, ...]
    macs: int
    params: int
    layers: int
    description: str
    variant: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "input_shape": list(self.input_shape), "macs": self.macs, "params": self.params,
                "layers": self.layers, "description": self.description, "variant": self.variant}


@dataclass(frozen=True)
class Zoo:
    """The reference networks, the default calibration networks (PreVIousNet-01 to -05) and those ``nnperf calibrate
    --blocks`` adds (PreVIousNet-06), in registry order."""

    networks: tuple[ZooNetwork, ...]
    calibration_networks: tuple[ZooNetwork, ...]
    block_calibration_networks: tuple[ZooNetwork, ...]


def zoo() -> Zoo:
    """The zoo's networks with their input sizes, MACs and parameters (``nnperf zoo``)."""
    from nnperf import zoo as registry

    return Zoo(tuple(_zoo_network(e) for e in registry.entries()),
               tuple(_zoo_network(e) for e in registry.calibration_entries()),
               tuple(_zoo_network(e) for e in registry.block_calibration_entries()))


def _zoo_network(entry: ZooEntry) -> ZooNetwork:
    from nnperf.ir.metrics import network_metrics
    from nnperf.zoo import zoo_network

    metrics = network_metrics(zoo_network(entry.name))
    return ZooNetwork(entry.name, tuple(entry.input_shape), metrics.macs, metrics.params, len(metrics.layers),
                      entry.description, entry.variant)


@dataclass(frozen=True)
class Available:
    """A backend (on ``device``) or power meter, whether it can run here and why not; ``measures`` is false for
    the fake backend (harness tests only). ``version`` is the installed framework's ('' when not installed or for
    a power meter) and ``extra`` the nnperf extra that installs an optional one ('' for the frameworks nnperf
    always installs)."""

    name: str
    device: str
    available: bool
    reason: str
    measures: bool = True
    version: str = ""
    extra: str = ""


@dataclass(frozen=True)
class Backends:
    """Every registered backend (for cpu and cuda) and power meter, with whether it runs here."""

    backends: tuple[Available, ...]
    power_meters: tuple[Available, ...]


def backends() -> Backends:
    """Which backends and power meters can run on this machine, and why not (``nnperf backends``)."""
    from nnperf.measure.backends import BACKENDS, backend_report
    from nnperf.measure.power import meter_report

    return Backends(
        tuple(Available(name, device, a.ok, a.reason, name != "fake", BACKENDS.create(name).version(),
                        BACKENDS.create(name).EXTRA)
              for device in ("cpu", "cuda") for name, a in backend_report(device)),
        tuple(Available(name, "", a.ok, a.reason) for name, a in meter_report()))


@dataclass(frozen=True)
class Inspection:
    """A network and its per-layer metrics (MACs, ops, parameters, memory operations), its bytes counted in
    elements of ``dtype``."""

    network: Network
    metrics: NetworkMetrics
    dtype: DType = DType.FLOAT32

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf inspect --json`` document."""
        from nnperf.report.tables import metrics_document

        return metrics_document(self.network, self.metrics, self.dtype)


def inspect(model: ModelLike, *, input_shape: InputShape | None = None, strict: bool = False,
            save_ir: str | os.PathLike[str] | None = None, dtype: str | DType = DType.FLOAT32) -> Inspection:
    """The per-layer metrics of ``model`` (``nnperf inspect``).

    Parameters
    ----------
    model, input_shape, strict
        As for :func:`load_model`.
    save_ir : path, optional
        Also write the network's IR there as versioned JSON.
    dtype : {'float32', 'float16', 'bfloat16', 'int8'}, default 'float32'
        The element type the byte counts (memory operations) are in.
    """
    from nnperf.ir import save_network
    from nnperf.ir.metrics import network_metrics

    try:
        element = DType(dtype)
    except ValueError:
        raise ParameterError(f"{{dtype}} must be one of {', '.join(d.value for d in DType)}, got {dtype!r}",
                             "dtype") from None
    network = load_model(model, input_shape, strict=strict)
    metrics = network_metrics(network)
    if save_ir is not None:
        save_network(network, save_ir)
    return Inspection(network, metrics, element)


@dataclass(frozen=True)
class Exported:
    """A zoo network written as ONNX: where, with which input shape and weight seed."""

    network: str
    path: Path
    input_shape: tuple[int, ...]
    seed: int

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf export --json`` document."""
        return {"format": "nnperf-export", "version": 1, "network": self.network, "path": str(self.path),
                "input_shape": list(self.input_shape), "seed": self.seed}


def export(name: str, out: str | os.PathLike[str], *, seed: int = 0) -> Exported:
    """Writes the zoo network ``name`` (random weights of ``seed``, canonical input size) to the ONNX file ``out``,
    batch normalisation kept as its own node (``nnperf export``); an unwritable ``out`` is refused before the
    network is built."""
    from nnperf import zoo as registry
    from nnperf.ir.export import check_output_path, export_onnx

    check_output_path(out)  # before the (slow) build
    entry = registry.get(name)
    path = export_onnx(entry.build(seed), entry.example_input(seed), out)
    return Exported(entry.name, Path(path), tuple(entry.input_shape), seed)

"""Where to split a network between a client and the cloud (NeuPart) from Python.

The client is the CNNergy accelerator (:mod:`nnperf.api._accel`'s sources: a model, a shipped network or a layer
table) or a calibrated CPU or GPU (a stored system), whose per-layer latency, and energy where it was calibrated
with a power meter, its calibration predicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from nnperf.accel import AcceleratorSpec, NetworkEnergy
from nnperf.api._accel import AccelSource, PathLike, Progress, SpecLike, accel_source
from nnperf.api._load import ModelLike
from nnperf.api._session import StoredSystem, StoreLike, opened_store
from nnperf.errors import NnperfError, ParameterError
from nnperf.ir import Network
from nnperf.optimize.partition import (
    NEUPART_INPUT_SPARSITIES,
    Channel,
    ChannelSweep,
    InputCoding,
    PartitionResult,
    QuartileRow,
    SplitPoint,
    cloud_macs_per_s,
    network_points,
    pareto_front,
    parse_bitrate,
    parse_power,
    quartile_table,
    table_points,
)
from nnperf.optimize.partition import partition as split_points
from nnperf.prediction import SystemModel, load_stored_model

NEUPART_INPUT_SPARSITY = 0.608
"""The input image's zero fraction when neither a sparsity nor a JPEG size is given (NeuPart's median JPEG)."""

SWEEP_BITRATES_BPS = tuple(m * 1e6 for m in range(5, 201, 5))
"""The bit rates of the figures: 5 to 200 Mbit/s in steps of 5."""

NEUPART_POWERS_W = (0.5, 1.3)
"""NeuPart's two transmit powers (give them as ``sweep_powers_w`` to draw both in the figures)."""

SEND_MODES = ("both", "ofmap", "next-input")


@dataclass(frozen=True)
class NetworkPartition:
    """The client's energy cost and the end-to-end delay at every split point, and the energy-optimal one."""

    network: str
    client: str
    """What computes before the split: the accelerator (spec, bits) or a stored system and how its energy is had."""
    input: str
    """How the input image is sent at the fully-cloud point."""
    result: PartitionResult
    """Every point's costs (joules, seconds), ``best``, ``savings_vs_fcc`` and ``savings_vs_fisc``."""
    quartiles: tuple[QuartileRow, ...]
    """The optimum at NeuPart's input-sparsity quartile delimiters (none for a JPEG input)."""
    pareto_front: tuple[str, ...]
    """The split points on the Pareto front of client energy against end-to-end delay."""
    sparsity_source: str = ""
    files: tuple[Path, ...] = ()

    @property
    def best(self) -> str:
        """The energy-optimal split point's name."""
        return self.result.best_point.name

    def to_dict(self) -> dict[str, Any]:
        """The ``nnperf partition --json`` document."""
        document = self.result.to_dict()
        document.update({"network": self.network, "client": self.client, "input": self.input,
                         "pareto_front": list(self.pareto_front), "quartiles": [vars(row) for row in self.quartiles],
                         "files": [str(f) for f in self.files]})
        if self.sparsity_source:
            document["sparsity_source"] = self.sparsity_source
        return document


@dataclass(frozen=True)
class _Client:
    """What computes before the split: its label and per-layer energy (J) and latency (s)."""

    label: str
    energy_j: Mapping[str, float]
    latency_s: Mapping[str, float]


def partition(model: ModelLike | None = None, system: StoredSystem | None = None, store: StoreLike = None, *,
              spec: SpecLike = None, network: str | None = None, table: PathLike | None = None,
              bits: int | None = None, control: bool = True, sparsity: str | None = None,
              images: Sequence[PathLike] | None = None, bitrate: float | str = "60Mbps", tx_power: float | str = "0.5W",
              input_sparsity: float | None = None, jpeg_bytes: float | None = None, send: str = "both",
              cloud_tops: float = 92.0, client_power: float | str | None = None, out: PathLike | None = None,
              sweep_bitrates_bps: Sequence[float] = SWEEP_BITRATES_BPS,
              sweep_powers_w: Sequence[float | str] | None = None, progress: Progress | None = None) -> NetworkPartition:
    """The energy-optimal split of a network between the client and the cloud (NeuPart).

    The client's cost at a split point is its compute up to there plus sending the rest (RLC-coded); the result
    has the optimum, its savings against fully cloud (FCC) and fully in situ (FISC) computing, and the delays.

    Parameters
    ----------
    model, spec, network, table, control, sparsity, images, progress
        What runs, as for :func:`accel_energy` (``bits`` defaults to 8, NeuPart's partitioning results).
    system : int, str or SystemModel, optional
        The client is this calibrated system (a stored system's id or key prefix, or a fitted model), not the
        accelerator: its per-layer latency (and energy, where calibrated with a power meter) predicted for
        ``model``, which is then mapped through the IR even when it names a shipped table.
    store : Store, path or None, default None
        Where ``system`` is stored (None: ``$NNPERF_DB``, else ``./nnperf.db``); only read.
    bitrate, tx_power : float or str, default '60Mbps', '0.5W'
        The uplink's effective bit rate (bit/s, or text: '1.5Gbps') and transmit power (W, or text: '500mW').
    input_sparsity, jpeg_bytes : float, optional
        The image sent RLC-coded at this zero fraction (default 0.608, NeuPart median) or as a JPEG of this many bytes.
    send : {'both', 'ofmap', 'next-input'}, default 'both'
        For layer tables: split after a layer's ofmap before pooling, after the next layer's input, or both.
    cloud_tops : float, default 92
        Cloud throughput in tera-operations per second, two per MAC (a TPU).
    client_power : float or str, optional
        A ``system`` calibrated without a power meter: its power while computing (energy = power x latency).
    out : path, optional
        Write fig10_energy_cost.png, fig12_savings.png, fig13a_delay.png and pareto.png here; Fig. 12 and 13(a)
        sweep ``sweep_bitrates_bps`` (bit/s) at ``tx_power`` and, as context, ``sweep_powers_w`` (W, or '500mW').

    Returns
    -------
    NetworkPartition
        Every split point's energy cost and delay, ``best``, the quartile table and the Pareto front.
    """
    channel, coding, cloud = _setting(bitrate, tx_power, input_sparsity, jpeg_bytes, send, cloud_tops)
    powers_w = None if sweep_powers_w is None else [_quantity(p, parse_power) for p in sweep_powers_w]
    if system is not None and model is None:
        raise ParameterError("{system} partitions an IR network: name a {model} (zoo name, .onnx, .tflite or .json)",
                             "system", "model")
    source = accel_source(model, spec, network=network, table=table, bits=bits, default_bits=8, control=control,
                          sparsity=sparsity, images=images, ir=system is not None, progress=progress)
    energy = source.energy() if system is None else None
    client = _accelerator_client(source.spec, energy) if energy is not None else _system_client(
        system, store, source.network, client_power)  # type: ignore[arg-type]
    points_for = partial(_points, source, energy, client, send, cloud)
    points = points_for(coding)
    result = split_points(points, channel)
    quartiles = _quartiles(points_for, channel) if jpeg_bytes is None else []
    files = _figures(Path(out), points, result, sweep_bitrates_bps, powers_w,
                     (source.name, client.label, coding.label, f"{cloud_tops:g} TOPS")) if out is not None else ()
    return NetworkPartition(source.name, client.label, coding.label, result, tuple(quartiles),
                            tuple(result.points[i].name for i in pareto_front(result)), source.sparsity_note, files)


def _quartiles(points_for: Callable[[InputCoding], list[SplitPoint]], channel: Channel) -> list[Any]:
    """The savings at NeuPart's input-sparsity quartile delimiters (its Table IV)."""
    return quartile_table(lambda s: points_for(InputCoding(sparsity=s)), NEUPART_INPUT_SPARSITIES, channel)


def _points(source: AccelSource, energy: NetworkEnergy | None, client: _Client, send: str, cloud_rate: float,
            coding: InputCoding) -> list[SplitPoint]:
    """The split points of a layer table (the accelerator's energy) or of an IR network (the client's); the cloud
    computes ``cloud_rate`` MACs per second."""
    if source.mapping is None:
        assert energy is not None
        return table_points(energy, coding, send, cloud_rate)
    assert source.sparsity is not None
    return network_points(source.mapping.network, client.energy_j, client.latency_s, source.sparsity, coding,
                          source.spec.rlc_factor, cloud_rate)


def _setting(bitrate: float | str, tx_power: float | str, input_sparsity: float | None, jpeg_bytes: float | None,
             send: str, cloud_tops: float) -> tuple[Channel, InputCoding, float]:
    """The channel, the input's coding and the cloud's MACs per second, checked."""
    channel = Channel(_quantity(bitrate, parse_bitrate), _quantity(tx_power, parse_power))
    if send not in SEND_MODES:
        raise NnperfError(f"send must be one of {', '.join(SEND_MODES)}, got {send!r}")
    coding = InputCoding(sparsity=NEUPART_INPUT_SPARSITY if input_sparsity is None and jpeg_bytes is None
                         else input_sparsity, jpeg_bytes=jpeg_bytes)
    return channel, coding, cloud_macs_per_s(cloud_tops)


def _quantity(value: float | str, parse: Callable[[str], float]) -> float:
    """Text with a unit read by ``parse``; a number is taken as it is (the channel checks it)."""
    return parse(value) if isinstance(value, str) else value


def _accelerator_client(spec: AcceleratorSpec, energy: NetworkEnergy) -> _Client:
    return _Client(f"CNNergy accelerator ({spec.name}, {spec.bits}-bit)",
                   {row.layer.name: row.energy_j for row in energy.layers},
                   {row.layer.name: row.latency_s for row in energy.layers})


def _system_client(system: StoredSystem, store: StoreLike, network: Network,
                   client_power: float | str | None) -> _Client:
    """The stored system's predicted per-layer latency and energy (calibrated, or ``client_power`` x latency)."""
    if isinstance(system, SystemModel):
        model = system
    else:
        with opened_store(store, create=False) as opened:
            model = load_stored_model(opened, system)
    prediction = model.predict(network)
    latency = {p.layer: p.latency_s for p in prediction.layers}
    if all(p.energy_j is not None for p in prediction.layers):
        energy = {p.layer: float(p.energy_j or 0.0) for p in prediction.layers}
        how = "energy predicted by its calibration"
    elif client_power is not None:
        power = _quantity(client_power, parse_power)
        if not power > 0:
            raise NnperfError(f"client_power must be > 0 W, got {client_power!r}")
        energy = {name: power * seconds for name, seconds in latency.items()}
        how = f"energy = {power:g} W x predicted latency"
    else:
        named = f" {system}" if not isinstance(system, SystemModel) else ""
        raise NnperfError(f"system{named} ({model.system_label}) was calibrated without a power meter, so it "
                             "predicts no energy: give the client's average power as {client_power}", "client_power")
    return _Client(f"{model.system_label} (latency predicted per layer; {how})", energy, latency)


def _figures(out: Path, points: Sequence[SplitPoint], result: PartitionResult, bitrates_bps: Sequence[float],
             powers_w: Sequence[float] | None, setting: tuple[str, str, str, str]) -> tuple[Path, ...]:
    """The four figures, Fig. 12 and 13(a) over :func:`figure_sweep`; ``setting`` is the network, the client,
    the input's coding and the cloud's throughput, for their titles and metadata."""
    from nnperf.report.partition import FigureSetting, plot_delay, plot_energy_cost, plot_pareto, plot_savings

    named = FigureSetting(*setting)
    sweep = figure_sweep(points, result, bitrates_bps, powers_w)
    return (plot_energy_cost(result, out / "fig10_energy_cost.png", named),
            plot_savings(sweep, out / "fig12_savings.png", result, named),
            plot_delay(sweep, out / "fig13a_delay.png", result, named),
            plot_pareto(result, out / "pareto.png", named))


def figure_sweep(points: Sequence[SplitPoint], result: PartitionResult, bitrates_bps: Sequence[float],
                 powers_w: Sequence[float] | None = None) -> ChannelSweep:
    """The channel grid behind Fig. 12 and 13(a): ``bitrates_bps`` with the requested bit rate added (so that
    the requested power's curve passes through the marked operating point), the requested power first, then
    the other powers of ``powers_w``; no power the caller did not ask for."""
    from nnperf.optimize.partition import sweep_channels

    channel = result.channel
    rates = sorted({*map(float, bitrates_bps), channel.bitrate_bps})
    others = dict.fromkeys(map(float, () if powers_w is None else powers_w))
    powers = [channel.tx_power_w, *(p for p in others if p != channel.tx_power_w)]
    return sweep_channels(points, rates, powers)

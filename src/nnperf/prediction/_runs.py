"""A network's stored measurements, as the calibration's fit and the evaluation read them (measured by
``nnperf.campaign.measure_networks``)."""

from __future__ import annotations

from dataclasses import dataclass

from nnperf.ir import Network
from nnperf.store import LayerRecord, NetworkRecord, RunRecord


@dataclass(frozen=True)
class MeasuredNetwork:
    """One network's stored measurements: its layers (by the campaign's per-layer method) and the whole."""

    network: Network
    run: RunRecord
    layers: tuple[LayerRecord, ...]
    whole: NetworkRecord
    reused: bool

    def layer_median_s(self) -> dict[str, float]:
        return {r.layer: r.median_s for r in self.layers}

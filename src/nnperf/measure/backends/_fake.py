"""A fake backend with a seeded cost and noise model, for testing the harness only.

Never used for a reported figure: its times are a formula, not a measurement.
Layer cost = ``overhead_s`` + ``s_per_mac`` * MACs, or + ``s_per_op`` * #OPs for
layers without MACs (pooling, activations, ...), times
log-normal noise; with probability ``outlier_p`` an execution takes
``outlier_factor`` times longer. The whole network costs the sum of its layers
times ``network_factor``. A ``FakeClock`` advances by every modelled time, so
harness tests run instantly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from nnperf.ir import Layer, Network
from nnperf.ir.metrics import layer_metrics
from nnperf.measure._stats import fixed_timing
from nnperf.measure._types import LayerMeasurement, Method
from nnperf.measure.backends._base import DEFAULT_OPTIONS, Backend, BackendOptions, ProfileResult
from nnperf.registry import Availability


class FakeClock:
    """A clock that only moves when told to (seconds)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class CostModel:
    """The fake device's cost and noise model (seconds)."""

    overhead_s: float = 5e-6
    s_per_mac: float = 1e-10
    s_per_op: float = 1e-9
    noise_sigma: float = 0.02
    outlier_p: float = 0.0
    outlier_factor: float = 3.0
    network_factor: float = 1.0
    network_call_delta_s: float = 0.0
    """What a layer call inside the whole network costs more (or less) than the same call timed alone."""
    clock_overhead_s: float = 0.0
    """Added once per timed block, like a real timer's call overhead."""

    def layer_cost_s(self, layer: Layer) -> float:
        m = layer_metrics(layer)
        return self.overhead_s + (self.s_per_mac * m.macs if m.macs else self.s_per_op * m.ops)


class _FakeTimer:
    def __init__(self, cost_s: float, model: CostModel, rng: np.random.Generator, clock: FakeClock) -> None:
        self.cost_s, self.model, self.rng, self.clock = cost_s, model, rng, clock
        self.calls = 0
        self.runs = 0
        """Executions modelled, over every call."""

    def time_block(self, n: int) -> float:
        self.calls += 1
        self.runs += n
        noise = self.rng.lognormal(0.0, self.model.noise_sigma, size=n)
        outliers = self.rng.random(n) < self.model.outlier_p
        per_run = self.cost_s * noise * np.where(outliers, self.model.outlier_factor, 1.0)
        elapsed = float(per_run.sum()) + self.model.clock_overhead_s
        self.clock.advance(elapsed)
        return elapsed


class FakeBackend(Backend):
    """The harness-testing backend: modelled times on a fake clock."""

    name = "fake"
    OPTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {}
    has_profiler = True

    def __init__(self, options: BackendOptions = DEFAULT_OPTIONS, seed: int = 0, model: CostModel = CostModel(),
                 clock: FakeClock | None = None) -> None:
        super().__init__(options, seed)
        self.model = model
        self.clock = clock or FakeClock()
        self.rng = np.random.default_rng(seed)

    @classmethod
    def availability(cls, device: str = "cpu") -> Availability:
        return Availability.yes() if device == "cpu" else Availability.no("the fake backend models a CPU only")

    def device_name(self) -> str:
        return "fake CPU (cost model)"

    def network_cost_s(self, network: Network) -> float:
        layers = sum(self.model.layer_cost_s(layer) for layer in network.layers)
        return self.model.network_factor * layers + self.model.network_call_delta_s * len(network.layers)

    def network_timer(self, network: Network) -> _FakeTimer:
        return _FakeTimer(self.network_cost_s(network), self.model, self.rng, self.clock)

    def layer_timer(self, layer: Layer) -> _FakeTimer:
        return _FakeTimer(self.model.layer_cost_s(layer), self.model, self.rng, self.clock)

    def profile(self, network: Network, runs: int) -> ProfileResult:
        layers = []
        totals = np.zeros(runs)
        for layer in network.layers:
            timer = self.layer_timer(layer)
            times = [timer.time_block(1) for _ in range(runs)]
            totals += times
            layers.append(LayerMeasurement(layer.name, layer.op.value, Method.PROFILER, fixed_timing(times), layer.name))
        return ProfileResult(tuple(layers), fixed_timing(list(totals)), {})

"""A whole network timed beside the machine-speed reference, under a comparison protocol, into the store.

The network and the reference (:data:`nnperf.measure.REFERENCE`) are one comparison: timed in interleaved
rounds (the default), at the same time on two cores (duet), or one after the other (sequential, the old way).
The network's median time says how long it took at the machine's speed during the measurement; its median
per-round ratio to the reference, times the reference's time at calibration, says how long it takes at the speed
the calibration ran at, which is the speed a prediction holds at. Both are stored: the network's round times as a
whole-network measurement whose extras carry the reference's median (``reference_s``) and the median ratio
(``reference_ratio``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

from nnperf.campaign._campaign import open_campaign
from nnperf.campaign._profile import network_hash
from nnperf.ir import Network
from nnperf.measure import (
    REFERENCE,
    ComparisonProtocol,
    HarnessConfig,
    NetworkMeasurement,
    PairedRatio,
    Rounds,
    RoundsConfig,
    backend_timer_factory,
    measure_comparison,
    measure_duet,
    reference_timer,
    reference_workload,
)
from nnperf.measure.backends import Backend
from nnperf.store import Store

NETWORK = "network"
REFERENCE_SIDE = "reference"

SEQUENTIAL_HARNESS = HarnessConfig(warmup_s=0.1, target_ci=0.02, budget_s=1.0)
"""Each side of a sequential comparison: about a second of runs."""


@dataclass(frozen=True)
class ReferencedTiming:
    """A network's whole-network times beside the reference's, under ``rounds.protocol`` (seconds).

    ``rounds.names`` are ('reference', 'network'); ``reference`` names the reference workload.
    """

    reference: str
    rounds: Rounds
    run_id: int = 0

    @property
    def protocol(self) -> ComparisonProtocol:
        return self.rounds.protocol

    @property
    def latency_s(self) -> float:
        """The network's median time, at the machine's speed during the measurement."""
        return self.rounds.median_s(NETWORK)

    @property
    def reference_s(self) -> float:
        """The reference's median time during the measurement."""
        return self.rounds.median_s(REFERENCE_SIDE)

    @property
    def round_times_s(self) -> tuple[float, ...]:
        """The network's time in each round (each timed block under the sequential protocol)."""
        return self.rounds.times(NETWORK)

    @property
    def ratio(self) -> PairedRatio:
        """The network over the reference, round by round (the ratio of medians under the sequential protocol)."""
        return self.rounds.ratio(NETWORK, REFERENCE_SIDE)

    def at_reference_speed_s(self, reference_s: float) -> float:
        """The network's time at the machine speed where the reference takes ``reference_s`` seconds."""
        return self.ratio.median * reference_s


DEFAULT_ROUNDS = RoundsConfig()


def time_with_reference(network: Network, backend: Backend,
                        protocol: ComparisonProtocol = ComparisonProtocol.INTERLEAVED,
                        config: RoundsConfig = DEFAULT_ROUNDS, reference: str = REFERENCE) -> ReferencedTiming:
    """Times ``network`` whole beside the reference workload ``reference`` under ``protocol`` (stores nothing).

    The duet protocol builds both sides again in processes of their own from ``backend``'s name and options,
    so it needs a registered backend (not a test double built by hand).
    """
    reference_workload(reference)  # an unknown name fails before anything is timed
    if protocol is ComparisonProtocol.DUET:
        rounds = measure_duet([(REFERENCE_SIDE, partial(reference_timer, backend.name, backend.options, reference)),
                               (NETWORK, backend_timer_factory(backend.name, backend.options, network, backend.seed))],
                              config)
    else:
        timers = {REFERENCE_SIDE: reference_workload(reference).timer(backend), NETWORK: backend.network_timer(network)}
        rounds = measure_comparison(timers, protocol, rounds=config, harness=SEQUENTIAL_HARNESS)
    return ReferencedTiming(reference, rounds)


def store_referenced(store: Store, backend: Backend, network: Network, name: str,
                     timing: ReferencedTiming) -> ReferencedTiming:
    """Stores ``timing`` as a run of its own (campaign ``referenced|NAME|...``): the network's round times, with
    the reference's median and the median ratio in the extras; returns it with the run's id."""
    config = {"protocol": timing.protocol.value, "reference": timing.reference, "rounds": timing.rounds.rounds,
              "started_at": time.time()}
    with open_campaign(store, backend.system(), f"referenced|{name}|{time.time():.6f}", name, network_hash(network),
                       "whole", config) as campaign:
        ratio = timing.ratio
        campaign.add_network(NetworkMeasurement(timing.rounds.timing(NETWORK), extra={
            "reference_s": timing.reference_s, "reference_ratio": ratio.median,
            "reference_ratio_ci_low": ratio.ci_low, "reference_ratio_ci_high": ratio.ci_high}))
    return ReferencedTiming(timing.reference, timing.rounds, campaign.run.id)

"""A fake machine whose speed halves at a set moment: the drift that the comparison protocols are tested against.

Its clock only moves by the work its timers report, so a test knows exactly where the slow phase begins and
runs without waiting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SLOWDOWN = 2.0
"""How much slower everything runs once the machine has slowed down."""


class Machine:
    """A clock (seconds) that the timers advance, everything running :data:`SLOWDOWN` times slower from
    ``slow_after_s`` on."""

    def __init__(self, slow_after_s: float = math.inf) -> None:
        self.now_s = 0.0
        self.slow_after_s = slow_after_s

    def clock(self) -> float:
        return self.now_s

    def run(self, cost_s: float, n: int) -> float:
        """Runs ``n`` executions of ``cost_s`` each; returns their time and advances the clock by it."""
        elapsed = n * cost_s * (SLOWDOWN if self.now_s >= self.slow_after_s else 1.0)
        self.now_s += elapsed
        return elapsed

    def timer(self, cost_s: float, fail_at_block: int = 0) -> FakeTimer:
        return FakeTimer(self, cost_s, fail_at_block)


@dataclass
class FakeTimer:
    """A :class:`nnperf.measure.Timer` of a workload of ``cost_s`` per execution on ``machine``."""

    machine: Machine
    cost_s: float
    fail_at_block: int = 0
    """Raise on this block (1-based; 0: never), as a library refusing a shape mid-way would."""
    blocks: int = 0
    last_s: float = 0.0
    """The machine's clock when this timer's latest block ended."""

    def time_block(self, n: int) -> float:
        self.blocks += 1
        if self.blocks == self.fail_at_block:
            raise RuntimeError("refused on this block")
        elapsed = self.machine.run(self.cost_s, n)
        self.last_s = self.machine.now_s
        return elapsed

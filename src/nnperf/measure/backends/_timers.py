"""Timers shared by the backends: a host-clock loop, the same between two device synchronizations, and a CUDA-event
loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class LoopTimer:
    """Times ``n`` back-to-back calls of ``run`` with ``time.perf_counter`` (host code, CPU devices)."""

    def __init__(self, run: Callable[[], Any]) -> None:
        self.run = run

    def time_block(self, n: int) -> float:
        run = self.run
        start = time.perf_counter()
        for _ in range(n):
            run()
        return time.perf_counter() - start


class SyncedLoopTimer:
    """Times ``n`` back-to-back calls of ``run`` with ``time.perf_counter`` between two calls of ``synchronize``
    (e.g. ``torch.cuda.synchronize``): the first, before the clock starts, waits for work queued earlier; the
    second, before it stops, for the ``n`` calls' own work, so that a device that runs them asynchronously has done
    them all inside the block. One synchronization per block, not per call: a block of calls back to back keeps the
    device's queue full, as a network's layers do."""

    def __init__(self, run: Callable[[], Any], synchronize: Callable[[], Any]) -> None:
        self.run = run
        self.synchronize = synchronize

    def time_block(self, n: int) -> float:
        run, synchronize = self.run, self.synchronize
        synchronize()
        start = time.perf_counter()
        for _ in range(n):
            run()
        synchronize()
        return time.perf_counter() - start


class CudaEventTimer:
    """Times ``n`` back-to-back calls of ``run`` with CUDA events (asynchronous GPU work)."""

    def __init__(self, run: Callable[[], Any], device: str) -> None:
        import torch

        self.run = run
        self.torch = torch
        self.device = torch.device(device)

    def time_block(self, n: int) -> float:
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        cuda.synchronize(self.device)
        start.record()
        for _ in range(n):
            self.run()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3  # elapsed_time is in milliseconds

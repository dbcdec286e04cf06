"""Harness settings for tests that time real or fake backends: short, so a test takes a fraction of a second."""

from __future__ import annotations

from nnperf.measure import HarnessConfig

SHORT_HARNESS = HarnessConfig(warmup_s=0.0, min_block_s=1e-4, target_ci=0.05, budget_s=0.05)
"""No warm-up, 0.1 ms blocks, a 5% interval or 50 ms of timing: a usable figure quickly (campaigns, calibration)."""

SMOKE_HARNESS = HarnessConfig(warmup_s=0.0, min_block_s=2e-4, target_ci=0.1, budget_s=0.05, min_samples=5)
"""0.2 ms blocks, a 10% interval from 5 samples or 50 ms: for tests that check a timer runs, not what it reads."""

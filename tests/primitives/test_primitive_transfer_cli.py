"""``nnperf primitives transfer``: a source system's cost model moved to another platform (Mulder et al. 4.4).

The source is a small store profiled with one thread; the target is this CPU with two threads, which is another
primitive system (the thread count is part of its identity), so no second machine or instruction-set cap is
needed.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from cli_helpers import assert_error, run_cli, run_json
from harness_presets import SMOKE_HARNESS
from networks import tiny_network
from nnperf.api import _primitives as api_primitives
from nnperf.campaign import profile_primitives
from nnperf.cli import primitives_cmd
from nnperf.ir import save_network
from nnperf.primitives import ConvConfig, get_primitive, sample_configs
from nnperf.store import Store

BLOCKED = str(get_primitive("ort-nchwc").input_layout)  # chw16c with AVX-512, chw8c with AVX2

SEEDS = [ConvConfig.make(1, 8, 8, 16, 3, 1, 1), ConvConfig.make(1, 8, 16, 12, 1), ConvConfig.make(1, 16, 16, 8, 3, 2, 1)]
TRANSFORMS = {f"{a}->{b}" for a in ("chw", "hwc", "hcw", BLOCKED) for b in ("chw", "hwc", "hcw", BLOCKED) if a != b}


@pytest.fixture(scope="module")
def source_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 small configurations timed with one thread under direct and im2col-fhw (and the transformations)."""
    db = tmp_path_factory.mktemp("transfer") / "source.db"
    with Store(db) as store:
        report = profile_primitives(store, SEEDS + sample_configs(SEEDS, 27, seed=1), threads=1,
                                    harness=SMOKE_HARNESS,
                                    primitives=[get_primitive("direct"), get_primitive("im2col-fhw")])
    assert (report.system_id, report.measured) == (1, 30)
    return db


@pytest.fixture(scope="module")
def seeds_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three seed configurations timed with one thread: a source system, too small to transfer from."""
    db = tmp_path_factory.mktemp("transfer") / "seeds.db"
    with Store(db) as store:
        report = profile_primitives(store, SEEDS, threads=1, harness=SMOKE_HARNESS,
                                    primitives=[get_primitive("direct"), get_primitive("im2col-fhw")])
    assert (report.system_id, report.measured) == (1, len(SEEDS))
    return db


@pytest.fixture
def db(source_store: Path, tmp_path: Path) -> str:
    """A copy of the source store for one test (a transfer writes the target system into it)."""
    copy = tmp_path / "p.db"
    shutil.copy(source_store, copy)
    return str(copy)


@pytest.mark.slow
def test_transfer_profiles_a_sample_and_stores_the_model_for_the_target(capsys: pytest.CaptureFixture[str], db: str,
                                                                        tmp_path: Path) -> None:
    run_json(capsys, "primitives", "train", "--kind", "lin", "--db", db)
    document = run_json(capsys, "primitives", "transfer", "--from", "1", "--samples", "20%", "--threads", "2",
                        "--db", db)
    assert (document["format"], document["version"], document["method"]) == ("nnperf-primitive-transfer", 1, "factor")
    assert (document["source_id"], document["kind"], document["samples"]) == (1, "lin", 0.2)
    target = document["target_id"]
    assert target != 1
    assert (document["configurations"], document["measured"], document["reused"]) == (6, 6, 0)  # 20% of 30
    assert len(document["configs"]) == 6 and document["sample_times"] > 6 and document["profile_s"] > 0
    factors = document["factors"]
    assert set(factors) == {"direct", "im2col-fhw"} | TRANSFORMS
    assert all(math.isfinite(f) and f > 0 for f in factors.values())
    with Store(db, create=False) as store:
        assert store.latest_model(target, api_primitives.MODEL_KIND) is not None
        assert store.latest_model(1, api_primitives.MODEL_KIND) is not None  # the source's model is kept

    # `predict --threads 2` uses the target's model: the source's predictions times the factors
    net = tmp_path / "tiny.json"
    save_network(tiny_network(), net)
    here = run_json(capsys, "primitives", "predict", str(net), "--threads", "2", "--db", db)
    there = run_json(capsys, "primitives", "predict", str(net), "--system", "1", "--db", db)
    assert (here["system_id"], here["kind"], there["system_id"]) == (target, "lin", 1)
    for moved, source in zip(here["layers"], there["layers"], strict=True):
        for name, t in moved["times_s"].items():
            assert t == pytest.approx(source["times_s"][name] * factors[name], rel=1e-9)

    # the sample is profiled once: fine-tuning on the same seed reuses it
    tuned = run_json(capsys, "primitives", "transfer", "--from", "1", "--samples", "0.2", "--threads", "2",
                     "--method", "fine-tune", "--db", db)
    assert (tuned["target_id"], tuned["measured"], tuned["reused"], tuned["factors"]) == (target, 0, 6, None)
    assert tuned["configs"] == document["configs"] and tuned["model_id"] > document["model_id"]
    code, text, _ = run_cli(capsys, "primitives", "transfer", "--from", "1", "--samples", "20%", "--threads", "2",
                            "--method", "factor+fine-tune", "--db", db)
    assert code == 0 and "correction factors" in text and "im2col-fhw" in text
    assert f"with system {target}" in text and "6 configurations" in text and "0 now and 6 before" in text

    # the corrections fitted in closed form store a model of the same kind, without factors
    last = tuned["model_id"]
    for method in ("residual", "frozen"):
        moved = run_json(capsys, "primitives", "transfer", "--from", "1", "--samples", "20%", "--threads", "2",
                         "--method", method, "--db", db)
        assert (moved["method"], moved["kind"], moved["factors"], moved["reused"]) == (method, "lin", None, 6)
        assert moved["model_id"] > last
        last = moved["model_id"]
        here = run_json(capsys, "primitives", "predict", str(net), "--threads", "2", "--db", db)
        assert all(math.isfinite(t) and t > 0 for layer in here["layers"] for t in layer["times_s"].values())


@pytest.mark.parametrize(("argv", "needles"), [
    (("--from", "1", "--threads", "1"), ("is this platform", "ONEDNN_MAX_CPU_ISA/ATEN_CPU_CAPABILITY or another thread count (--threads)")),
    (("--from", "1", "--threads", "2", "--samples", "0"), ("the sample must be", "'0'")),
    (("--from", "1", "--threads", "2", "--samples", "150%"), ("the sample must be", "'150%'")),
    (("--from", "1", "--threads", "2", "--samples", "few"), ("the sample must be", "'few'")),
    (("--from", "9", "--threads", "2"), ("no system with id 9",)),
    (("--from", "1", "--threads", "2"), ("system 1 has no primitive cost model", "nnperf primitives train --system 1")),
])
def test_transfer_errors_are_one_line(capsys: pytest.CaptureFixture[str], seeds_store: Path, tmp_path: Path,
                                      argv: tuple[str, ...], needles: tuple[str, ...]) -> None:
    db = str(shutil.copy(seeds_store, tmp_path / "p.db"))
    code, _, err = run_cli(capsys, "primitives", "transfer", *argv, "--db", db)
    assert_error(code, err, *needles)
    with Store(db, create=False) as store:
        assert len(store.systems()) == 1  # nothing was profiled


def test_the_cli_offers_the_api_methods() -> None:
    assert primitives_cmd.TRANSFER_METHODS == api_primitives.TRANSFER_METHODS

"""A CPU system is named by its generation, not only by the model name a virtual machine shows ('AMD EPYC' for
Zen 3 and Zen 4 alike); a store written before keeps its systems when the CPU they recorded is this one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nnperf.measure import HostInfo, SystemSpec, cpu_generation
from nnperf.store import Store

ZEN3 = "AMD EPYC; AuthenticAMD family 25 model 1 stepping 1; AVX2, FMA, AVX, SSE4.2, SSE4.1; L2 512K, L3 32768K"
ZEN4 = ("AMD EPYC; AuthenticAMD family 25 model 17 stepping 1; AVX-512, AVX-512 VNNI, AVX2, FMA, AVX, SSE4.2, "
        "SSE4.1; L2 1024K, L3 32768K")


def spec(details: str, device: str = "cpu") -> SystemSpec:
    host = HostInfo("vm", "AMD EPYC", 2, "", "Linux", "3.11.7", (("torch", "2.13.0+cpu"),), (), details)
    return SystemSpec("primitives", device, "AMD EPYC", (("threads", "1"),), host)


def test_the_generation_is_vendor_family_model_and_vector_extensions() -> None:
    assert cpu_generation(ZEN4) == ("AuthenticAMD family 25 model 17; AVX-512, AVX-512 VNNI, AVX2, FMA, AVX, "
                                    "SSE4.2, SSE4.1")
    assert cpu_generation(ZEN3) == "AuthenticAMD family 25 model 1; AVX2, FMA, AVX, SSE4.2, SSE4.1"
    assert cpu_generation("") == "" and cpu_generation("AMD EPYC") == ""


def test_two_generations_of_one_model_name_are_two_systems() -> None:
    zen3, zen4 = spec(ZEN3), spec(ZEN4)
    assert zen3.key != zen4.key
    assert zen3.legacy_key == zen4.legacy_key  # what stores before kept: one system for both
    # another stepping, other caches: the same generation, the same system
    assert spec(ZEN4.replace("stepping 1", "stepping 2").replace("L2 1024K", "L2 2048K")).key == zen4.key
    assert spec("").key == spec("").legacy_key  # nothing recorded: the key as before
    assert spec(ZEN3, "cuda").key == spec(ZEN4, "cuda").key == spec(ZEN4, "cuda").legacy_key  # a GPU's host CPU


def legacy_store(path: Path, details: str) -> int:
    """A store holding one system under the key stores used before, with CPU ``details`` recorded."""
    old = spec(details)
    with Store(path) as store:
        record = store.add_system(old)
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("UPDATE systems SET key = ? WHERE id = ?", (old.legacy_key, record.id))
    connection.close()
    return record.id


def test_a_system_stored_under_the_old_key_on_this_cpu_is_adopted(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    old_id = legacy_store(db, ZEN4)
    here = spec(ZEN4)
    with Store(db) as store:
        found = store.find_system(here)
        assert found is not None and (found.id, found.key) == (old_id, here.key)
        assert store.add_system(here).id == old_id and len(store.systems()) == 1
        assert store.find_system(here.legacy_key) is None  # the key moved


def test_a_system_of_another_generation_stays_another_system(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    old_id = legacy_store(db, ZEN3)  # measured on Zen 3
    here = spec(ZEN4)
    with Store(db) as store:
        assert store.find_system(here) is None
        new = store.add_system(here)
        assert new.id != old_id and new.key == here.key
        assert store.find_system(here.legacy_key).id == old_id  # kept as it was
        assert store.system(old_id).host["cpu_details"] == ZEN3


def test_a_system_without_a_recorded_cpu_is_not_adopted(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    old_id = legacy_store(db, "")
    with Store(db) as store:
        assert store.add_system(spec(ZEN4)).id != old_id

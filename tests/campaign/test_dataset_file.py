"""A profiled primitive dataset written to one file and stored again: the same times under the same system, nothing
added twice, and files that are not such a dataset refused with a message naming what is wrong."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harness_presets import SMOKE_HARNESS
from nnperf.campaign import (
    DatasetFileError,
    export_primitive_dataset,
    import_primitive_dataset,
    load_primitive_dataset,
    profile_primitives,
    profile_transforms,
)
from nnperf.cli import main
from nnperf.primitives import ConvConfig, get_primitive
from nnperf.store import Store, SystemRecord

CONFIGS = [ConvConfig.make(1, 8, 16, 12, 3, 1, 1), ConvConfig.make(1, 8, 8, 12, 1)]
ALONE = (1, 4, (6, 10))  # an activation whose transformations alone are profiled


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A real profile of two configurations (two primitives, every transformation), of one more activation's
    transformations alone, and its file."""
    where = tmp_path_factory.mktemp("dataset")
    with Store(where / "source.db") as store:
        report = profile_primitives(store, CONFIGS, harness=SMOKE_HARNESS,
                                    primitives=[get_primitive("torch-conv2d"), get_primitive("im2col-fhw")])
        profile_transforms(store, [ALONE], harness=SMOKE_HARNESS)
        export_primitive_dataset(store, report.system_id, where / "dataset.json.gz")
    return where / "source.db", where / "dataset.json.gz"


def test_a_dataset_stored_from_its_file_reads_back_the_same_times_under_the_same_system(
        exported: tuple[Path, Path], tmp_path: Path) -> None:
    source_db, path = exported
    with Store(source_db) as store:
        source = load_primitive_dataset(store, store.systems()[0].id)
    with Store(tmp_path / "target.db") as store:
        first = import_primitive_dataset(store, path)
        again = import_primitive_dataset(store, path)
        copy = load_primitive_dataset(store, first.system.id)
    assert first.system.key == source.system_key == copy.system_key
    assert (first.configurations, first.activations, first.times, first.skipped) == (2, 1, source.n_samples, 0)
    assert (again.configurations, again.times, again.skipped) == (0, 0, source.n_samples)  # nothing added twice
    assert {s.config: dict(s.times_s) for s in copy.conv} == {s.config: dict(s.times_s) for s in source.conv}
    assert {(t.batch, t.c, t.im): dict(t.times_s) for t in copy.layout} == \
        {(t.batch, t.c, t.im): dict(t.times_s) for t in source.layout}
    assert len(source.conv) == 2 and set(source.primitives) == {"torch-conv2d", "im2col-fhw"}
    assert sorted((t.batch, t.c, t.im) for t in copy.layout) == [ALONE, (1, 8, (12, 12))]


def test_a_file_written_under_the_key_before_the_cpu_generation_imports_under_todays(
        exported: tuple[Path, Path], tmp_path: Path) -> None:
    document = _document(exported[1])
    system = document["system"]
    spec = SystemRecord(0, "", system["backend"], system["device"], system["device_name"], dict(system["options"]),
                        dict(system["host"]), 0.0).spec()
    assert spec.key == system["key"] != spec.legacy_key  # a CPU system: its generation is part of the key
    old = _write(tmp_path / "old.json", {**document, "system": {**system, "key": spec.legacy_key}})
    with Store(tmp_path / "target.db") as store:
        imported = import_primitive_dataset(store, old)
    assert imported.system.key == spec.key and imported.configurations == 2


def _document(path: Path) -> dict:  # type: ignore[type-arg]
    with gzip.open(path, "rt") as f:
        return json.load(f)


def _write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: {**d, "format": "something-else"}, "not an nnperf-primitive-dataset file"),
    (lambda d: {**d, "version": 99}, "version 99 of nnperf-primitive-dataset"),
    (lambda d: {**d, "system": {**d["system"], "device_name": "edited"}}, "was it edited"),
    (lambda d: {**d, "conv": [{**d["conv"][0], "times_s": {"no-such-primitive": 1e-3}}]},
     r"conv\[0\]: unknown primitive or transformation 'no-such-primitive'"),
    (lambda d: {**d, "layout": [{**d["layout"][0], "times_s": {"chw->chw-ish": 1e-3}}]},
     r"layout\[0\]: unknown primitive or transformation 'chw->chw-ish'"),
    (lambda d: {**d, "conv": [{**d["conv"][0], "times_s": {"torch-conv2d": -1}}]}, "positive number of seconds"),
    (lambda d: {**d, "conv": [{"config": {"c": 8}, "times_s": {}}]}, r"conv\[0\]: not a convolution configuration"),
    (lambda d: {**d, "conv": [{**d["conv"][0], "times_s": [1e-3]}]}, r"conv\[0\]: an entry needs a times_s object"),
    (lambda d: {**d, "layout": [{"batch": 1, "c": 0, "im": [5, 5], "times_s": {}}]},
     r"layout\[0\]: not an activation \(batch, c, im\)"),
    (lambda d: {**d, "layout": [{"batch": 1, "c": 3, "im": [5], "times_s": {}}]}, r"layout\[0\]: not an activation"),
])
def test_a_file_that_is_not_such_a_dataset_is_refused_naming_what_is_wrong(
        exported: tuple[Path, Path], tmp_path: Path, change, message: str) -> None:  # type: ignore[no-untyped-def]
    bad = _write(tmp_path / "bad.json", change(_document(exported[1])))
    with Store(tmp_path / "target.db") as store, pytest.raises(DatasetFileError, match=message):
        import_primitive_dataset(store, bad)


def test_a_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    not_json = tmp_path / "not.json.gz"
    with gzip.open(not_json, "wt") as f:
        f.write("{")
    with Store(tmp_path / "target.db") as store, pytest.raises(DatasetFileError, match="not a JSON dataset file"):
        import_primitive_dataset(store, not_json)


def test_export_and_import_from_the_command_line(exported: tuple[Path, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    source_db, _ = exported
    out = tmp_path / "again.json"
    assert main(["primitives", "export", str(out), "--db", str(source_db)]) == 0
    assert "2 configurations" in capsys.readouterr().out
    assert _document_plain(out)["format"] == "nnperf-primitive-dataset"
    assert main(["primitives", "import", str(out), "--db", str(tmp_path / "copy.db")]) == 0
    assert "of 2 configurations and 1 activation under" in capsys.readouterr().out
    assert main(["primitives", "import", str(tmp_path / "missing.json"), "--db", str(tmp_path / "copy.db")]) != 0
    err = capsys.readouterr().err
    assert "missing.json: no such dataset file" in err and "Traceback" not in err


def _document_plain(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


def test_a_dataset_from_a_machine_of_another_vector_width_keeps_its_blocked_layout(
        exported: tuple[Path, Path], tmp_path: Path) -> None:
    """AVX-512's oneDNN blocks channels by 16, AVX2's by 8: a chw16c transformation is stored on an AVX2 machine."""
    document = _document(exported[1])
    document["layout"][0]["times_s"]["chw->chw16c"] = 2e-4
    with Store(tmp_path / "target.db") as store:
        stored = import_primitive_dataset(store, _write(tmp_path / "avx512.json", document))
        copy = load_primitive_dataset(store, stored.system.id)
    assert "chw->chw16c" in copy.transforms
    assert [t.times_s["chw->chw16c"] for t in copy.layout if "chw->chw16c" in t.times_s] == [pytest.approx(2e-4)]

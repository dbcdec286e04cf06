"""bench/_shared.py: the one result writer (its schema, read back), percentages, tables and spreads."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("_shared")


def test_a_result_is_written_in_the_schema_and_read_back(shared: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "prediction" / "run.json"
    written = shared.write_result(path, method="prediction", concern="a test", values={"mape": 0.05},
                                  spread={"resnet18": 0.02}, networks=3)
    read = shared.read_result(path)
    assert read == json.loads(path.read_text()) == written
    assert list(read)[:9] == ["schema", "method", "concern", "values", "spread", "machine", "commit", "command", "date"]
    assert read["values"] == {"mape": 0.05} and read["spread"] == {"resnet18": 0.02} and read["networks"] == 3
    assert read["machine"]["cores"] >= 1 and read["machine"]["cpu"]
    assert len(read["commit"]["sha"]) == 40 and isinstance(read["commit"]["dirty"], bool)
    assert "pytest" in read["command"] or "python" in read["command"]
    assert not list(tmp_path.rglob("*.part"))


def test_the_writer_refuses_an_unknown_method_and_a_key_of_its_own(shared: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown method 'speed'"):
        shared.write_result(tmp_path / "x.json", method="speed", concern="c", values=1)
    with pytest.raises(ValueError, match="commit: set by write_result itself"):
        shared.write_result(tmp_path / "x.json", method="zoo", concern="c", values=1, commit="abc")


@pytest.mark.parametrize(("text", "fault"), [
    ("[1, 2]", "holds a JSON object, not list"),
    ('{"values": 1}', "not a bench result file (no schema, method, concern, spread, machine, commit, command, date)"),
    ("{", "not a readable JSON file"),
])
def test_a_file_outside_the_schema_is_named_with_its_fault(shared: ModuleType, tmp_path: Path, text: str,
                                                             fault: str) -> None:
    path = tmp_path / "old.json"
    path.write_text(text)
    with pytest.raises(shared.ResultFileError, match=f"^{path}: .*") as error:
        shared.read_result(path)
    assert fault in str(error.value)


def test_percentages_tables_and_spread(shared: ModuleType) -> None:
    assert shared.pct(0.1234) == "12.3%"
    assert shared.pct(0.05, 0, signed=True) == "+5%"
    assert shared.pct(-0.0049, 2, signed=True) == "-0.49%"
    assert shared.pct(None) == shared.pct(float("nan")) == "-"
    assert shared.markdown_table(["a", "b"], [[1, "x"], [2.5, None]], right=[1]) == (
        "| a | b |\n|---|---:|\n| 1 | x |\n| 2.5 | None |")
    with pytest.raises(ValueError, match="a row of 1 cells under 2 headers"):
        shared.markdown_table(["a", "b"], [[1]])
    assert shared.spread([9.0, 10.0, 12.0]) == pytest.approx(0.3)  # (12 - 9) / 10
    assert math.isnan(shared.spread([1.0]))
    assert shared.table_rows(["a", "b"], [[1, 2]]) == [{"a": "1", "b": "2"}]
    assert shared.result_path("steps", "step_models") == BENCH / "results" / "steps" / "step_models.json"

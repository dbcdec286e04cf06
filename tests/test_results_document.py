"""RESULTS.md is what ``bench/results_document.py`` makes of bench/results_sections.yaml and the result files, every
file it links exists, and its pieces (cells, records, multi-run entries) read the files as they are."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS_MD = ROOT / "RESULTS.md"


@pytest.fixture
def document(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """bench/results_document.py as a module (its folder on sys.path, as when it runs)."""
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("results_document")


def test_results_md_is_what_the_generator_writes() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "results_document.py")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == RESULTS_MD.read_text(), (
        "RESULTS.md is stale: run `.venv/bin/python bench/results_document.py > RESULTS.md`")


def test_results_md_stays_within_400_lines() -> None:
    assert len(RESULTS_MD.read_text().splitlines()) <= 400


def test_every_file_results_md_links_exists() -> None:
    text = RESULTS_MD.read_text()
    links = re.findall(r"\]\(((?:bench|docs|src|tests)/[^)#\s]*)\)", text)
    assert len(links) >= 40
    missing = sorted({link for link in links if not (ROOT / link).exists()})
    assert not missing, missing


def test_every_result_file_of_the_sections_is_in_the_schema(document: ModuleType) -> None:
    import yaml

    sections = yaml.safe_load(document.SECTIONS.read_text())["sections"]
    files = [path for section in sections for entry in document.entries(section) for _, path in entry]
    assert len(files) >= 40
    for path in files:
        record = document.read_result(path)  # raises on a file outside the schema
        assert path.parent.name == record["method"], path


def test_a_cell_formats_nested_fields_and_shows_a_missing_value_as_a_dash(document: ModuleType) -> None:
    context = {"run": {"values": {"mape": 0.0623, "rows": [{"tau": 0.9052}], "none": None, "nan": float("nan")}}}
    assert document.cell("{run[values][mape]:.1%} and {run[values][rows][0][tau]:.3f}", context) == "6.2% and 0.905"
    assert document.cell("x {run[values][none]:.1%}", context) == "-"
    assert document.cell("{run[values][nan]:.1%}", context) == "-"
    with pytest.raises(KeyError, match="run\\[values\\]\\[absent\\]"):
        document.cell("{run[values][absent]}", context)


def test_records_read_as_the_headline_table_shows_them(document: ModuleType) -> None:
    machine = {"cpu": "AMD EPYC", "vendor": "AuthenticAMD family 25 model 1", "cores": 2, "gpu": None}
    assert document.machine_text(machine) == "AMD EPYC (AuthenticAMD family 25 model 1), 2 cores"
    assert document.commit_text({"sha": "9459b3b487f7118133ec858343811263189acbf0", "dirty": True}) == \
        "9459b3b (changed)"
    assert document.commit_text({"sha": None, "dirty": None}) == "not recorded"
    assert document.slug("Step-function latency models (Osterwind et al.)") == \
        "step-function-latency-models-osterwind-et-al"


def test_an_entry_of_two_runs_is_one_row_with_both_files(document: ModuleType) -> None:
    section = {"goal": "8x", "results": [{
        "file": ["synthesis/synthesize_glyphs_resnet18_quiet.json", "synthesis/synthesize_glyphs_resnet18_quiet_run2.json"],
        "as": ["one", "two"], "concern": "ResNet-18",
        "achieved": "{one[headline][over_baseline]:.2f}x and {two[headline][over_baseline]:.2f}x"}]}
    table = document.headline(section, document.load(section)).splitlines()
    assert len(table) == 3
    cells = [c.strip() for c in table[2].split(" | ")]
    assert cells[0] == "| ResNet-18" and cells[1] == "8x"
    assert cells[2] == "8.56x and 8.04x"  # the two runs' medians of 60 paired rounds
    assert cells[4] == "2026-11-27" and cells[5] == "not recorded"
    assert cells[6].count("`") == 4  # the two runs' commands differ (their --json)
    assert cells[7].count("](bench/results/synthesis/") == 2

"""``nnperf primitives profile --grid paper``: bad options are refused with a message naming them."""

from __future__ import annotations

from cli_helpers import run_cli


def test_max_gmacs_needs_the_grid_and_a_positive_value(tmp_path, capsys):
    db = str(tmp_path / "p.db")
    code, _, err = run_cli(capsys, "primitives", "profile", "--max-gmacs", "1", "--db", db)
    assert code != 0 and "--max-gmacs applies to --grid only" in err
    code, _, err = run_cli(capsys, "primitives", "profile", "--grid", "paper", "--max-gmacs", "0", "--db", db)
    assert code != 0 and "--max-gmacs must be positive" in err

"""Every bench script still starts: ``bench/NAME.py --help`` prints its usage and exits 0, all of them run in one
subprocess (torch is imported once) as ``.venv/bin/python bench/NAME.py --help`` would run them. A script whose
optional package is not installed here is reported, not failed; a module of helpers (no ``__main__``) only has
to import."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
OPTIONAL = ("torchvision", "timm", "openvino", "ai_edge_litert", "executorch", "ray", "playwright")
"""Packages a bench script may need that the dev install does not promise."""

RUNNER = textwrap.dedent("""
    import contextlib, io, json, runpy, sys
    from pathlib import Path

    bench = Path(sys.argv[1])
    sys.path.insert(0, str(bench))  # what running bench/NAME.py does
    found = {}
    for path in sorted(bench.glob("*.py")):
        if path.name.startswith("_"):
            continue
        is_script = "__main__" in path.read_text()
        sys.argv = [str(path), "--help"]
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                runpy.run_path(str(path), run_name="__main__" if is_script else path.stem)
            found[path.name] = "imported" if not is_script else "ran without printing its usage"
        except SystemExit as exit:
            found[path.name] = "usage" if exit.code in (0, None) and "usage:" in out.getvalue() else (
                f"exit {exit.code}: {out.getvalue()[-300:]}")
        except ModuleNotFoundError as error:
            found[path.name] = f"missing {error.name}"
        except BaseException as error:
            found[path.name] = f"{type(error).__name__}: {error}"
    print(json.dumps(found))
""")


def test_every_bench_script_prints_its_usage() -> None:
    done = subprocess.run([sys.executable, "-c", RUNNER, str(BENCH)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert set(found) == scripts
    optional_missing = {name for name, what in found.items()
                        if what.startswith("missing ") and what.split()[1].split(".")[0] in OPTIONAL}
    broken = {name: what for name, what in found.items()
              if what not in ("usage", "imported") and name not in optional_missing}
    assert not broken, broken
    assert sum(what == "usage" for what in found.values()) >= 40

"""A deployment runtime that is not installed is reported as unavailable, naming the extra that installs it, and
nothing else fails: the backend list, the thread settings and the other backends carry on."""

from __future__ import annotations

import json
import sys

import pytest

from cli_helpers import run_cli as run
from nnperf.measure.backends import BACKENDS, create_backend
from nnperf.registry import UnavailableError

RUNTIMES = [("openvino", "openvino", "openvino"), ("litert", "ai_edge_litert", "litert"),
            ("executorch", "executorch", "executorch")]
"""(backend, the module it imports, the nnperf extra that installs it)."""


@pytest.mark.parametrize(("backend", "module", "extra"), RUNTIMES)
def test_a_missing_runtime_is_unavailable_with_its_extra(monkeypatch: pytest.MonkeyPatch, capsys, backend: str,
                                                         module: str, extra: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now raises ImportError, as when not installed
    cls = BACKENDS.create(backend)
    found = cls.availability("cpu")
    assert not found.ok and f"pip install nnperf[{extra}]" in found.reason
    assert cls.EXTRA == extra
    with pytest.raises(UnavailableError, match=rf"backend '{backend}' cannot run here: .*nnperf\[{extra}\]"):
        create_backend(backend)
    code, out, _ = run(capsys, "backends", "--json")
    assert code == 0
    listed = {(b["name"], b["device"]): b for b in json.loads(out)["backends"]}
    assert listed[(backend, "cpu")]["available"] is False and listed[(backend, "cpu")]["extra"] == extra
    assert listed[("onnxruntime", "cpu")]["available"] is True  # the others are untouched


def test_thread_settings_list_a_missing_runtime_as_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    from nnperf.api import thread_settings

    monkeypatch.setitem(sys.modules, "openvino", None)
    found = {t.backend: t for t in thread_settings(1)}
    assert found["openvino"].settings == () and "nnperf[openvino]" in found["openvino"].unavailable
    assert dict(found["onnxruntime"].settings)["intra_op_num_threads"] == "1"

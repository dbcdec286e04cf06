"""Energy meters and power-trace integration, checked against hand-computed numbers."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from nnperf.errors import NnperfError
from nnperf.measure.power import (
    METERS,
    NvmlMeter,
    PowerMeter,
    PowerTrace,
    RaplMeter,
    TraceFormatError,
    Window,
    available_meters,
    get_meter,
    integrate_windows,
    measure_energy,
    meter_report,
    min_duration_s,
    read_trace_csv,
)
from nnperf.registry import Availability, UnavailableError, UnknownPluginError

# --- trace integration ------------------------------------------------------------------------


def _constant_2w() -> PowerTrace:
    t = np.arange(41) / 10  # 0.0 .. 4.0 s every 0.1 s, exact at 1.0 and 3.0
    return PowerTrace(t, np.full_like(t, 2.0))


def test_constant_trace_energy_per_execution() -> None:
    (e,) = integrate_windows(_constant_2w(), [Window("conv1", 1.0, 3.0, executions=4)])
    assert e.label == "conv1"
    assert e.energy_j == pytest.approx(4.0, rel=1e-12)
    assert e.energy_per_execution_j == pytest.approx(1.0, rel=1e-12)
    assert e.mean_power_w == pytest.approx(2.0, rel=1e-12)
    assert e.samples == 21  # 1.0, 1.1, ..., 3.0
    assert e.duration_s == pytest.approx(2.0)


def test_baseline_is_subtracted() -> None:
    (e,) = integrate_windows(_constant_2w(), [Window("conv1", 1.0, 3.0, 4)], baseline_w=0.5)
    assert e.energy_j == pytest.approx(3.0, rel=1e-12)  # (2 - 0.5) W * 2 s
    assert e.mean_power_w == pytest.approx(1.5, rel=1e-12)


def test_linear_ramp_is_exact_with_interpolated_edges() -> None:
    t = np.arange(0, 201) / 100 + 0.003  # samples never fall on 0.5 or 1.5
    trace = PowerTrace(t, t.copy())  # P = t watts
    (e,) = integrate_windows(trace, [Window("ramp", 0.5, 1.5, 1)])
    assert e.energy_j == pytest.approx(1.0, rel=1e-12)  # (1.5**2 - 0.5**2) / 2
    assert e.samples == 100


def test_window_edges_between_samples_get_their_share() -> None:
    trace = PowerTrace(np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.0, 0.0, 4.0, 4.0]))
    (e,) = integrate_windows(trace, [Window("step", 0.5, 2.5, 2)], min_samples=2)
    # [0.5, 1]: 0 J; [1, 2]: mean 2 W -> 2 J; [2, 2.5]: 4 W * 0.5 s -> 2 J
    assert e.energy_j == pytest.approx(4.0)
    assert e.energy_per_execution_j == pytest.approx(2.0)
    assert e.samples == 2


def test_window_inside_one_sample_interval() -> None:
    trace = PowerTrace(np.array([0.0, 2.0]), np.array([0.0, 4.0]))
    (e,) = integrate_windows(trace, [Window("tiny", 0.5, 1.5, 1)], min_samples=0)
    assert e.energy_j == pytest.approx(2.0)  # P(0.5)=1, P(1.5)=3, mean 2 W over 1 s
    assert e.samples == 0


def test_several_windows_in_order() -> None:
    out = integrate_windows(_constant_2w(), [Window("a", 0.0, 1.0, 1), Window("b", 2.0, 4.0, 2)])
    assert [(w.label, w.energy_j, w.energy_per_execution_j) for w in out] == [
        ("a", pytest.approx(2.0), pytest.approx(2.0)),
        ("b", pytest.approx(4.0), pytest.approx(2.0)),
    ]


def test_window_outside_trace_names_label_and_both_ranges() -> None:
    with pytest.raises(TraceFormatError) as exc:
        integrate_windows(_constant_2w(), [Window("conv2", 3.5, 4.5, 50)])
    msg = str(exc.value)
    assert "'conv2'" in msg and "[3.5, 4.5]" in msg and "[0.0, 4.0]" in msg


def test_too_few_samples_asks_for_longer_loop() -> None:
    with pytest.raises(TraceFormatError, match=r"'fc'.*holds 6 trace sample.*min_samples=10.*more times"):
        integrate_windows(_constant_2w(), [Window("fc", 1.0, 1.5, 50)])
    (e,) = integrate_windows(_constant_2w(), [Window("fc", 1.0, 1.5, 50)], min_samples=6)
    assert e.energy_j == pytest.approx(1.0)


def test_trace_errors_are_nnperf_errors() -> None:
    assert issubclass(TraceFormatError, NnperfError)


@pytest.mark.parametrize(
    ("time_s", "power_w", "match"),
    [
        ([0.0], [1.0], "at least 2"),
        ([0.0, 1.0], [1.0], "one length"),
        ([0.0, 0.0], [1.0, 1.0], "strictly increasing"),
        ([0.0, 1.0], [1.0, -1.0], ">= 0"),
        ([0.0, float("nan")], [1.0, 1.0], "finite"),
    ],
)
def test_power_trace_validation(time_s: list[float], power_w: list[float], match: str) -> None:
    with pytest.raises(TraceFormatError, match=match):
        PowerTrace(np.array(time_s), np.array(power_w))


def test_power_trace_is_read_only() -> None:
    trace = _constant_2w()
    with pytest.raises(ValueError):
        trace.power_w[0] = 5.0


def test_window_validation() -> None:
    with pytest.raises(ValueError, match="after"):
        Window("x", 1.0, 1.0, 1)
    with pytest.raises(ValueError, match="executions"):
        Window("x", 0.0, 1.0, 0)


# --- CSV import -------------------------------------------------------------------------------


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


def test_read_trace_csv_with_comments_and_extra_columns(tmp_path: Path) -> None:
    path = _csv(tmp_path, "# Keysight N6705C export\nsample,Time,Power,current\n0,0.0,1.5,0.3\n\n1,0.5,2.5,0.5\n")
    trace = read_trace_csv(path)
    np.testing.assert_array_equal(trace.time_s, [0.0, 0.5])
    np.testing.assert_array_equal(trace.power_w, [1.5, 2.5])
    assert trace.duration_s == 0.5


def test_read_trace_csv_then_integrate(tmp_path: Path) -> None:
    rows = "\n".join(f"{i / 10},{2.0}" for i in range(41))
    trace = read_trace_csv(_csv(tmp_path, "time_s,power_w\n" + rows + "\n"))
    (e,) = integrate_windows(trace, [Window("conv1", 1.0, 3.0, 4)])
    assert e.energy_per_execution_j == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("", 1, "empty file"),
        ("# only a comment\n\n", 2, "empty file"),
        ("t,p\n0,1\n", 1, "found 't,p'"),
        ("time_s,volts\n0,1\n", 1, "found 'time_s,volts'"),
        ("time_s,power_w\n0,1\n0.1,abc\n", 3, "power value 'abc' is not a number"),
        ("time_s,power_w\n0,1\nx,1\n", 3, "time value 'x' is not a number"),
        ("time_s,power_w\n0,1\n0.1,inf\n", 3, "not a finite number"),
        ("time_s,power_w\n0,1\n0.1\n", 3, "expected at least 2 columns, found 1"),
        ("time_s,power_w\n0,1\n# c\n0.1,-0.5\n", 4, "negative power -0.5 W"),
        ("time_s,power_w\n0,1\n0.2,1\n0.2,1\n", 4, "time 0.2 s is not after the previous sample's 0.2 s"),
        ("time_s,power_w\n0,1\n0.2,1\n0.1,1\n", 4, "time 0.1 s is not after"),
        ("time_s,power_w\n0,1\n", 2, "1 sample(s); a power trace needs at least 2"),
        ("time_s,power_w\n", 1, "0 sample(s)"),
    ],
)
def test_read_trace_csv_errors_name_file_and_line(tmp_path: Path, text: str, line: int, what: str) -> None:
    path = _csv(tmp_path, text)
    with pytest.raises(TraceFormatError) as exc:
        read_trace_csv(path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}, line {line}: "), msg
    assert what in msg
    assert exc.value.line == line and exc.value.path == str(path)


def test_read_trace_csv_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.csv"
    with pytest.raises(TraceFormatError, match="no such power-trace file") as exc:
        read_trace_csv(path)
    assert str(path) in str(exc.value)


# --- counter meters ---------------------------------------------------------------------------


class _FakeMeter(PowerMeter):
    name = "fake"
    sample_period_s = 0.01

    def __init__(self) -> None:
        self.energy_j = 10.0

    def availability(self) -> Availability:
        return Availability.yes()

    def read_energy_j(self) -> float:
        return self.energy_j


def test_measure_energy_divides_by_executions() -> None:
    meter = _FakeMeter()

    def run_block(n: int) -> float:
        meter.energy_j += 0.25 * n  # 0.25 J per execution
        return 0.5

    r = measure_energy(meter, run_block, 8)
    assert r.energy_per_execution_j == pytest.approx(0.25)
    assert r.energy_j == pytest.approx(2.0)
    assert r.mean_power_w == pytest.approx(4.0)
    assert (r.executions, r.duration_s, r.meter) == (8, 0.5, "fake")
    with pytest.raises(ValueError):
        measure_energy(meter, run_block, 0)


def test_min_duration_covers_samples() -> None:
    assert min_duration_s(_FakeMeter()) == pytest.approx(0.5)
    assert min_duration_s(_FakeMeter(), samples=10) == pytest.approx(0.1)
    assert min_duration_s(RaplMeter(), samples=50) == pytest.approx(0.05)
    assert min_duration_s(NvmlMeter()) == pytest.approx(1.0)


def _package(root: Path, index: str, name: str, energy_uj: int, max_uj: int = 1_000_000_000) -> Path:
    d = root / f"intel-rapl:{index}"
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    (d / "energy_uj").write_text(f"{energy_uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d / "energy_uj"


@pytest.fixture
def powercap(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "powercap"
    p0 = _package(root, "0", "package-0", 5_000_000, max_uj=10_000_000)
    p1 = _package(root, "1", "package-1", 3_000_000)
    _package(root, "0:0", "core", 999_000_000)  # sub-domain: part of package-0, not added
    _package(root, "2", "psys", 777_000_000)  # platform: overlaps the packages, not added
    return root, p0, p1


def test_rapl_sums_package_domains(powercap: tuple[Path, Path, Path]) -> None:
    root, p0, p1 = powercap
    meter = RaplMeter(root=root)
    assert meter.availability() == Availability.yes()
    assert meter.domain_names() == ["intel-rapl:0", "intel-rapl:1"]
    assert meter.read_energy_j() == pytest.approx(8.0)
    p0.write_text("6500000\n")
    p1.write_text("3250000\n")
    assert meter.read_energy_j() == pytest.approx(9.75)  # +1.5 J +0.25 J


def test_rapl_handles_wrap_around(powercap: tuple[Path, Path, Path]) -> None:
    root, p0, _ = powercap
    meter = RaplMeter(root=root)
    p0.write_text("9900000\n")
    assert meter.read_energy_j() == pytest.approx(12.9)  # 9.9 + 3.0
    p0.write_text("400000\n")  # wrapped at 10 J: 0.1 J to the top + 0.4 J after
    assert meter.read_energy_j() == pytest.approx(13.4)


def test_rapl_unreadable_counter(powercap: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, p0, _ = powercap
    real_read_text = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self == p0:  # chmod would not stop root, which the tests may run as
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", read_text)
    avail = RaplMeter(root=root).availability()
    assert not avail.ok
    assert "not readable" in avail.reason and str(p0) in avail.reason
    with pytest.raises(UnavailableError, match="not readable"):
        RaplMeter(root=root).read_energy_j()


def test_rapl_without_powercap(tmp_path: Path) -> None:
    avail = RaplMeter(root=tmp_path / "missing").availability()
    assert not avail.ok and "exposes no RAPL counters" in avail.reason
    _package(tmp_path / "only-psys", "0", "psys", 1)
    avail = RaplMeter(root=tmp_path / "only-psys").availability()
    assert not avail.ok and "no RAPL package domain" in avail.reason


def _fake_pynvml(init_error: str | None = None, energy_error: str | None = None) -> types.ModuleType:
    mod = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):  # pynvml's own name
        pass

    state = {"mj": 1_000_000}

    def init() -> None:
        if init_error:
            raise NVMLError(init_error)

    def energy(handle: object) -> int:
        if energy_error == "not supported":
            raise NVMLError_NotSupported("Not Supported")
        state["mj"] += 1500
        return state["mj"]

    mod.NVMLError = NVMLError  # type: ignore[attr-defined]
    mod.NVMLError_NotSupported = NVMLError_NotSupported  # type: ignore[attr-defined]
    mod.nvmlInit = init  # type: ignore[attr-defined]
    mod.nvmlDeviceGetHandleByIndex = lambda i: f"gpu{i}"  # type: ignore[attr-defined]
    mod.nvmlDeviceGetTotalEnergyConsumption = energy  # type: ignore[attr-defined]
    return mod


def test_nvml_reads_millijoules_as_joules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml())
    meter = NvmlMeter(device_index=1)
    assert meter.availability().ok
    first, second = meter.read_energy_j(), meter.read_energy_j()
    assert second - first == pytest.approx(1.5)  # 1500 mJ per fake read


@pytest.mark.parametrize(
    ("module", "reason"),
    [
        (None, "nvidia-ml-py is not installed (pip install nvidia-ml-py)"),
        (_fake_pynvml(init_error="NVML Shared Library Not Found"), "no NVIDIA driver/GPU: NVML Shared Library"),
        (_fake_pynvml(energy_error="not supported"), "needs Volta or newer"),
    ],
)
def test_nvml_unavailable_reasons(monkeypatch: pytest.MonkeyPatch, module: object, reason: str) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", module)
    meter = NvmlMeter()
    avail = meter.availability()
    assert not avail.ok and reason in avail.reason
    with pytest.raises(UnavailableError, match="'nvml' cannot run here"):
        meter.read_energy_j()


@pytest.mark.parametrize(
    ("call", "error", "index", "reason"),
    [
        ("nvmlDeviceGetHandleByIndex", "Invalid Argument", 3, "no NVIDIA GPU with index 3: Invalid Argument"),
        ("nvmlDeviceGetTotalEnergyConsumption", "Insufficient Permissions", 2,
         "NVIDIA GPU 2: energy counter not readable: Insufficient Permissions"),
    ],
)
def test_nvml_failures_name_the_gpu_and_the_error(monkeypatch: pytest.MonkeyPatch, call: str, error: str,
                                                  index: int, reason: str) -> None:
    """No GPU at that index, or an energy counter that cannot be read: NVML's own error in the reason."""
    fake = _fake_pynvml()

    def failing(*args: object) -> object:
        raise fake.NVMLError(error)  # type: ignore[attr-defined]

    setattr(fake, call, failing)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    avail = NvmlMeter(device_index=index).availability()
    assert not avail.ok
    assert avail.reason == reason


@pytest.mark.gpu
def test_nvml_counter_does_not_decrease() -> None:
    meter = NvmlMeter()
    avail = meter.availability()
    assert avail.ok, avail.reason  # a CUDA device has the NVIDIA driver, and nvidia-ml-py is a dependency
    before = meter.read_energy_j()
    time.sleep(0.2)
    after = meter.read_energy_j()
    assert after >= before > 0


# --- registry ---------------------------------------------------------------------------------


def test_registry_names_and_unknown_meter() -> None:
    assert {"nvml", "rapl"} <= set(METERS.names())
    with pytest.raises(UnknownPluginError, match=r"unknown power meter 'joulemeter'; known: .*nvml.*rapl"):
        get_meter("joulemeter")


def test_report_gives_every_meter_a_verdict() -> None:
    report = dict(meter_report())
    assert {"nvml", "rapl"} <= set(report)
    assert all(a.ok or a.reason for a in report.values())


@pytest.mark.skipif(Path("/sys/class/powercap").exists(), reason="this machine has powercap")
def test_get_meter_rapl_unavailable_here() -> None:
    with pytest.raises(UnavailableError, match=r"power meter 'rapl' cannot run here: .*powercap"):
        get_meter("rapl")


@pytest.mark.parametrize(("nvml_ok", "rapl_ok"), [(True, False), (False, True), (True, True), (False, False)])
def test_available_meters_are_the_ok_ones(monkeypatch: pytest.MonkeyPatch, nvml_ok: bool, rapl_ok: bool) -> None:
    def verdict(ok: bool) -> Availability:
        return Availability.yes() if ok else Availability.no("not here")

    monkeypatch.setattr(NvmlMeter, "availability", lambda self: verdict(nvml_ok))
    monkeypatch.setattr(RaplMeter, "availability", lambda self: verdict(rapl_ok))
    report = dict(meter_report())
    assert (report["nvml"].ok, report["rapl"].ok) == (nvml_ok, rapl_ok)
    # only the built-in two are pinned: a third-party meter installed here may be in either list
    listed = [name for name in available_meters() if name in ("nvml", "rapl")]
    assert listed == [name for name, ok in (("nvml", nvml_ok), ("rapl", rapl_ok)) if ok]

"""The primitive dataset profiled on a device: the CUDA path of ``profile_primitives`` (system, primitives chosen,
timers built for the device, synchronized) run on this CPU with ``torch.cuda`` faked, beside a CPU profile in one
store. The real GPU's profile is in tests/primitives/test_primitive_device.py (marked ``gpu``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from harness_presets import SMOKE_HARNESS
from nnperf.campaign import (
    PrimitiveItem,
    PrimitiveRunner,
    load_primitive_dataset,
    primitive_system,
    primitive_systems,
    profile_primitives,
)
from nnperf.errors import NnperfError
from nnperf.primitives import ConvConfig, _timing, all_primitives, all_transforms, get_primitive
from nnperf.store import Store

CONFIG = ConvConfig.make(1, 8, 16, 12, 1)
GPU_NAME = "NVIDIA H200"
TRANSFORMS = 12


@pytest.fixture
def devices(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """A fake GPU: torch sees one CUDA device; timers asked for "cuda" are built on CPU tensors (their operands
    stay here) and ``torch.cuda.synchronize`` counts its calls. Yields the devices each timer was asked for."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: GPU_NAME)
    asked: dict[str, list[str]] = {"timers": [], "synchronize": []}
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: asked["synchronize"].append(str(device)))

    def operands(config: ConvConfig, seed: int, device: str):  # type: ignore[no-untyped-def]
        asked["timers"].append(device)
        return config.random_operands(seed)

    def moved(tensors, device: str):  # type: ignore[no-untyped-def]
        asked["timers"].append(device)
        return tensors

    monkeypatch.setattr(_timing, "device_operands", operands)
    monkeypatch.setattr(_timing, "to_device", moved)
    yield asked


def test_a_cuda_profile_times_the_cuda_primitives_into_a_system_of_its_own(
        tmp_path: Path, devices: dict[str, list[str]]) -> None:
    with Store(tmp_path / "p.db") as store:
        gpu = profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS, device="cuda")
        on_gpu = set(devices["timers"])
        cpu = profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS, primitives=[get_primitive("direct")])
        gpu_system, cpu_system = store.system(gpu.system_id), store.system(cpu.system_id)
        gpu_data, cpu_data = load_primitive_dataset(store, gpu.system_id), load_primitive_dataset(store, cpu.system_id)
        assert [s.id for s in primitive_systems(store)] == [gpu.system_id, cpu.system_id]
    cuda_names = {p.name for p in all_primitives() if p.supports("cuda").ok and p.applies(CONFIG)}
    assert {"torch-conv2d", "conv1x1-fhw", "mec-col"} <= cuda_names
    assert not {"onednn-chw", "ort-chw", "opencv", "nnpack"} & cuda_names
    assert (gpu.measured, gpu.failures, gpu.samples) == (1, (), len(cuda_names) + TRANSFORMS)
    assert set(gpu_data.primitives) == cuda_names and len(gpu_data.transforms) == TRANSFORMS
    assert on_gpu == {"cuda"}  # every timer of the CUDA profile, primitives and transformations, was built there
    assert devices["synchronize"] and set(devices["synchronize"]) == {"cuda"}
    assert (gpu_system.device, gpu_system.device_name, gpu_system.options) == (
        "cuda", GPU_NAME, {"tf32": "off", "threads": "1"})
    assert gpu_system.key == primitive_system(1, "cuda").key != cpu_system.key == primitive_system(1).key
    assert (cpu.measured, cpu.samples) == (1, 1 + TRANSFORMS)  # the same configuration, measured again on the CPU
    assert cpu_data.primitives == ("direct",)


@pytest.mark.usefixtures("devices")
def test_a_cpu_only_primitive_asked_for_on_cuda_is_an_error_naming_it(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as store, pytest.raises(NnperfError) as raised:
        profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS, device="cuda",
                           primitives=[get_primitive("direct"), get_primitive("onednn-chw"), get_primitive("ort-chw")])
    assert str(raised.value) == (
        "these primitives cannot be profiled on cuda: onednn-chw (oneDNN (torch mkldnn_convolution) computes on the "
        "CPU only, not on cuda); ort-chw (ONNX Runtime (MLAS) computes on the CPU only, not on cuda)")


@pytest.mark.usefixtures("devices")
def test_a_runner_of_another_device_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "p.db") as store, pytest.raises(NnperfError, match="asked for on cuda, but the runner "
                                                                             "measures on primitives/cpu"):
        profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS, device="cuda", runner=PrimitiveRunner(1),
                           primitives=[get_primitive("direct")])


def test_an_item_keeps_its_device_and_defaults_to_the_cpu() -> None:
    item = PrimitiveItem(CONFIG, (get_primitive("direct"),), frozenset({t.name for t in all_transforms()}), 1,
                         SMOKE_HARNESS)
    assert item.device == "cpu"
    outcome, reference = item.measure()  # direct, timed in rounds with the machine-speed reference
    assert outcome.name == "direct" and outcome.timing is not None and outcome.timing.stats.median_s > 0
    assert reference.name == "machine-speed reference" and reference.op == "reference"

"""Primitives on a device: which run on CUDA, the refusals and their reasons, the synchronized CUDA timer, and the
system key of a CUDA profile. CUDA itself is faked here (``torch.cuda`` monkeypatched); the test marked ``gpu`` runs
on a real one and is skipped without it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from harness_presets import SMOKE_HARNESS
from nnperf.campaign import PRIMITIVE_BACKEND, load_primitive_dataset, primitive_system, profile_primitives
from nnperf.errors import NnperfError
from nnperf.measure import SystemSpec, host_info
from nnperf.measure.backends import SyncedLoopTimer
from nnperf.primitives import (
    HCW,
    HWC,
    ConvConfig,
    LayoutTransform,
    PrimitiveError,
    _timing,
    all_primitives,
    blocked,
    device_availability,
    device_operands,
    from_layout,
    get_primitive,
    primitive_timer,
    reference_conv2d,
    synchronizer,
    to_layout,
    transform_timer,
)
from nnperf.registry import UnavailableError
from nnperf.store import Store

CONFIG = ConvConfig.make(1, 8, 8, 8, 3, 1, 1)
GPU_NAME = "NVIDIA H100 80GB HBM3"
CPU_ONLY = ("onednn-chw", "onednn-hwc", "nnpack", "aten-im2col", "ort-chw", "ort-nchwc", "opencv", "opencv-winograd")
ON_CUDA = ("torch-conv2d", "direct", "im2col-fhw", "im2col-hwf", "im2row-hwf", "im2row-fhw", "kn2row", "kn2col",
           "conv1x1-fhw", "conv1x1-hwf", "winograd-2x3", "winograd-4x3", "winograd-2x5", "fft", "mec-col",
           "mec-row-partition")
NO_CUDA = "device cuda: torch.cuda.is_available\\(\\) is False on this machine"


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch sees two CUDA devices named like an H100 (nothing is ever computed on them)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: GPU_NAME)


@pytest.fixture
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch sees no CUDA device, even on a machine that has one."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def synchronized(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """``torch.cuda.synchronize`` records its device instead of waiting, and CUDA operands stay on the CPU: the
    CUDA code paths run here, on CPU tensors."""
    calls: list[object] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append(device))
    monkeypatch.setattr(_timing, "device_operands", lambda config, seed, device: config.random_operands(seed))
    monkeypatch.setattr(_timing, "to_device", lambda tensors, device: tensors)
    return calls


# ------------------------------------------------------------------------------------------- the system key


def test_the_cpu_system_key_is_the_one_it_was_before_primitives_took_a_device() -> None:
    host = host_info()
    before = SystemSpec(PRIMITIVE_BACKEND, "cpu", host.cpu_model, (("threads", "2"),), host)  # the old expression
    assert primitive_system(2).key == primitive_system(2, "cpu").key == before.key
    assert primitive_system(2).label == "primitives/cpu[threads=2]"


@pytest.mark.usefixtures("fake_cuda")
def test_a_cuda_system_is_named_by_its_gpu_and_differs_from_the_cpus(tmp_path: Path) -> None:
    gpu = primitive_system(1, "cuda")
    assert (gpu.backend, gpu.device, gpu.device_name) == (PRIMITIVE_BACKEND, "cuda", GPU_NAME)
    assert dict(gpu.options) == {"threads": "1", "tf32": "off"}
    assert gpu.label == "primitives/cuda[tf32=off,threads=1]"
    assert gpu.key != primitive_system(1).key
    assert primitive_system(1, "cuda:1").key == gpu.key  # the GPU's model names it, not its index
    assert primitive_system(2, "cuda").key != gpu.key
    with Store(tmp_path / "p.db") as store:
        cpu_id, gpu_id = store.add_system(primitive_system(1)).id, store.add_system(gpu).id
        assert cpu_id != gpu_id
        assert store.find_system(primitive_system(1).key).id == cpu_id  # type: ignore[union-attr]


@pytest.mark.usefixtures("no_cuda")
def test_cuda_without_a_gpu_is_refused_naming_the_reason(tmp_path: Path) -> None:
    with pytest.raises(UnavailableError, match=NO_CUDA):
        primitive_system(1, "cuda")
    with pytest.raises(UnavailableError, match=NO_CUDA):
        primitive_timer(get_primitive("direct"), CONFIG, device="cuda")
    with pytest.raises(UnavailableError, match=NO_CUDA):
        transform_timer(LayoutTransform(HCW, HCW), 1, 8, (8, 8), device="cuda")
    with Store(tmp_path / "p.db") as store:
        with pytest.raises(UnavailableError, match=NO_CUDA):
            profile_primitives(store, [CONFIG], harness=SMOKE_HARNESS, device="cuda")
        assert store.systems() == []  # refused before anything was stored


@pytest.mark.usefixtures("fake_cuda")
def test_a_device_that_is_not_there_or_not_a_device_is_refused() -> None:
    assert device_availability("cuda:1").ok
    assert device_availability("cuda:2").reason == "there is no CUDA device 2 on this machine (2 device(s))"
    for device in ("tpu", "cuda:x", "gpu"):
        with pytest.raises(PrimitiveError, match=f"unknown device '{device}'; use cpu, cuda or cuda:N"):
            device_availability(device)
        with pytest.raises(PrimitiveError, match="unknown device"):
            get_primitive("direct").supports(device)


# ------------------------------------------------------------------------------------ which primitives run where


def test_the_torch_op_primitives_and_torch_conv2d_run_on_cuda_the_vendor_kernels_on_the_cpu_only() -> None:
    names = {p.name for p in all_primitives()}
    assert {p.name for p in all_primitives() if p.supports("cuda").ok} == set(ON_CUDA)
    assert names - set(ON_CUDA) == set(CPU_ONLY)
    assert all(p.supports("cpu").ok for p in all_primitives())
    assert all(p.supports("cuda:3").ok for p in map(get_primitive, ON_CUDA))


@pytest.mark.parametrize("name", CPU_ONLY)
def test_a_cpu_only_primitive_refuses_cuda_with_its_reason(name: str) -> None:
    primitive = get_primitive(name)
    refused = primitive.supports("cuda")
    assert not refused.ok
    assert refused.reason == f"{primitive.library} computes on the CPU only, not on cuda"
    if primitive.availability().ok:
        with pytest.raises(UnavailableError, match=f"primitive {name} cannot run on cuda:1: "):
            primitive.check(CONFIG, "cuda:1")


@pytest.mark.usefixtures("fake_cuda")
def test_a_cpu_only_primitive_is_refused_before_anything_moves_to_the_gpu() -> None:
    with pytest.raises(UnavailableError, match="primitive onednn-chw cannot run on cuda: oneDNN"):
        primitive_timer(get_primitive("onednn-chw"), CONFIG, device="cuda")


def test_cuda_operands_are_the_cpu_operands_of_the_same_seed() -> None:
    x, w, b = device_operands(CONFIG, 3, "cpu")
    for mine, theirs in zip((x, w, b), CONFIG.random_operands(3), strict=True):
        assert torch.equal(mine, theirs)


# ------------------------------------------------------------------------------------------------ the CUDA timer


def test_a_synced_timer_synchronizes_before_the_clock_starts_and_after_the_last_call() -> None:
    events: list[str] = []
    timer = SyncedLoopTimer(lambda: events.append("run"), lambda: events.append("sync"))
    assert timer.time_block(3) > 0
    assert events == ["sync", "run", "run", "run", "sync"]


def test_the_cpu_has_nothing_to_synchronize_and_cuda_synchronizes_its_own_device(
        synchronized: list[object]) -> None:
    assert synchronizer("cpu") is None
    sync = synchronizer("cuda:1")
    assert sync is not None
    sync()
    assert synchronized == [torch.device("cuda:1")]


@pytest.mark.parametrize("make", [
    lambda: primitive_timer(get_primitive("winograd-2x3"), CONFIG, device="cuda"),
    lambda: transform_timer(LayoutTransform(HCW, blocked(8)), 1, 8, (8, 8), device="cuda"),
], ids=["primitive", "transform"])
@pytest.mark.usefixtures("fake_cuda")
def test_a_cuda_timer_synchronizes_the_device_around_each_block(synchronized: list[object],
                                                                 make: Callable[[], Any]) -> None:
    timer = make()
    assert synchronized == []  # building it ran nothing on the device
    assert timer.time_block(4) > 0
    assert timer.time_block(1) > 0
    assert synchronized == [torch.device("cuda")] * 4  # twice per block


def test_a_cpu_timer_never_synchronizes(synchronized: list[object]) -> None:
    timer = primitive_timer(get_primitive("direct"), CONFIG)
    assert timer.time_block(2) > 0 and synchronized == []


# --------------------------------------------------------------------------------------------- on a real GPU


@pytest.mark.gpu
def test_the_cuda_primitives_compute_every_configuration_on_the_gpu() -> None:
    configs = (ConvConfig.make(1, 16, 24, 12, 3, 1, 1), ConvConfig.make(2, 12, 18, (11, 9), 5, 2, (2, 1, 2, 3),
                                                                       groups=3, dilation=(1, 2)))
    for config in configs:
        x, w, b = device_operands(config, 0, "cuda")
        ref = reference_conv2d(x.double(), w.double(), b.double(), config)  # float64: no TF32 anywhere
        for primitive in (p for p in all_primitives() if p.supports("cuda").ok and p.applies(config)):
            with torch.inference_mode():
                y = primitive.run(to_layout(x, primitive.input_layout), w, b, config)
            got = from_layout(y, primitive.output_layout, config.f)
            assert y.device.type == "cuda" and got.shape == ref.shape
            error = float((got.double() - ref).abs().max() / ref.abs().max())
            assert error <= primitive.error_bound_on("cuda"), (primitive.name, config, error)


@pytest.mark.gpu
def test_every_layout_moves_on_the_gpu_and_back_exactly() -> None:
    x = torch.randn(2, 21, 9, 7, device="cuda")
    for layout in (HWC, HCW, blocked(8), blocked(16)):
        moved = to_layout(x, layout)
        assert moved.device.type == "cuda"
        assert torch.equal(from_layout(moved, layout, 21), x)


@pytest.mark.gpu
def test_two_configurations_profiled_on_the_gpu(tmp_path: Path) -> None:
    configs = [ConvConfig.make(1, 16, 16, 14, 3, 1, 1), ConvConfig.make(1, 16, 32, 14, 1, 2)]
    with Store(tmp_path / "p.db") as store:
        report = profile_primitives(store, configs, harness=SMOKE_HARNESS, device="cuda")
        system = store.system(report.system_id)
        dataset = load_primitive_dataset(store, report.system_id)
    assert report.failures == () and report.measured == 2
    assert (system.device, system.device_name) == ("cuda", torch.cuda.get_device_name())
    assert set(dataset.primitives) == {p for p in ON_CUDA if any(get_primitive(p).applies(c) for c in configs)}
    assert all(t > 0 for s in (*dataset.conv, *dataset.layout) for t in s.times_s.values())


# ----------------------------------------------------------------------------------------------------- the API


def test_named_primitives_on_cuda_are_those_that_run_there() -> None:
    from nnperf.api._primitives import named_primitives

    assert [p.name for p in named_primitives(["vendor"], "cuda")] == ["torch-conv2d"]
    assert {p.name for p in named_primitives([], "cuda")} == set(ON_CUDA)
    assert [p.name for p in named_primitives(["winograd", "onednn-chw"])][-1] == "onednn-chw"  # the CPU: as before
    with pytest.raises(UnavailableError, match="primitive onednn-chw cannot run on cuda: oneDNN"):
        named_primitives(["direct", "onednn-chw"], "cuda")


@pytest.mark.usefixtures("no_cuda")
def test_the_api_profile_on_cuda_without_a_gpu_is_refused_before_reading_models(tmp_path: Path) -> None:
    import nnperf
    from nnperf.api import profile_primitives as api_profile

    with pytest.raises(UnavailableError, match=NO_CUDA):
        api_profile(["no-such-model.onnx"], nnperf.System("primitives", device="cuda"), tmp_path / "p.db")
    with pytest.raises(NnperfError, match="profiled on this CPU or a CUDA GPU"):
        api_profile([], nnperf.System("torch", device="cuda"), tmp_path / "p.db")

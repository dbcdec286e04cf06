"""Torch programs: one network with a layout, per-layer bf16 (or fp16) arithmetic and a thread count, run eagerly
or packaged ahead of time by AOTInductor (Cappuccino, Motamedi et al.: the synthesised program's per-layer
inexact arithmetic, its data layout and its parallelism).

:func:`with_precision` makes the program's module from an fp32 one, :func:`torch_runner` runs it on numpy
batches, :func:`aoti_package` compiles it into a deployable ``.pt2`` and :func:`load_aoti` runs that file.

Layouts (:data:`TORCH_LAYOUTS`): ``chw`` is torch's default contiguous NCHW; ``hwc`` is
``torch.channels_last`` for the convolution weights and the input, which torch's convolution, pooling,
normalisation and element-wise ops then keep from layer to layer, so nothing converts it back until the output.

This module imports torch; nothing in ``nnperf`` imports it at package import (callers import it inside the
function that needs it).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nnperf.optimize.synthesize._errors import SynthesisError, UnsupportedModeError

if TYPE_CHECKING:
    import torch
    from torch import nn

TORCH_LAYOUTS = ("chw", "hwc")
"""The layouts of a torch program: ``chw`` (contiguous NCHW) and ``hwc`` (``torch.channels_last``)."""

_CPU_FLAGS = Path("/proc/cpuinfo")
_FP16_FLAGS = frozenset({"avx512_fp16", "amx_fp16"})
"""x86 flags of native fp16 arithmetic: AVX512-FP16 (Sapphire Rapids and later) and AMX-FP16 (Granite Rapids)."""

_META_LAYOUT = "nnperf_layout"
_META_SHAPE = "nnperf_input_shape"
_META_TORCH = "nnperf_torch_version"


# ---------------------------------------------------------------------- what this CPU runs natively
@functools.cache
def bf16_native() -> bool:
    """Whether oneDNN runs bf16 convolutions and matrix products on this CPU
    (``torch.ops.mkldnn._is_mkldnn_bf16_supported()``).

    torch says yes from AVX-512 (F, BW, VL, DQ) on, where oneDNN converts bf16 to fp32 in registers; the
    arithmetic itself is bf16 only with AVX512-BF16 or AMX-BF16, so whether bf16 is also *faster* is for
    the measurement to say, not this flag.
    """
    import torch

    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


@functools.cache
def fp16_native() -> bool:
    """Whether this CPU computes fp16 convolutions natively: AVX512-FP16 or AMX-FP16.

    The rule is oneDNN's (``torch.ops.mkldnn._is_mkldnn_fp16_supported()``, which tests exactly those two
    ISA extensions); on a torch without that query, the flags in ``/proc/cpuinfo``. Elsewhere torch would
    emulate fp16 convolutions through fp32 at a loss, so a program never asks for fp16 there.
    """
    import torch

    query = getattr(torch.ops.mkldnn, "_is_mkldnn_fp16_supported", None)
    if query is not None:
        return bool(query())
    return bool(_FP16_FLAGS & _cpu_flags())


def _cpu_flags() -> frozenset[str]:
    """The CPU feature flags of ``/proc/cpuinfo`` (empty where it is absent: not Linux)."""
    try:
        text = _CPU_FLAGS.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


# ---------------------------------------------------------------------- the program's module
def quantizable_modules(module: nn.Module) -> tuple[str, ...]:
    """Qualified names of the leaf ``nn.Conv2d`` and ``nn.Linear`` modules of ``module``, in
    ``named_modules()`` order: the layers :func:`with_precision` can run in bf16 or fp16."""
    from torch import nn

    return tuple(name for name, sub in module.named_modules()
                 if isinstance(sub, (nn.Conv2d, nn.Linear)) and not any(True for _ in sub.children()))


def with_precision(module: nn.Module, bf16: Collection[str] = (), layout: str = "chw",
                   fp16: Collection[str] = ()) -> nn.Module:
    """An eval-mode deep copy of ``module`` (gradients off) whose modules named in ``bf16`` run in bf16 and
    those in ``fp16`` in fp16; ``module`` itself is left untouched.

    A listed module gets its weights cast, its inputs cast on entry and its output cast back to float32 on
    exit, so every other layer still computes in float32. When every quantizable module
    (:func:`quantizable_modules`) is in one of the two lists and all in the same one, the whole network is cast
    instead (batch normalisation, pooling and the additions too), with one cast at the input and one at the
    output: oneDNN's bf16 kernels then pass bf16 from layer to layer and the per-layer casts vanish.
    ``layout`` ``"hwc"`` makes the convolution weights channels-last; :func:`torch_runner` gives the input
    in it.

    Raises :class:`UnsupportedModeError` for an unknown layout, a name that is not a quantizable module (the
    message lists them) and a precision this CPU does not run natively (:func:`bf16_native`,
    :func:`fp16_native`), :class:`SynthesisError` for a module listed in both.
    """
    import torch

    _check_layout(layout)
    bf16, fp16 = frozenset(bf16), frozenset(fp16)
    quantizable = quantizable_modules(module)
    _check_names(bf16 | fp16, quantizable)
    if bf16 & fp16:
        raise SynthesisError(f"modules {_names(bf16 & fp16)} are listed in both bf16 and fp16; a module runs "
                             "in one precision")
    if bf16 and not bf16_native():
        raise UnsupportedModeError("bf16 was asked for, but this CPU has no native bf16 arithmetic "
                                   "(oneDNN reports no bf16 support: it needs AVX-512 or AMX)")
    if fp16 and not fp16_native():
        raise UnsupportedModeError("fp16 was asked for, but this CPU has no native fp16 arithmetic "
                                   "(it needs AVX512-FP16 or AMX-FP16)")
    program = copy.deepcopy(module).eval().requires_grad_(False)
    everything = frozenset(quantizable)
    for names, dtype in ((bf16, torch.bfloat16), (fp16, torch.float16)):
        if names and names == everything:
            _cast_network(program, dtype)
        else:
            for name in names:
                _cast_module(program.get_submodule(name), dtype)
    if layout == "hwc":
        program.to(memory_format=torch.channels_last)
    return program


def _check_layout(layout: str) -> None:
    if layout not in TORCH_LAYOUTS:
        raise UnsupportedModeError(f"unknown layout {layout!r}; torch programs run in {', '.join(TORCH_LAYOUTS)}")


def _check_names(names: frozenset[str], quantizable: tuple[str, ...]) -> None:
    unknown = names - set(quantizable)
    if unknown:
        raise UnsupportedModeError(f"{_names(unknown)} {'is' if len(unknown) == 1 else 'are'} not a quantizable "
                                   f"module (a leaf nn.Conv2d or nn.Linear); the quantizable ones: "
                                   f"{', '.join(quantizable) or 'none'}")


def _names(names: Collection[str]) -> str:
    return ", ".join(map(repr, sorted(names)))


def _cast_module(sub: nn.Module, dtype: torch.dtype) -> None:
    """``sub`` computes in ``dtype`` between float32 neighbours: weights cast, inputs cast on entry, output cast
    back on exit. Hooks (not a wrapper module) keep every module where its owner holds it: ``build_torch``'s
    GraphModule calls the module objects it lists, and the hooks are traced by ``torch.export``."""
    import torch

    sub.to(dtype)
    sub.register_forward_pre_hook(functools.partial(_cast_inputs, dtype=dtype))
    sub.register_forward_hook(functools.partial(_cast_output, dtype=torch.float32))


def _cast_network(program: nn.Module, dtype: torch.dtype) -> None:
    """The whole network computes in ``dtype``: every floating parameter and buffer cast, the inputs cast once
    on entry and the outputs cast back to float32 once on exit."""
    import torch

    program.to(dtype)
    program.register_forward_pre_hook(functools.partial(_cast_inputs, dtype=dtype))
    program.register_forward_hook(functools.partial(_cast_output, dtype=torch.float32))


def _cast_inputs(module: nn.Module, args: tuple[Any, ...], dtype: torch.dtype) -> tuple[Any, ...]:
    return tuple(_cast(a, dtype) for a in args)


def _cast_output(module: nn.Module, args: tuple[Any, ...], output: Any, dtype: torch.dtype) -> Any:
    if isinstance(output, tuple):
        return tuple(_cast(y, dtype) for y in output)
    return _cast(output, dtype)


def _cast(value: Any, dtype: torch.dtype) -> Any:
    """A floating tensor in ``dtype`` (its memory format kept); anything else unchanged."""
    import torch

    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.to(dtype)
    return value


# ---------------------------------------------------------------------- running it
@contextlib.contextmanager
def intra_op_threads(threads: int) -> Iterator[None]:
    """Runs the block with ``threads`` torch intra-op threads and restores the previous count after: the
    setting is process-wide and other code (another backend, a test) may rely on its own."""
    import torch

    if threads < 1:
        raise SynthesisError(f"a program runs on at least 1 thread, not {threads}")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _TorchRunner:
    """Runs a batch through an eager module. A network whose definition fixes a batch of one (a reshape to
    its IR shape) fails on a larger batch; it is then run one sample at a time, from then on."""

    def __init__(self, module: nn.Module, layout: str, threads: int) -> None:
        self.module, self.layout, self.threads = module, layout, threads
        self.per_sample = False

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import torch

        batch = _to_tensor(x, self.layout)
        with intra_op_threads(self.threads), torch.inference_mode():
            if not self.per_sample and len(batch) > 1:
                try:
                    y = _single_output(self.module(batch))
                    if y.shape[:1] == batch.shape[:1]:
                        return _to_numpy(y)
                except RuntimeError:  # a shape error of a fixed batch; a real error recurs below
                    pass
                self.per_sample = True
            if len(batch) == 1:
                return _to_numpy(_single_output(self.module(batch)))
            return np.concatenate([_to_numpy(_single_output(self.module(batch[i:i + 1])))
                                   for i in range(len(batch))])


def torch_runner(module: nn.Module, layout: str, threads: int) -> Callable[[np.ndarray], np.ndarray]:
    """A function that runs a float32 batch ``(N, ...)`` through ``module`` and returns its output as a float32
    array ``(N, ...)``.

    Each call runs under ``torch.inference_mode`` with ``threads`` intra-op threads (restored after), the
    input converted to ``layout`` (``hwc``: channels-last, for a 4-D input). ``module`` takes one input and
    gives one output (else :class:`SynthesisError`); make it with :func:`with_precision` for the same layout.
    """
    _check_layout(layout)
    if threads < 1:
        raise SynthesisError(f"a program runs on at least 1 thread, not {threads}")
    return _TorchRunner(module, layout, threads)


def _to_tensor(x: np.ndarray, layout: str) -> torch.Tensor:
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    if layout == "hwc" and tensor.dim() == 4:
        return tensor.contiguous(memory_format=torch.channels_last)
    return tensor


def _single_output(output: Any) -> torch.Tensor:
    import torch

    if isinstance(output, (tuple, list)):
        if len(output) != 1:
            raise SynthesisError(f"the network gives {len(output)} outputs; a synthesised program gives one")
        output = output[0]
    if not isinstance(output, torch.Tensor):
        raise SynthesisError(f"the network gives a {type(output).__name__}, not a tensor")
    return output


def _to_numpy(y: torch.Tensor) -> np.ndarray:
    import torch

    return y.to(torch.float32).contiguous().numpy()


# ---------------------------------------------------------------------- AOTInductor
def aoti_package(module: nn.Module, example: torch.Tensor, path: Path, layout: str = "chw") -> Path:
    """``module`` (its bf16 casts and layout included) compiled ahead of time by AOTInductor into the package
    ``path`` (a ``.pt2``); returns the path written.

    ``torch.export.export`` captures the module on ``example`` (converted to ``layout``) with static shapes:
    the package takes exactly ``example``'s shape (a batch of one for a deployed single-sample program), which
    lets Inductor specialise every loop. The generated loops take their thread count from OpenMP at run time
    (``cpp.dynamic_threads``), so the loader's :func:`intra_op_threads` setting holds for them as for the
    oneDNN calls. The package records its layout, input shape and torch version for :func:`load_aoti`.

    Where it runs: the package holds a shared library built for this machine's ISA (its metadata's
    ``AOTI_CPU_ISA``) against this torch's libtorch, so it needs a CPU with that ISA and this same torch
    version (``torch.__version__`` here, 2.13), loaded by ``torch._inductor.aoti_load_package`` in Python or
    ``torch::inductor::AOTIModelPackageLoader`` in C++. Compiling needs a C++ compiler (g++ or clang++).

    A module that torch.export cannot capture, or that Inductor cannot compile, raises :class:`SynthesisError`
    with the first line of the cause.
    """
    import torch

    _check_layout(layout)
    if Path(path).suffix != ".pt2":
        raise SynthesisError(f"an AOTInductor package is a .pt2 file, not {str(path)!r}")
    path = Path(path)
    example = _to_tensor(example.detach().cpu().numpy(), layout)
    metadata = {_META_LAYOUT: layout, _META_SHAPE: ",".join(map(str, example.shape)),
                _META_TORCH: torch.__version__}
    try:
        with torch.no_grad():
            program = torch.export.export(module, (example,))
    except Exception as exc:  # torch.export raises many unrelated types; all mean "cannot capture"
        raise SynthesisError(f"torch.export cannot capture the network: {_first_line(exc)}") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        written = torch._inductor.aoti_compile_and_package(
            program, package_path=str(path),
            inductor_configs={"aot_inductor.metadata": metadata, "cpp.dynamic_threads": True})
    except Exception as exc:  # Inductor's lowering, codegen and the C++ compiler each raise their own
        raise SynthesisError(f"AOTInductor cannot compile the network: {_first_line(exc)}") from exc
    return Path(written)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


class _AotiRunner:
    """Runs a batch through a loaded AOTInductor package, in chunks of the batch it was compiled for."""

    def __init__(self, program: Callable[..., Any], layout: str, batch: int | None, threads: int) -> None:
        self.program, self.layout, self.batch, self.threads = program, layout, batch, threads

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import torch

        tensor = _to_tensor(x, self.layout)
        size = self.batch or len(tensor)
        if len(tensor) % size:
            raise SynthesisError(f"the package was compiled for batches of {size}; got {len(tensor)} samples")
        with intra_op_threads(self.threads), torch.inference_mode():
            return np.concatenate([_to_numpy(_single_output(self.program(tensor[i:i + size])))
                                   for i in range(0, len(tensor), size)])


def load_aoti(path: Path, threads: int) -> Callable[[np.ndarray], np.ndarray]:
    """A function that runs a float32 batch through the AOTInductor package at ``path`` with ``threads``
    intra-op threads (restored after each call), as :func:`torch_runner` runs the module it came from.

    The input is converted to the layout the package was compiled in and fed in chunks of its compiled batch.
    A missing or unloadable file, or a package made by another torch version, raises :class:`SynthesisError`.
    """
    import torch

    if threads < 1:
        raise SynthesisError(f"a program runs on at least 1 thread, not {threads}")
    if not Path(path).is_file():
        raise SynthesisError(f"no AOTInductor package at {str(path)!r}")
    try:
        program = torch._inductor.aoti_load_package(str(path))
    except Exception as exc:  # a corrupt archive, a library that does not link: all "cannot load"
        raise SynthesisError(f"cannot load the AOTInductor package {str(path)!r}: {_first_line(exc)}") from exc
    metadata = program.get_metadata()
    made_by = metadata.get(_META_TORCH, torch.__version__)
    if made_by != torch.__version__:
        raise SynthesisError(f"the package {str(path)!r} was compiled by torch {made_by}; it runs only there, "
                             f"not under torch {torch.__version__}")
    shape = metadata.get(_META_SHAPE)
    batch = int(shape.split(",")[0]) if shape else None
    return _AotiRunner(program, metadata.get(_META_LAYOUT, "chw"), batch, threads)


"""The settings that make a system on this machine: a backend, its device, thread count and options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nnperf.measure.backends import Backend, BackendOptions, create_backend


@dataclass(frozen=True)
class System:
    """Which backend measures, on which device, with how many threads and which backend options.

    Every public function that measures or predicts takes one (``nnperf.System("onnxruntime", threads=2)``);
    ``options`` may be given as a mapping and is kept as sorted ``(name, value)`` pairs, so that two equal
    settings compare and hash equal. Options are validated by the backend when it is opened.
    """

    backend: str = "torch"
    device: str = "cpu"
    threads: int = 1
    options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        pairs = self.options.items() if isinstance(self.options, Mapping) else self.options
        object.__setattr__(self, "options", tuple(sorted((str(k), str(v)) for k, v in pairs)))
        self.backend_options  # noqa: B018  (validates the device and thread count now, not when opened)

    @property
    def backend_options(self) -> BackendOptions:
        """The device, thread count and options as the backend takes them."""
        return BackendOptions(device=self.device, threads=self.threads, extra=dict(self.options))

    @property
    def label(self) -> str:
        """``backend/device[option=value,...,threads=N]``, as the fleet and the reports print it."""
        opts = ",".join(f"{k}={v}" for k, v in (*self.options, ("threads", str(self.threads))))
        return f"{self.backend}/{self.device}[{opts}]"

    def open(self, seed: int = 0) -> Backend:
        """The backend these settings describe, ready to measure (unknown names list the known ones)."""
        return create_backend(self.backend, self.backend_options, seed)

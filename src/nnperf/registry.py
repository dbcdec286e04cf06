"""Named plug-ins (backends, power meters, ...) with an availability check.

A registry maps a name to a factory. Third parties add their own through the
``nnperf.<kind>`` entry-point group; nothing is imported until asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import Generic, TypeVar

from nnperf.errors import NnperfError

T = TypeVar("T")


class UnknownPluginError(NnperfError):
    """A plug-in name that no registry entry has."""


class UnavailableError(NnperfError):
    """A plug-in that exists but cannot run on this machine (the message says why)."""


@dataclass(frozen=True)
class Availability:
    """Whether a plug-in can run here, and if not, why (e.g. 'onnxruntime is not installed')."""

    ok: bool
    reason: str = ""

    @classmethod
    def yes(cls) -> Availability:
        return cls(True)

    @classmethod
    def no(cls, reason: str) -> Availability:
        return cls(False, reason)


class Registry(Generic[T]):
    """Factories by name; ``kind`` words the errors ('backend', 'power meter')."""

    def __init__(self, kind: str, entry_point_group: str) -> None:
        self.kind = kind
        self._group = entry_point_group
        self._factories: dict[str, Callable[[], T]] = {}
        self._loaded_entry_points = False

    def register(self, name: str, factory: Callable[[], T]) -> None:
        if name in self._factories:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a plug-in registered for a while, as in a test); an unknown name is an error."""
        if self._factories.pop(name, None) is None:
            raise UnknownPluginError(f"unknown {self.kind} {name!r}")

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._factories)

    def create(self, name: str) -> T:
        """A new instance of ``name``; an unknown name lists the known ones."""
        self._load_entry_points()
        factory = self._factories.get(name)
        if factory is None:
            raise UnknownPluginError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        return factory()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _load_entry_points(self) -> None:
        if self._loaded_entry_points:
            return
        self._loaded_entry_points = True
        for ep in metadata.entry_points(group=self._group):
            if ep.name not in self._factories:
                self._factories[ep.name] = ep.load()

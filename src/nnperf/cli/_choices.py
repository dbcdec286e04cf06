"""Option choices known only to the API, read when argparse first needs them (a check or an error), so that
building the parser never imports :mod:`nnperf.api` (which loads PyTorch): ``nnperf --help`` stays fast."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cached_property


class LazyChoices(Sequence[str]):
    """argparse ``choices`` computed on first use; give the option a ``metavar``, or argparse lists them (and so
    computes them) while the parser is built."""

    def __init__(self, values: Callable[[], Sequence[str]]) -> None:
        self._compute = values

    @cached_property
    def _values(self) -> tuple[str, ...]:
        return tuple(self._compute())

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        return self._values[index]

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, value: object) -> bool:
        return value in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)


def protocol_choices(*extra: str) -> LazyChoices:
    """``auto``, every comparison protocol, then ``extra``."""

    def values() -> list[str]:
        from nnperf.api import ComparisonProtocol

        return ["auto", *(p.value for p in ComparisonProtocol), *extra]

    return LazyChoices(values)

"""The base of the prediction package's enumerations: members that are their text.

A model kind, a regressor or a layer-model key is stored in documents and offered as a CLI choice as a
string. Members of a :class:`TextEnum` are ``str`` instances equal to (and hashing as) their value, serialise
to JSON as it, and print as it in every Python from 3.10 on (a plain ``(str, Enum)`` member prints as
``Class.MEMBER`` in f-strings from 3.11), so replacing a bare string by a member changes no stored or
printed text.
"""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """A string enumeration whose members print, format and serialise as their value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return format(str(self.value), format_spec)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """Every member's text, in definition order."""
        return tuple(str(member.value) for member in cls)

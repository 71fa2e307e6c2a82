"""Markers a caller can put into a request to say "this value changes on every request"."""

from __future__ import annotations


class VolatileText(str):
    """A string that holds a per-request value (a date, a request id, retrieved chunks).

    It behaves exactly like ``str``: an unwrapped client sends it unchanged. A wrapped client moves it
    behind the static prefix (see :mod:`prefixlint.sdk.volatile`), and payload analysis marks it as
    not stable.
    """

    __slots__ = ("name",)
    name: str

    def __new__(cls, value: object, name: str = "value") -> VolatileText:
        obj = super().__new__(cls, str(value))
        obj.name = name
        return obj

    def __reduce__(self):  # pragma: no cover - pickling support only
        return (VolatileText, (str(self), self.name))


def is_volatile(value: object) -> bool:
    """True for a :class:`VolatileText` (or a content part whose text is one)."""
    if isinstance(value, VolatileText):
        return True
    return isinstance(value, dict) and isinstance(value.get("text"), VolatileText)

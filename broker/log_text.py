"""Client-supplied text in log lines: names, remarks, peers. A log line is one line, so a
topic named ``"T\\n2024-01-01 ERROR ..."`` must not write a second, forged one: control
characters (and the Unicode line separators) are written as escapes, and very long
text is cut with its length said."""
from __future__ import annotations

__all__ = ["printable"]

_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
_ESCAPES.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", 0x2028: "\\u2028", 0x2029: "\\u2029"})


def printable(value, limit: int | None = 300) -> str:
    """``value`` as text for a log line: control characters escaped, at most ``limit``
    characters of it (None: all)."""
    text = value if isinstance(value, str) else str(value)
    if limit is not None and len(text) > limit:
        return text[:limit].translate(_ESCAPES) + f"...({len(text)} characters)"
    return text.translate(_ESCAPES)

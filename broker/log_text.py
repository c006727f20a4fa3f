"""Client-supplied text in log lines and on a terminal: names, remarks, peers, command
line arguments. The one escaper every printer uses (the log's formatter, the CLI's tables
and error lines, ``fault list``). A log line or an error line is one line, so a topic
named ``"T\\n2024-01-01 ERROR ..."`` must not write a second, forged one, and a name must
not drive the terminal: control characters (ESC included), the Unicode line separators,
the bidirectional overrides and other invisible format characters (U+202E would show a
name reversed) are written as escapes, and very long text is cut with its length said."""
from __future__ import annotations

import re

__all__ = ["printable"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# what str.isprintable() refuses and a terminal would act on or hide: C0/C1 controls and
# DEL, the soft hyphen, Arabic letter mark, Mongolian vowel separator, zero-width and
# direction marks, line/paragraph separators, embeddings and overrides, word joiner and
# invisible operators, isolates, the byte order mark, interlinear annotations, lone
# surrogates (undecodable bytes) and the tag characters
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                     "\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]")


def _escape(m: re.Match) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else
                             f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")


def printable(value, limit: int | None = 300) -> str:
    """``value`` as text for one line of a log or a terminal: control and format
    characters escaped, at most ``limit`` characters of it (None: all) with the length
    said when it is cut."""
    text = value if isinstance(value, str) else str(value)
    if limit is not None and len(text) > limit:
        return _safe(text[:limit]) + f"...({len(text)} characters)"
    return _safe(text)


def _safe(text: str) -> str:
    return text if text.isprintable() else _UNSAFE.sub(_escape, text)

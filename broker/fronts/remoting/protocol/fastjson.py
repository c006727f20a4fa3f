"""JSON bodies as fastjson writes them, and standard JSON out.

fastjson writes a map whose keys are not strings with the keys bare:
``{"brokerAddrs":{0:"127.0.0.1:10911"}}`` (route data), ``{"offsetTable":{1:0}}``
(delay offsets), and even ``{{"brokerName":"b","queueId":0,"topic":"t"}:12}`` when the
key is a MessageQueue. ``loads_fastjson`` reads all of these: a bare key becomes its
text ("0"), an object or array key becomes its compact standard-JSON text. Everything
we write (``dumps_json``) is standard JSON, which fastjson reads back happily.

Cost: standard JSON goes straight to the C parser; only a document that fails it is
tokenised and parsed again in Python, O(n) with a far bigger constant. Bodies, not
per-frame headers, so this stays off the hot path.
"""
from __future__ import annotations

import json
import re

__all__ = ["loads_fastjson", "dumps_json", "dumps_queue_map", "queue_table"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+|\s+|.', re.S)


def dumps_json(obj) -> bytes:
    """Compact standard JSON, UTF-8 (non-ASCII left unescaped, as fastjson does)."""
    return _dumps(obj).encode("utf-8")


def dumps_queue_map(entries) -> str:
    """A Map<MessageQueue, V> as fastjson writes it: ``{{"brokerName":..,"queueId":..,"topic":..}:V}``
    (``entries``: ((topic, broker name, queue id), V) pairs)."""
    parts = []
    for (topic, broker, qid), value in entries:
        key = json.dumps({"brokerName": broker, "queueId": qid, "topic": topic}, separators=(",", ":"),
                         sort_keys=True)
        parts.append(f"{key}:{json.dumps(value, separators=(',', ':'), sort_keys=True)}")
    return "{" + ",".join(parts) + "}"


def queue_table(body: bytes | str | None, field: str = "offsetTable") -> list[tuple[tuple[str, str, int], object]]:
    """A body's MessageQueue-keyed map (TopicStatsTable, ConsumeStats, ResetOffsetBody) as
    ((topic, broker name, queue id), value) pairs, in that order."""
    out = []
    for key, value in ((loads_fastjson(body or b"{}").get(field)) or {}).items():
        mq = json.loads(key)
        out.append(((mq["topic"], mq["brokerName"], int(mq["queueId"])), value))
    return sorted(out, key=lambda kv: kv[0])


def loads_fastjson(text: str | bytes):
    """Parse standard JSON or fastjson's dialect with unquoted / non-string map keys.
    Raises ValueError (json.JSONDecodeError) on anything else."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return _Parser(text).document()
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None


class _Parser:
    __slots__ = ("text", "toks", "i")

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = [(m.group(), m.start()) for m in _TOKEN.finditer(text) if not m.group().isspace()]
        self.i = 0

    def fail(self, msg: str):
        pos = self.toks[self.i][1] if self.i < len(self.toks) else len(self.text)
        raise json.JSONDecodeError(msg, self.text, pos)

    def next(self) -> str:
        if self.i >= len(self.toks):
            self.fail("unexpected end of document")
        tok = self.toks[self.i][0]
        self.i += 1
        return tok

    def document(self):
        value = self.value(self.next())
        if self.i != len(self.toks):
            self.fail("extra data after the document")
        return value

    def value(self, tok: str):
        if tok == "{":
            return self.obj()
        if tok == "[":
            return self.arr()
        if tok in "}]:,":
            self.i -= 1
            self.fail(f"unexpected {tok!r}")
        try:
            return json.loads(tok)  # a string with escapes, a number, true/false/null
        except ValueError:
            self.i -= 1
            self.fail(f"not a JSON value: {tok[:40]!r}")

    def key(self, tok: str) -> str:
        if tok.startswith('"'):
            return self.value(tok)
        if tok in ("{", "["):
            return _dumps(self.value(tok))
        if tok in "}]:,":
            self.i -= 1
            self.fail(f"expected a key, found {tok!r}")
        return tok  # fastjson's bare key: a number's text

    def obj(self) -> dict:
        out = {}
        tok = self.next()
        if tok == "}":
            return out
        while True:
            k = self.key(tok)
            if self.next() != ":":
                self.i -= 1
                self.fail("expected ':'")
            out[k] = self.value(self.next())
            tok = self.next()
            if tok == "}":
                return out
            if tok != ",":
                self.i -= 1
                self.fail("expected ',' or '}'")
            tok = self.next()

    def arr(self) -> list:
        out = []
        tok = self.next()
        if tok == "]":
            return out
        while True:
            out.append(self.value(tok))
            tok = self.next()
            if tok == "]":
                return out
            if tok != ",":
                self.i -= 1
                self.fail("expected ',' or ']'")
            tok = self.next()

"""Hypothesis strategies for hostile input: numbers at and past the edges of their fields,
names a terminal or a log must not take raw, and protobuf messages of any descriptor with
every field drawn that way (the Pulsar commands and the 5.x requests are both protobuf)."""
from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor as F
from hypothesis import strategies as st

__all__ = ["edge_ints", "hostile_text", "number_text", "protobuf_message"]

# 2^n - 1, 2^n and their negatives for the widths a wire field has, plus small values.
_EDGES = sorted({sign * (2 ** bits + delta) for bits in (7, 8, 15, 16, 31, 32, 53, 63, 64)
                 for delta in (-1, 0) for sign in (1, -1)} | {0, 1, 2, 3, 16, 17, 18, 1024, 1025})


def edge_ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers in [lo, hi], mostly the edges of common field widths."""
    edges = [v for v in _EDGES if lo <= v <= hi] + [lo, hi]
    return st.sampled_from(edges) | st.integers(lo, hi)


# Control characters, ESC sequences, bidi overrides, separators the store uses, path
# tricks and long strings: what reaches a printer or a file name must be escaped or refused.
_NASTY = ["", " ", "..", ".", "/", "a/../b", "\x1b[31mred\x1b[0m", "line\nforged", "\r", "\x00", "\u202eevil",
          "%RETRY%g", "%DLQ%g", "pulsar|public|default|t", "TBW102", "SCHEDULE_TOPIC_XXXX", "<script>", "'\"",
          "x" * 128, "x" * 256, "y" * 10_000, "😀", "\udcff"[:0] + "\ufeff", "persistent://public/default/t",
          "non-persistent://a/b/c", "-1", "9" * 40, "1e300", "NaN", "true", "null"]


def hostile_text(max_size: int = 40) -> st.SearchStrategy[str]:
    return st.sampled_from(_NASTY) | st.text(st.characters(exclude_categories=("Cs",)), max_size=max_size)


def number_text() -> st.SearchStrategy[str]:
    """What a client may put where a number belongs: numbers past every width, signs,
    floats, spaces, and words."""
    return (edge_ints(-(2 ** 65), 2 ** 65).map(str) | st.sampled_from(["9" * 5000, " 1", "1 ", "0x10", "1.5", "", "-",
                                                                         "+1", "١٢", "1_000"]))


_INT_RANGES = {
    F.TYPE_INT32: (-(2 ** 31), 2 ** 31 - 1), F.TYPE_SINT32: (-(2 ** 31), 2 ** 31 - 1),
    F.TYPE_SFIXED32: (-(2 ** 31), 2 ** 31 - 1), F.TYPE_UINT32: (0, 2 ** 32 - 1), F.TYPE_FIXED32: (0, 2 ** 32 - 1),
    F.TYPE_INT64: (-(2 ** 63), 2 ** 63 - 1), F.TYPE_SINT64: (-(2 ** 63), 2 ** 63 - 1),
    F.TYPE_SFIXED64: (-(2 ** 63), 2 ** 63 - 1), F.TYPE_UINT64: (0, 2 ** 64 - 1), F.TYPE_FIXED64: (0, 2 ** 64 - 1),
}


def _scalar(field) -> st.SearchStrategy:
    t = field.type
    if t in _INT_RANGES:
        return edge_ints(*_INT_RANGES[t])
    if t == F.TYPE_BOOL:
        return st.booleans()
    if t in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return st.floats(allow_nan=True, allow_infinity=True, width=64 if t == F.TYPE_DOUBLE else 32)
    if t == F.TYPE_STRING:
        return hostile_text()
    if t == F.TYPE_BYTES:
        return st.binary(max_size=64)
    if t == F.TYPE_ENUM:
        # known values mostly; an unknown number now and then (proto3 keeps it, proto2 parses it as unknown)
        known = [v.number for v in field.enum_type.values]
        return st.sampled_from(known) | st.integers(-1, 200)
    raise AssertionError(f"no strategy for field type {t}")


def protobuf_message(cls, depth: int = 3, only: set[str] | None = None,
                     hints: dict[str, st.SearchStrategy] | None = None) -> st.SearchStrategy:
    """A ``cls`` instance with a drawn subset of its fields set to drawn values;
    ``only`` restricts the top-level fields drawn (e.g. one oneof case); ``hints`` draws a
    scalar field of that name, at any depth, from its own strategy (a topic from a few
    real names, so that drawn commands meet each other's state)."""
    return _message(cls.DESCRIPTOR, cls, depth, only, hints or {})


@st.composite
def _message(draw, descriptor, cls, depth, only, hints):
    msg = cls()
    fields = [f for f in descriptor.fields if only is None or f.name in only]
    # a hinted field is set more often than not: hints name what ties inputs together
    hinted = [f for f in fields if f.name in hints and draw(st.integers(0, 3)) > 0]
    drawn = draw(st.lists(st.sampled_from(fields), unique_by=lambda f: f.name, max_size=len(fields))
                 if fields else st.just([]))
    for field in hinted + [f for f in drawn if f not in hinted]:
        if field.type == F.TYPE_MESSAGE:
            if depth <= 0:
                continue
            sub_cls = type(getattr(msg, field.name)) if not _repeated(field) else None
            if field.message_type.GetOptions().map_entry:
                key = _scalar(field.message_type.fields_by_name["key"])
                value_field = field.message_type.fields_by_name["value"]
                if value_field.type == F.TYPE_MESSAGE:
                    continue
                entries = draw(st.dictionaries(key, _scalar(value_field), max_size=3))
                for k, v in entries.items():
                    _try(lambda: getattr(msg, field.name).__setitem__(k, v))
            elif _repeated(field):
                container = getattr(msg, field.name)
                for _ in range(draw(st.integers(0, 2))):
                    item = container.add()
                    item.CopyFrom(draw(_message(field.message_type, type(item), depth - 1, None, hints)))
            else:
                getattr(msg, field.name).CopyFrom(draw(_message(field.message_type, sub_cls, depth - 1, None, hints)))
        elif _repeated(field):
            values = draw(st.lists(hints.get(field.name, _scalar(field)), max_size=3))
            for v in values:
                _try(lambda: getattr(msg, field.name).append(v))
        else:
            value = draw(hints.get(field.name, _scalar(field)))
            _try(lambda: setattr(msg, field.name, value))
    return msg


def _repeated(field) -> bool:
    return field.is_repeated


def _try(assign) -> None:
    # protobuf refuses some drawn values itself (an unknown number for a closed proto2
    # enum): those never reach the wire from any client, so they are not drawn
    try:
        assign()
    except (ValueError, TypeError):
        pass

"""A JSON value read into a Java field the way fastjson reads it (the Java broker's
parser for every 4.x body): the rule is to take at least what the Java broker takes.

  String   a string; a number or boolean as its text; an object or array as its JSON
           text; null stays null
  int/long a number (a fraction is cut off, as BigDecimal.intValue does); digits in a
           string ("12", "-3", "1.0"); true/false as 1/0; null or "" leaves Java's
           default (0 for a primitive)
  boolean  true/false; a number (1 is true, any other false); "true"/"false" in any
           case, "1"/"0", "Y"/"T"/"N"/"F"; null or "" leaves the default
  enum     its name, or its ordinal (declaration order); a name fastjson does not know
           reads as null (the default here); an ordinal out of range, a fraction, a
           boolean, an object or an array is refused

Everything else is refused with FieldError, whose message names the field and shows
the value, as the reply's remark. Unknown fields are never looked at.
"""
from __future__ import annotations

import json

__all__ = ["FieldError", "java_string", "java_int", "java_long", "java_bool", "java_enum", "as_java_long",
           "as_uint64",
           "CONSUME_TYPES", "MESSAGE_MODELS", "CONSUME_FROM_WHERE"]

# Declaration order of the Java enums: an ordinal is an index here.
CONSUME_TYPES = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP")
MESSAGE_MODELS = ("BROADCASTING", "CLUSTERING")
CONSUME_FROM_WHERE = ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
                      "CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET", "CONSUME_FROM_FIRST_OFFSET",
                      "CONSUME_FROM_TIMESTAMP")

_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_TRUE = frozenset({"true", "1", "y", "t"})
_FALSE = frozenset({"false", "0", "n", "f"})


class FieldError(ValueError):
    """A value fastjson would not read into its field: ``<name> must be X, got V``."""

    def __init__(self, name: str, expected: str, got) -> None:
        try:
            shown = json.dumps(got, default=str)
        except ValueError:
            shown = repr(got)
        shown = shown if len(shown) <= 60 else shown[:60] + "..."
        super().__init__(f"<{name}> must be {expected}, got {shown}")
        self.field = name


def java_string(value, name: str) -> str | None:
    cls = value.__class__
    if cls is str or value is None:
        return value
    if cls is bool:
        return "true" if value else "false"
    if cls in (int, float):
        return _compact(value)
    if cls in (dict, list):
        return _compact(value)
    raise FieldError(name, "a string", value)


def java_int(value, name: str, default: int = 0, *, bits: int = 32) -> int:
    cls = value.__class__
    if cls is int:
        number = value
    elif value is None:
        return default
    elif cls is bool:
        return int(value)
    elif cls is float or cls is str:
        text = value.strip() if cls is str else repr(value)
        if text in ("", "null", "NULL"):
            return default
        try:
            number = int(text) if cls is str and text.lstrip("+-").isdigit() else _decimal_int(text)
        except (ValueError, OverflowError):
            raise FieldError(name, "an integer", value) from None
    else:
        raise FieldError(name, "an integer", value)
    limit = 1 << (bits - 1)
    if not -limit <= number < limit:
        raise FieldError(name, f"an integer of {bits} bits", value)
    return number


def _decimal_int(text: str) -> int:
    """``text`` as BigDecimal reads it, cut to an integer (ValueError, or OverflowError for
    an infinity, when it is no number). decimal is imported here, at the first number
    that is not plain digits: importing it costs every start a millisecond."""
    from decimal import Decimal, InvalidOperation
    try:
        return int(Decimal(text))
    except InvalidOperation:
        raise ValueError(f"not a number: {text!r}") from None


def java_long(value, name: str, default: int = 0) -> int:
    return java_int(value, name, default, bits=64)


def as_java_long(n: int) -> int:
    """``n`` as a Java long holds it: its low 64 bits, two's complement. A protobuf uint64
    read by a Java broker (2^64-1 is -1), and Java's long arithmetic (Long.MAX_VALUE + 1
    is Long.MIN_VALUE), so a number kept here never outgrows the field it goes back in."""
    return ((n + _LONG_BIAS) & _LOW_64) - _LONG_BIAS


def as_uint64(n: int) -> int:
    """A Java long (or int) written into a protobuf uint64, as protobuf-java writes it:
    -1 is 2^64-1."""
    return n & _LOW_64


_LOW_64 = (1 << 64) - 1
_LONG_BIAS = 1 << 63


def java_bool(value, name: str, default: bool = False) -> bool:
    cls = value.__class__
    if cls is bool:
        return value
    if value is None:
        return default
    if cls is int or cls is float:
        return value == 1
    if cls is str:
        text = value.strip().lower()
        if text in ("", "null"):
            return default
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise FieldError(name, "true or false", value)


def java_enum(value, name: str, names: tuple[str, ...], default: str) -> str:
    """The enum constant's name: by name, or by ordinal (an index of ``names``)."""
    cls = value.__class__
    if cls is str:
        return value if value in names else default      # fastjson: an unknown name is null
    if value is None:
        return default
    if cls is int and 0 <= value < len(names):
        return names[value]
    raise FieldError(name, f"one of {', '.join(names)} or its ordinal 0..{len(names) - 1}", value)

"""SQL92 property filters (4.x ``MessageSelector.bySql``, 5.x ``FilterType.SQL``): the
selector grammar and evaluation of upstream's filter module (an ActiveMQ selector
without LIKE and arithmetic), so that a subscription takes the messages the real broker
would deliver it.

``compile_sql(text)`` -> ``SqlFilter`` (cached: a subscription is compiled once, not per
pull) or ``SqlFilterError`` with one readable line; ``SqlFilter.matches(properties)``
says whether a message (its property map, TAGS among them) is delivered.

What upstream does, and so this does:
- Keywords are case-insensitive (AND OR NOT BETWEEN IN IS NULL TRUE FALSE CONTAINS
  STARTSWITH ENDSWITH); a property is ``[a-zA-Z_$][a-zA-Z0-9_$]*``, looked up as written.
  Literals: 'text' ('' is a quote), integers (a Java int, else a long; ``L`` suffix),
  doubles (``1.5``, ``.5``, ``5.``, ``1E3``), TRUE, FALSE, NULL. ``--`` and ``/* */``
  comments.
- Three-valued logic: a missing property is NULL; a comparison with NULL is unknown
  and unknown is not delivered (NOT unknown is unknown). ``a IS NULL`` is true when
  ``a`` is missing.
- Every property value is a string. Compared with a number it is read as that number's
  Java type (Integer.valueOf, Long.valueOf, Double.valueOf); two properties compared
  by ``<`` and friends are read as doubles; a value that does not read as the number,
  like any evaluation error upstream, means the message is not delivered.
- NOT binds tighter than a comparison: ``NOT a = 'x'`` is ``(NOT a) = 'x'``, which is
  never true — write ``NOT (a = 'x')``. A bare property is a boolean only if it is the
  Java Boolean TRUE, so a string property alone is false.
- Refused when compiled, as upstream's parser refuses them: a string, boolean or NULL
  in ``<``/``>``/BETWEEN, ``= NULL``, IN on anything but a property, a BETWEEN whose
  constant bounds are reversed, an integer beyond a Java long, a double literal that is
  infinite or 0 (upstream's "less than Double.MIN_VALUE").
- Upstream quirks kept because a real broker has them: ``'x' = a`` with ``a`` missing is
  false (``a = 'x'`` is unknown), so ``'x' <> a`` is true; CONTAINS / STARTSWITH /
  ENDSWITH and their NOT forms are false (not unknown) for a missing property.
"""
from __future__ import annotations

import math
import re
import struct
from collections import OrderedDict
from typing import Callable, Mapping

from ..log_text import printable

__all__ = ["SqlFilter", "SqlFilterError", "compile_sql", "SQL92", "is_tag_type"]

SQL92 = "SQL92"


def is_tag_type(expression_type: str | None) -> bool:
    """ExpressionType.isTagType: no type, "" and "TAG" filter by tag."""
    return not expression_type or expression_type == "TAG"


class SqlFilterError(ValueError):
    """An expression the broker refuses to compile; the message is one line."""


class _EvalError(Exception):
    """An evaluation upstream ends with an exception: the message is not delivered."""


class JavaLong(int):
    """An integer literal out of Java int range: a Long (strings compared with it are
    read by Long.valueOf, not Integer.valueOf)."""

    __slots__ = ()


# -- Java's conversions of a property string -------------------------------------------------
_INT_TEXT = re.compile(r"[+-]?\d+")
_DOUBLE_TEXT = re.compile(r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?)", re.ASCII)
_HEX_DOUBLE_TEXT = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?",
                              re.ASCII)
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)


def _java_integer(text: str, bounds) -> int:
    """Integer.valueOf / Long.valueOf: a sign and decimal digits, nothing else."""
    if not _INT_TEXT.fullmatch(text):
        raise _EvalError(f"For input string: {text!r}")
    value = int(text)
    if not bounds[0] <= value <= bounds[1]:
        raise _EvalError(f"out of range: {text!r}")
    return value


def _java_double(text: str) -> float:
    """Double.valueOf: surrounding control and space characters trimmed; decimal or hex
    notation, NaN, Infinity, an optional f/d suffix."""
    t = text.strip("".join(chr(c) for c in range(33)))
    if _DOUBLE_TEXT.fullmatch(t):
        t = t.rstrip("fFdD") if not t.endswith("Infinity") else t
        return float(t.replace("Infinity", "inf"))
    if _HEX_DOUBLE_TEXT.fullmatch(t):
        return float.fromhex(t.rstrip("fFdD"))
    raise _EvalError(f"For input string: {text!r}")


def _double_key(x: float) -> int:
    """Double.compare's order: -0.0 < 0.0, NaN above everything and equal to itself."""
    if x != x:
        return 0x7ff8000000000000
    bits = struct.unpack(">q", struct.pack(">d", x))[0]
    return bits if bits >= 0 else bits ^ 0x7fffffffffffffff


def _cmp_same(a, b) -> int:
    if a.__class__ is float:
        a, b = _double_key(a), _double_key(b)
    return (a > b) - (a < b)


# ComparisonExpression.__compare with its string conversions on: the class order matters
# (a Boolean constant on the left of a string is a ClassCastException upstream).
def _compare(lv, rv) -> int:
    lc, rc = _jclass(lv), _jclass(rv)
    if lc != rc:
        if lc == "B":
            if rc != "S":
                return -1
            raise _EvalError("Boolean cannot be cast to String")
        if lc in "IL":
            if rc in "IL":
                pass
            elif rc == "D":
                lv = float(lv)
            elif rc == "S":
                rv = _java_integer(rv, _INT_RANGE if lc == "I" else _LONG_RANGE)
            else:
                return -1
        elif lc == "D":
            if rc in "IL":
                rv = float(rv)
            elif rc == "S":
                rv = _java_double(rv)
            else:
                return -1
        else:                       # a string against a boolean or a number
            if rc == "B":
                lv = lv.lower() == "true"
            elif rc == "D":
                lv = _java_double(lv)
            else:
                lv = _java_integer(lv, _INT_RANGE if rc == "I" else _LONG_RANGE)
    return _cmp_same(lv, rv)


def _jclass(v) -> str:
    c = v.__class__
    if c is str:
        return "S"
    if c is bool:
        return "B"
    if c is float:
        return "D"
    return "L" if c is JavaLong else "I"


# -- the compiled expression ---------------------------------------------------------------
_NOT_CONSTANT = object()


class _Node:
    """A compiled sub-expression: ``ev(props)`` its value (None = NULL/unknown); what the
    parser needs to know of it for upstream's compile-time checks."""

    __slots__ = ("ev", "kind", "const", "depth")

    def __init__(self, ev: Callable, kind: str, *children: "_Node", const=_NOT_CONSTANT) -> None:
        self.ev = ev
        self.kind = kind        # "bool" (a BooleanExpression), "const", "prop", "value"
        self.const = const      # a literal's value (_NOT_CONSTANT for anything else)
        self.depth = 1 + max((c.depth for c in children), default=0)
        if self.depth > _MAX_DEPTH:
            raise SqlFilterError(f"the expression is nested more than {_MAX_DEPTH} deep")


# (evaluation recurses once per level: this keeps it well inside Python's stack)
_MAX_DEPTH = 200


def _constant(value) -> _Node:
    """A literal: TRUE, FALSE and NULL are boolean expressions upstream, the rest not."""
    kind = "bool" if value is None or value.__class__ is bool else "const"
    return _Node(lambda p: value, kind, const=value)


def _variable(name: str) -> _Node:
    return _Node(lambda p: p.get(name), "prop")


class SqlFilter:
    """A compiled selector. ``matches(properties)`` is True only when the expression
    evaluates to TRUE (not FALSE, not unknown, not an evaluation error)."""

    __slots__ = ("expression", "_ev")

    def __init__(self, expression: str, ev: Callable) -> None:
        self.expression = expression
        self._ev = ev

    def matches(self, properties: Mapping[str, str]) -> bool:
        try:
            return self._ev(properties) is True
        except _EvalError:
            return False

    def __repr__(self) -> str:
        return f"SqlFilter({self.expression!r})"


# -- tokens ----------------------------------------------------------------------------------
_KEYWORDS = {"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS", "STARTSWITH",
             "ENDSWITH"}
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\n\r\f]+|--[^\n\r]*(?:\n|\r\n?)|/\*[^*]*\*+(?:[^*/][^*]*\*+)*/)
  | (?P<float>(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<int>(?:0|[1-9][0-9]*)[lL]?)
  | (?P<string>'(?:''|[^'])*')
  | (?P<id>[a-zA-Z_$][a-zA-Z0-9_$]*)
  | (?P<op><>|<=|>=|[=<>(),+-])
""", re.VERBOSE)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SqlFilterError(f"unexpected character {text[pos]!r} at column {pos + 1}")
        kind = m.lastgroup
        if kind != "ws":
            value = m.group()
            if kind == "id" and value.upper() in _KEYWORDS:
                kind, value = "kw", value.upper()
            out.append((kind, value, pos + 1))
        pos = m.end()
    out.append(("end", "", len(text) + 1))
    return out


# -- the parser (upstream's grammar, rule for rule) ------------------------------------------
class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> tuple[str, str, int]:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def at(self, value: str, ahead: int = 0) -> bool:
        kind, v, _ = self.peek(ahead)
        return v == value and kind in ("kw", "op")

    def take(self, value: str) -> None:
        if not self.at(value):
            self.fail(f"expected {value}")
        self.i += 1

    def fail(self, what: str):
        kind, value, col = self.peek()
        found = "the end" if kind == "end" else repr(value)
        raise SqlFilterError(f"{what}, found {found} at column {col}")

    # selector := or <end>
    def selector(self) -> _Node:
        node = self.or_expr()
        if self.peek()[0] != "end":
            self.fail("expected AND, OR or the end")
        return _boolean(node)

    def or_expr(self) -> _Node:
        left = self.and_expr()
        while self.at("OR"):
            self.i += 1
            left = _or(_boolean(left), _boolean(self.and_expr()))
        return left

    def and_expr(self) -> _Node:
        left = self.equality()
        while self.at("AND"):
            self.i += 1
            left = _and(_boolean(left), _boolean(self.equality()))
        return left

    def equality(self) -> _Node:
        left = self.comparison()
        while True:
            if self.at("="):
                self.i += 1
                left = _equal(left, self.comparison(), checked=True)
            elif self.at("<>"):
                self.i += 1
                left = _not(_equal(left, self.comparison(), checked=True))
            elif self.at("IS") and self.at("NULL", 1):
                self.i += 2
                left = _equal(left, _constant(None), checked=False)
            elif self.at("IS"):
                self.i += 1
                self.take("NOT")
                self.take("NULL")
                left = _not(_equal(left, _constant(None), checked=False))
            else:
                return left

    def comparison(self) -> _Node:
        left = self.unary()
        while True:
            negated = self.at("NOT") and self.peek(1)[1] in ("CONTAINS", "STARTSWITH", "ENDSWITH", "BETWEEN", "IN")
            op = self.peek(1 if negated else 0)
            if op[0] == "op" and op[1] in _ORDER:
                self.i += 1
                left = _order(op[1], left, self.unary())
            elif op[0] == "kw" and op[1] in _STRING_TESTS:
                self.i += 2 if negated else 1
                left = _string_test(op[1], negated, left, self.string())
            elif op[0] == "kw" and op[1] == "BETWEEN":
                self.i += 2 if negated else 1
                low = self.unary()
                self.take("AND")
                left = _between(left, low, self.unary(), negated)
            elif op[0] == "kw" and op[1] == "IN":
                self.i += 2 if negated else 1
                self.take("(")
                items = [self.string()]
                while self.at(","):
                    self.i += 1
                    items.append(self.string())
                self.take(")")
                left = _in(left, items, negated)
            else:
                return left

    def unary(self) -> _Node:
        if self.at("+"):
            self.i += 1
            return self.unary()
        if self.at("-"):
            self.i += 1
            return _negate(self.unary())
        if self.at("NOT"):
            self.i += 1
            return _not(_boolean(self.unary()))
        return self.primary()

    def primary(self) -> _Node:
        kind, value, col = self.peek()
        if kind == "string":
            self.i += 1
            return _constant(_unquote(value))
        if kind == "int":
            self.i += 1
            return _constant(_integer_literal(value))
        if kind == "float":
            self.i += 1
            return _constant(_double_literal(value))
        if kind == "kw" and value in ("TRUE", "FALSE", "NULL"):
            self.i += 1
            return _constant({"TRUE": True, "FALSE": False, "NULL": None}[value])
        if kind == "id":
            self.i += 1
            return _variable(value)
        if self.at("("):
            self.i += 1
            node = self.or_expr()
            self.take(")")
            return node
        self.fail("expected a property, a literal or (")

    def string(self) -> str:
        kind, value, _ = self.peek()
        if kind != "string":
            self.fail("expected a quoted string")
        self.i += 1
        return _unquote(value)


def _unquote(token: str) -> str:
    return token[1:-1].replace("''", "'")


def _integer_literal(text: str) -> int:
    digits = text.rstrip("lL")
    value = int(digits)
    if value > _LONG_RANGE[1]:
        raise SqlFilterError(f"{text} is out of the range of a long")
    return value if value <= _INT_RANGE[1] else JavaLong(value)


def _double_literal(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise SqlFilterError(f"{text} is greater than 1.7976931348623157E308")
    if value < 5e-324:
        raise SqlFilterError(f"{text} is less than 4.9E-324 (the broker refuses a double literal of 0)")
    return value


# -- node builders with upstream's compile-time checks -----------------------------------------
def _boolean(node: _Node) -> _Node:
    """asBooleanExpression: a boolean expression as it is, a property cast (TRUE only if
    its value is the Boolean TRUE: a string never is), anything else refused."""
    if node.kind == "bool":
        return node
    if node.kind == "prop":
        ev = node.ev

        def cast(p):
            v = ev(p)
            return None if v is None else (v is True)
        return _Node(cast, "bool", node)
    raise SqlFilterError(f"{_shown(node)} is not a boolean expression")


def _shown(node: _Node) -> str:
    if not _is_constant(node):
        return "the value"
    v = node.const
    if v is None or v.__class__ is bool:
        return {None: "NULL", True: "TRUE", False: "FALSE"}[v]
    if v.__class__ is str:          # (the client's text: escaped, cut, one line)
        return "'" + printable(v.replace("'", "''"), 60) + "'"
    return str(int(v) if v.__class__ is JavaLong else v)


def _logic(decides: bool, left: _Node, right: _Node) -> _Node:
    """OR (``decides`` True) and AND (False), Kleene's: a side equal to ``decides``
    decides (the right one is not evaluated then); else unknown if a side is unknown."""
    lf, rf = left.ev, right.ev

    def ev(p):
        lv = lf(p)
        if lv is decides:
            return decides
        rv = rf(p)
        if rv is decides:
            return decides
        return None if lv is None or rv is None else not decides
    return _Node(ev, "bool", left, right)


def _or(left: _Node, right: _Node) -> _Node:
    return _logic(True, left, right)


def _and(left: _Node, right: _Node) -> _Node:
    return _logic(False, left, right)


def _not(node: _Node) -> _Node:
    f = node.ev

    def ev(p):
        v = f(p)
        return None if v is None else not v
    return _Node(ev, "bool", node)


def _equal(left: _Node, right: _Node, checked: bool) -> _Node:
    if checked:
        for side in (left, right):
            if side.kind == "bool" and side.const is None and _is_constant(side):
                raise SqlFilterError("NULL cannot be compared with =; write IS NULL")
        if _is_constant(left) and _is_constant(right) and left.kind == "bool" and right.kind != "bool":
            raise SqlFilterError(f"{_shown(left)} cannot be compared with {_shown(right)}")
    lf, rf = left.ev, right.ev

    def ev(p):
        lv, rv = lf(p), rf(p)
        if lv is None or rv is None:
            if lv is None and rv is None:
                return True
            return None if lv is None else False
        return _compare(lv, rv) == 0
    return _Node(ev, "bool", left, right)


def _is_constant(node: _Node) -> bool:
    return node.const is not _NOT_CONSTANT


_ORDER = {">": lambda c: c > 0, ">=": lambda c: c >= 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0}


def _check_orderable(node: _Node) -> None:
    """checkLessThanOperand: a constant must be a number; no boolean expression."""
    if _is_constant(node):
        v = node.const
        if v is None or v.__class__ in (str, bool):
            raise SqlFilterError(f"{_shown(node)} cannot be compared by <, >, <=, >= or BETWEEN")
    elif node.kind == "bool":
        raise SqlFilterError("a boolean expression cannot be compared by <, >, <=, >= or BETWEEN")


def _order(op: str, left: _Node, right: _Node) -> _Node:
    _check_orderable(left)
    _check_orderable(right)
    lf, rf, test = left.ev, right.ev, _ORDER[op]

    def ev(p):
        lv = lf(p)
        if lv is None:
            return None
        rv = rf(p)
        if rv is None:
            return None
        if lv.__class__ is str and rv.__class__ is str:
            lv, rv = _java_double(lv), _java_double(rv)
        return test(_compare(lv, rv))
    return _Node(ev, "bool", left, right)


def _between(value: _Node, low: _Node, high: _Node, negated: bool) -> _Node:
    if _is_constant(low) and _is_constant(high):
        lo, hi = low.const, high.const
        if lo is None or hi is None:
            raise SqlFilterError("the bounds of BETWEEN cannot be NULL")
        try:
            reversed_bounds = _compare(hi, lo) < 0
        except _EvalError:
            raise SqlFilterError(f"the bounds of BETWEEN cannot be compared: {_shown(low)} and {_shown(high)}") \
                from None
        if reversed_bounds:
            raise SqlFilterError(f"the lower bound of BETWEEN ({_shown(low)}) is greater than the upper "
                                 f"({_shown(high)})")
    if negated:
        return _or(_order("<", value, low), _order(">", value, high))
    return _and(_order(">=", value, low), _order("<=", value, high))


_STRING_TESTS = {"CONTAINS": str.__contains__, "STARTSWITH": str.startswith, "ENDSWITH": str.endswith}


def _string_test(op: str, negated: bool, left: _Node, search: str) -> _Node:
    f, test = left.ev, _STRING_TESTS[op]

    def ev(p):
        v = f(p)
        if not search or v is None or v.__class__ is not str:
            return False
        return test(v, search) is not negated
    return _Node(ev, "bool", left)


def _in(left: _Node, items: list[str], negated: bool) -> _Node:
    if left.kind != "prop":
        raise SqlFilterError("IN applies to a property only")
    f, members = left.ev, frozenset(items)

    def ev(p):
        v = f(p)
        if v is None or v.__class__ is not str:
            return None
        return (v in members) is not negated
    return _Node(ev, "bool", left)


def _negate(node: _Node) -> _Node:
    f = node.ev

    def ev(p):
        v = f(p)
        if v is None or v.__class__ in (str, bool):
            return None
        return v.__class__(-v) if v.__class__ is JavaLong else -v
    return _Node(ev, "value", node)


# -- compile, cached ---------------------------------------------------------------------------
_CACHE: OrderedDict[str, SqlFilter | SqlFilterError] = OrderedDict()
_CACHE_SIZE = 256


def compile_sql(text: str | None) -> SqlFilter:
    """The compiled selector of ``text``, or SqlFilterError naming what is wrong and
    where ("Invalid MessageSelector. ..."). Compiled once per distinct text (an LRU of
    256, as upstream keeps a cache of parses)."""
    if text is None or not text.strip():
        raise SqlFilterError("Expression can't be null! SQL92")
    hit = _CACHE.get(text)
    if hit is None:
        try:
            hit = SqlFilter(text, _Parser(text).selector().ev)
        except SqlFilterError as exc:
            hit = SqlFilterError(f"Invalid MessageSelector. {exc}")
        except RecursionError:
            hit = SqlFilterError("Invalid MessageSelector. the expression is nested too deeply")
        _CACHE[text] = hit
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(text)
    if hit.__class__ is SqlFilterError:
        raise SqlFilterError(str(hit))
    return hit

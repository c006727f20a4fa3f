"""A reference for SQL92 selectors, written apart from broker/rocketmq_model/sql_filter.py:
expression trees (drawn by hypothesis) rendered as selector text, and their value by
upstream's rules read straight off the tree — no tokens, no parser, no shared helper.

Values: None is NULL/unknown; ``Raise`` stands for an evaluation that throws upstream
(the message is then not delivered). Each property value is a string."""
from __future__ import annotations

import re
from dataclasses import dataclass

from hypothesis import strategies as st


class Raise(Exception):
    pass


# -- the tree ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prop:
    name: str


@dataclass(frozen=True)
class Lit:
    value: object          # int (a Java int), float (a positive double), str


@dataclass(frozen=True)
class Cmp:                 # left op right, op in = <> < <= > >=
    op: str
    left: object
    right: object


@dataclass(frozen=True)
class Between:
    prop: Prop
    low: int
    high: int
    negated: bool


@dataclass(frozen=True)
class In:
    prop: Prop
    items: tuple
    negated: bool


@dataclass(frozen=True)
class IsNull:
    prop: Prop
    negated: bool


@dataclass(frozen=True)
class Contains:
    prop: Prop
    text: str
    negated: bool


@dataclass(frozen=True)
class Logic:
    op: str                # AND / OR
    left: object
    right: object


@dataclass(frozen=True)
class Not:
    inner: object


@dataclass(frozen=True)
class Const:
    value: bool


def render(node) -> str:
    if isinstance(node, Prop):
        return node.name
    if isinstance(node, Lit):
        v = node.value
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        return repr(v)
    if isinstance(node, Cmp):
        return f"{render(node.left)} {node.op} {render(node.right)}"
    if isinstance(node, Between):
        return f"{node.prop.name} {'NOT ' if node.negated else ''}BETWEEN {node.low} AND {node.high}"
    if isinstance(node, In):
        items = ", ".join("'" + i.replace("'", "''") + "'" for i in node.items)
        return f"{node.prop.name} {'NOT ' if node.negated else ''}IN ({items})"
    if isinstance(node, IsNull):
        return f"{node.prop.name} IS {'NOT ' if node.negated else ''}NULL"
    if isinstance(node, Contains):
        return f"{node.prop.name} {'NOT ' if node.negated else ''}CONTAINS '{node.text}'"
    if isinstance(node, Logic):
        return f"({render(node.left)}) {node.op} ({render(node.right)})"
    if isinstance(node, Not):
        return f"NOT ({render(node.inner)})"
    return "TRUE" if node.value else "FALSE"


# -- upstream's rules, read off the tree --------------------------------------------------------
def _as_int(text: str) -> int:
    """Integer.valueOf."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise Raise()
    n = int(text)
    if not -2**31 <= n < 2**31:
        raise Raise()
    return n


def _as_double(text: str) -> float:
    """Double.valueOf for the values drawn here (whitespace around is allowed)."""
    t = text.strip()
    if t in ("NaN", "+NaN", "-NaN"):
        return float("nan")
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", t):
        raise Raise()
    return float(t)


def _order(a: float, b: float) -> int:
    """Double.compare: NaN above all, equal to itself."""
    if a != a or b != b:
        return (a != a) - (b != b)
    return (a > b) - (a < b)


def _compare_text_and_literal(text: str, lit) -> int:
    if isinstance(lit, bool):
        return _order(float(text.lower() == "true"), float(lit))
    if isinstance(lit, int):
        return _order(_as_int(text), lit)
    return _order(_as_double(text), lit)


_TESTS = {"=": lambda c: c == 0, "<>": lambda c: c != 0, "<": lambda c: c < 0, "<=": lambda c: c <= 0,
          ">": lambda c: c > 0, ">=": lambda c: c >= 0}


def value(node, props: dict):
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Cmp):
        return _comparison(node, props)
    if isinstance(node, Between):
        lo, hi = Cmp(">=", node.prop, Lit(node.low)), Cmp("<=", node.prop, Lit(node.high))
        if node.negated:
            return value(Logic("OR", Cmp("<", node.prop, Lit(node.low)), Cmp(">", node.prop, Lit(node.high))),
                         props)
        return value(Logic("AND", lo, hi), props)
    if isinstance(node, In):
        v = props.get(node.prop.name)
        return None if v is None else (v in node.items) != node.negated
    if isinstance(node, IsNull):
        return (props.get(node.prop.name) is None) != node.negated
    if isinstance(node, Contains):
        v = props.get(node.prop.name)
        if v is None:
            return False
        return (node.text in v) != node.negated
    if isinstance(node, Not):
        v = value(node.inner, props)
        return None if v is None else not v
    # AND / OR: Kleene logic, the right side unread when the left decides
    left = value(node.left, props)
    if node.op == "AND":
        if left is False:
            return False
        right = value(node.right, props)
        if right is False:
            return False
        return None if left is None or right is None else True
    if left is True:
        return True
    right = value(node.right, props)
    if right is True:
        return True
    return None if left is None or right is None else False


def _comparison(node: Cmp, props: dict):
    op, left, right = node.op, node.left, node.right
    if isinstance(left, Prop) and isinstance(right, Prop):         # two properties: < and > read doubles
        a, b = props.get(left.name), props.get(right.name)
        if a is None or b is None:
            if op in ("=", "<>") and a is None and b is None:
                return op == "="
            if op in ("=", "<>") and a is not None:
                return op == "<>"               # equality: NULL on the right only is FALSE, so <> is TRUE
            return None
        if op in ("=", "<>"):
            return (a == b) == (op == "=")
        return _TESTS[op](_order(_as_double(a), _as_double(b)))
    if isinstance(left, Prop):
        text = props.get(left.name)
        if text is None:
            return None
        if isinstance(right.value, str):        # only = and <> are drawn with a string
            return (text == right.value) == (op == "=")
        return _TESTS[op](_compare_text_and_literal(text, right.value))
    # a literal on the left
    text = props.get(right.name)
    if text is None:
        if op in ("=", "<>"):
            return op == "<>"                   # upstream: a missing right side makes = FALSE
        return None
    if isinstance(left.value, str):
        return (text == left.value) == (op == "=")
    return _TESTS[op](-_compare_text_and_literal(text, left.value))


def delivered(node, props: dict) -> bool:
    try:
        return value(node, props) is True
    except Raise:
        return False


# -- strategies -------------------------------------------------------------------------------
NAMES = ("a", "b", "region")
TEXTS = ("0", "7", "-3", "42", "2147483648", "1.5", " 5", "NaN", "1e3", "abc", "eu", "us", "", "true")

props_strategy = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(TEXTS), max_size=len(NAMES))
_prop = st.sampled_from(NAMES).map(Prop)
_number = st.one_of(st.integers(-50, 50), st.sampled_from([0.5, 1.5, 7.25, 1e3]))
_word = st.sampled_from(["eu", "us", "abc", "", "it's"])


def _comparisons():
    numeric = st.tuples(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), _prop, _number.map(Lit))
    textual = st.tuples(st.sampled_from(["=", "<>"]), _prop, _word.map(Lit))
    both_props = st.tuples(st.sampled_from(["=", "<>", "<", ">="]), _prop, _prop)
    return st.one_of(
        numeric.map(lambda t: Cmp(*t)),
        textual.map(lambda t: Cmp(*t)),
        st.tuples(numeric, st.booleans()).map(lambda t: Cmp(t[0][0], t[0][2], t[0][1]) if t[1] else Cmp(*t[0])),
        textual.map(lambda t: Cmp(t[0], t[2], t[1])),
        both_props.map(lambda t: Cmp(*t)),
    )


_leaf = st.one_of(
    _comparisons(),
    st.builds(lambda p, lo, span, n: Between(p, lo, lo + span, n), _prop, st.integers(-10, 10),
              st.integers(0, 20), st.booleans()),
    st.builds(In, _prop, st.lists(st.sampled_from(TEXTS), min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(IsNull, _prop, st.booleans()),
    st.builds(Contains, _prop, st.sampled_from(["a", "e", "1"]), st.booleans()),
    st.booleans().map(Const),
)

expressions = st.recursive(
    _leaf,
    lambda inner: st.one_of(st.builds(Logic, st.sampled_from(["AND", "OR"]), inner, inner), st.builds(Not, inner)),
    max_leaves=8,
)

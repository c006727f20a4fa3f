"""SQL92 selectors (broker/rocketmq_model/sql_filter.py): drawn expressions agree with an
independent reference (tests/broker/sql_reference.py) on every drawn message; upstream's
compile-time refusals; the conversions and quirks of upstream's evaluation."""
import pytest
from hypothesis import given, settings, strategies as st

from rocketmq_emulator.broker.rocketmq_model.sql_filter import SqlFilterError, compile_sql

from . import sql_reference as ref


@settings(max_examples=400, deadline=None)
@given(ref.expressions, ref.props_strategy)
def test_drawn_selectors_deliver_what_the_reference_says(tree, props):
    text = ref.render(tree)
    assert compile_sql(text).matches(props) is ref.delivered(tree, props), (text, props)


@settings(max_examples=100, deadline=None)
@given(ref.expressions)
def test_keywords_are_case_insensitive_and_layout_free(tree):
    text = ref.render(tree)
    loose = text.lower().replace("(", "( \n").replace(" and ", " /* c */ AnD ")
    props = {"a": "7", "b": "eu", "region": "eu"}
    assert compile_sql(loose).matches(props) is compile_sql(text).matches(props)


@pytest.mark.parametrize("selector, props, delivered", [
    ("region = 'eu' AND amount > 100", {"region": "eu", "amount": "150"}, True),
    ("region = 'eu' AND amount > 100", {"region": "eu", "amount": "50"}, False),
    ("region = 'eu' AND amount > 100", {"region": "eu"}, False),          # missing: unknown
    ("region = 'eu' OR amount > 100", {"region": "eu"}, True),            # TRUE OR unknown
    ("NOT (amount > 100)", {}, False),                                    # NOT unknown is unknown
    ("amount IS NULL", {}, True),
    ("TAGS IN ('TagA', 'TagB')", {"TAGS": "TagB"}, True),                 # the tag as a property
    ("TAGS NOT IN ('TagA', 'TagB')", {}, False),
    ("amount > 100", {"amount": "150.5"}, False),      # Integer.valueOf("150.5") throws
    ("amount > 100.0", {"amount": "150.5"}, True),     # a double literal reads a double
    ("amount > 100", {"amount": "3000000000"}, False),  # beyond a Java int
    ("amount > 100L", {"amount": "3000000000"}, False),  # still an Integer: upstream narrows what fits
    ("amount > 2147483648", {"amount": "3000000000"}, True),  # a Long literal reads a long
    ("amount = -5", {"amount": "-5"}, True),
    ("ok = TRUE", {"ok": "TRUE"}, True),               # Boolean.valueOf is case-insensitive
    ("ok", {"ok": "true"}, False),                     # a string property is never the Boolean TRUE
    ("NOT region = 'eu'", {"region": "us"}, False),    # (NOT region) = 'eu': NOT binds first
    ("NOT (region = 'eu')", {"region": "us"}, True),
    ("'eu' <> region", {}, True),                      # upstream's asymmetry with a missing right side
    ("region <> 'eu'", {}, False),
    ("region NOT CONTAINS 'x'", {}, False),            # false, not unknown, for a missing property
    ("region STARTSWITH 'e' AND region ENDSWITH 'u'", {"region": "eu"}, True),
    ("a > b", {"a": "2", "b": "1.5"}, True),           # two properties: read as doubles
    ("a > b", {"a": "x", "b": "1.5"}, False),
    ("x = 1 -- the rest of the line\n OR y = 2", {"y": "2"}, True),
    ("$a_1 = 'it''s'", {"$a_1": "it's"}, True),
    ("a BETWEEN 1 AND 1.5", {"a": "1.25"}, False),     # a >= 1 reads Integer.valueOf("1.25"): throws
])
def test_upstream_semantics(selector, props, delivered):
    assert compile_sql(selector).matches(props) is delivered


@pytest.mark.parametrize("selector, complaint", [
    ("", "Expression can't be null! SQL92"),
    ("a >", "expected a property, a literal or (, found the end at column 4"),
    ("a > 'x'", "'x' cannot be compared by <, >, <=, >= or BETWEEN"),
    ("a > 'x\ny'", "'x\\ny' cannot be compared"),                  # the client's text escaped: one line
    ("a > TRUE", "TRUE cannot be compared"),
    ("a = NULL", "NULL cannot be compared with =; write IS NULL"),
    ("TRUE = 1", "TRUE cannot be compared with 1"),
    ("a BETWEEN 5 AND 1", "the lower bound of BETWEEN (5) is greater than the upper (1)"),
    ("a BETWEEN 'x' AND 'y'", "'x' cannot be compared"),
    ("'a' IN ('a')", "IN applies to a property only"),
    ("a IN (1, 2)", "expected a quoted string"),
    ("a > 0.0", "0.0 is less than 4.9E-324"),
    ("a > 1e999", "is greater than 1.7976931348623157E308"),
    ("a > 9223372036854775808", "is out of the range of a long"),
    ("5", "5 is not a boolean expression"),
    ("a != 1", "unexpected character '!' at column 3"),
    ("a.b = 1", "unexpected character '.'"),
    ("NOT a > 1", "a boolean expression cannot be compared"),
    ("a = 1 b = 2", "expected AND, OR or the end, found 'b' at column 7"),
    ("(" * 300 + "a" + ")" * 300, "nested"),
])
def test_refused_when_compiled_with_one_line(selector, complaint):
    with pytest.raises(SqlFilterError) as caught:
        compile_sql(selector)
    message = str(caught.value)
    assert complaint in message and "\n" not in message
    assert message.startswith("Invalid MessageSelector. ") or not selector


def test_a_deep_chain_is_refused_not_a_crash_when_evaluated():
    with pytest.raises(SqlFilterError, match="nested"):
        compile_sql(" AND ".join(["a = 1"] * 500))
    assert compile_sql(" AND ".join(["a = 1"] * 100)).matches({"a": "1"})


def test_compiled_once_per_text():
    assert compile_sql("a = 1") is compile_sql("a = 1")
    with pytest.raises(SqlFilterError):
        compile_sql("a = ")
    with pytest.raises(SqlFilterError):            # a cached refusal is raised again
        compile_sql("a = ")


_SQL_ALPHABET = st.sampled_from(list("ab01 .'()=<>,+-eELl$_\n*/") + ["AND", "OR", "NOT", "IN", "IS", "NULL",
                                                                  "BETWEEN", "TRUE", "CONTAINS", "--"])


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(_SQL_ALPHABET, max_size=25).map(" ".join)),
       st.dictionaries(st.sampled_from(["a", "b"]), st.text(max_size=6)))
def test_any_text_compiles_or_is_refused_and_never_raises_when_evaluated(text, props):
    try:
        selector = compile_sql(text)
    except SqlFilterError as exc:
        assert "\n" not in str(exc)
        return
    assert selector.matches(props) in (True, False)

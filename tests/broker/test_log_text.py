"""log_text.printable, the one escaper of names for a terminal or a log line (issue 46.7):
control characters, ESC, newlines, bidirectional overrides and other invisible format
characters are written as escapes; a long text is cut with its length said; plain text
(any script) is left as it is."""
import logging

import pytest

from rocketmq_emulator.broker.adapters.log_limits import EscapingFormatter
from rocketmq_emulator.broker.log_text import printable


@pytest.mark.parametrize("raw, shown", [
    ("T\n2024-01-01 ERROR forged", "T\\n2024-01-01 ERROR forged"),
    ("\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07"),
    ("evil\u202etxt.exe", "evil\\u202etxt.exe"),                 # right-to-left override
    ("a\u2066b\u2069c\u200fd", "a\\u2066b\\u2069c\\u200fd"),      # isolates, a direction mark
    ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
    ("\r\t\x7f\x85\u2028", "\\r\\t\\x7f\\x85\\u2028"),
    ("bad\udcff", "bad\\udcff"),                                  # an undecodable byte
    ("tag\U000e0041", "tag\\U000e0041"),
    ("Orders-%RETRY%|ok", "Orders-%RETRY%|ok"),
    ("заказы 注文 طلبات café", "заказы 注文 طلبات café"),
])
def test_what_a_terminal_would_act_on_is_escaped_and_plain_text_is_not(raw, shown):
    assert printable(raw) == shown


def test_a_long_name_is_cut_with_its_length_said():
    assert printable("x" * 10_000, 20) == "x" * 20 + "...(10000 characters)"
    assert printable("\n" * 10, 3) == "\\n\\n\\n...(10 characters)"
    assert printable("x" * 10_000, None) == "x" * 10_000


def test_a_log_line_escapes_a_bidi_override_in_a_name():
    record = logging.LogRecord("t", logging.WARNING, __file__, 1, "refused topic %s", ("A\u202eB\nforged",), None)
    line = EscapingFormatter("%(levelname)s %(message)s").format(record)
    assert line == "WARNING refused topic A\\u202eB\\nforged"

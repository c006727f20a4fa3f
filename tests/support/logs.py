"""Reading serve's stderr log, whose repeated lines are rate-limited (adapters/log_limits.py)."""
from __future__ import annotations

import re

_SUPPRESSED = re.compile(r"suppressed (\d+) similar lines")
# a log line as serve's format writes it: "2024-01-01 00:00:00,000 LEVEL logger: message"
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")


def told(stderr: str, word: str) -> int:
    """How many lines containing ``word`` were logged: those written, plus those a
    "suppressed N similar lines" line (whose first example contains ``word``) stands for."""
    n = 0
    for line in stderr.splitlines():
        if word in line:
            m = _SUPPRESSED.search(line)
            n += int(m.group(1)) if m else 1
    return n

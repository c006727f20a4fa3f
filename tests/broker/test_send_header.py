"""The send header's shortcut for the usual V2 header reads exactly what the full reader
reads, and leaves everything else (missing, empty, non-numeric, non-string, long names)
to it."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.broker.fronts.remoting.processors.send import _Header
from rocketmq_emulator.broker.fronts.remoting.protocol import HeaderError, RemotingCommand, RequestCode

FIELDS = ("producer_group", "topic", "default_topic", "default_topic_queue_nums", "queue_id", "sys_flag",
          "born_timestamp", "flag", "properties", "reconsume_times", "max_reconsume_times", "batch")


class FullReaderOnly(_Header):
    __slots__ = ()

    def _read_v2(self, ext):
        return False


def outcome(cls, ext):
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None)
    cmd.ext_fields = ext
    try:
        h = cls(cmd)
    except HeaderError as exc:
        return ("error", str(exc))
    return tuple((f, getattr(h, f)) for f in FIELDS)


numbers = st.sampled_from(["0", "1", "4", "-1", "17", "1700000000000", "", " 3", "x", "1.5", "0x10"])
values = st.one_of(numbers, st.sampled_from(["g", "T", "TBW102", "true", "false", "TRUE", "KEYS\x01k"]),
                   st.integers(-5, 5), st.booleans(), st.none())
headers = st.dictionaries(st.sampled_from(list("abcdefghijklmn") + ["topic", "queueId"]), values, max_size=14)
usual = st.fixed_dictionaries(
    {"a": st.sampled_from(["g", "producer-1"]), "b": st.sampled_from(["T", "Orders", ""]), "e": numbers},
    optional={k: numbers for k in "dfghjl"} | {"c": st.sampled_from(["TBW102", "", "Other"]),
                                                "i": st.sampled_from(["", "KEYS\x01k\x02WAIT\x01true"]),
                                                "k": st.just("false"), "m": st.sampled_from(["true", "false", "True"]),
                                                "n": st.just("broker-a")})


@given(st.one_of(usual, headers))
def test_the_shortcut_reads_what_the_full_reader_reads(ext):
    assert outcome(_Header, dict(ext)) == outcome(FullReaderOnly, dict(ext))


def test_a_usual_header_takes_the_shortcut(monkeypatch):
    calls = []
    monkeypatch.setattr(_Header, "_read", lambda self, req, ext: calls.append(ext))
    ok = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "17", "h": "0", "i": "",
          "j": "0", "k": "false", "m": "false", "n": "broker-a"}
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None)
    cmd.ext_fields = ok
    h = _Header(cmd)
    assert calls == [] and (h.queue_id, h.default_topic_queue_nums, h.born_timestamp, h.batch) == (1, 4, 17, False)
    cmd.ext_fields = {**ok, "e": "one"}
    with pytest.raises(AttributeError):      # the full reader (stubbed out here) was asked
        _Header(cmd).queue_id
    assert len(calls) == 1

"""Fault rules on the in-process transport's typed calls (issue 48, item 3): the broker's
door decides, the transport translates (client_sdk/transport/typed_faults.py). Every
call stays typed — no command built — and a client sees what it sees over the real 4.x
codec (the loopback transport, every call a command through the 4.x front)."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message
from rocketmq_emulator.client_sdk.errors import MQBrokerError, RemotingTimeoutError


def run(transport: str, rules: list[tuple], *, fails: int = 1, span: str = "2m"):
    """Sends and consumes under ``rules``: (what each send did, what was consumed and when,
    each rule's hits, the committed offset)."""
    broker = EmbeddedBroker(transport=transport, pid=7)
    broker.create_topic("T", 1)
    for operation, action, fields in rules:
        broker.faults.add(operation, action, **fields)
    p = broker.producer("pg", retry_times_when_send_failed=0)
    sent = []
    for i in range(3):
        try:
            sent.append(p.send(Message("T", f"m{i}".encode())).queue_offset)
        except MQBrokerError as exc:
            sent.append(("refused", exc.code))
        except RemotingTimeoutError:
            sent.append("timeout")
    seen, tries = [], {}

    def listener(msgs, ctx):
        for m in msgs:
            tries[m.body] = tries.get(m.body, 0) + 1
            seen.append((m.body, m.reconsume_times, broker.clock.now_ms()))
        return RECONSUME_LATER if any(tries[m.body] <= fails for m in msgs) else CONSUME_SUCCESS

    broker.push_consumer("cg", "T", listener=listener)
    broker.advance(span)
    hits = [rule["hits"] for rule in broker.faults.list()]
    committed = broker.committed_offset("cg", "T", 0)
    broker.close()
    return sent, seen, hits, committed


CASES = {
    "refused send": [("send", "refuse", {"times": 1})],
    "refused send with a code": [("send", "refuse", {"times": 1, "error": "SYSTEM_BUSY"})],
    "dropped send, stored": [("send", "drop", {"times": 1, "stored": True})],
    "delayed send": [("send", "delay", {"times": 1, "delay": "1s"})],
    "refused pull": [("pull", "refuse", {"times": 2})],
    "dropped pull": [("pull", "drop", {"times": 1})],
    "delayed pull": [("pull", "delay", {"times": 3, "delay": "2s"})],
    "duplicated pull": [("pull", "duplicate", {"times": 2})],
    "held pulls": [("pull", "hold", {"window": ("0s", "20s")})],
    "refused send-back": [("send_back", "refuse", {"times": 1})],
    "dropped commits": [("ack", "drop", {"times": 5})],
    "delayed commits": [("ack", "delay", {"times": 5, "delay": "3s"})],
    "refused heartbeats": [("heartbeat", "refuse", {"window": ("10s", "70s")})],
    "delayed heartbeats": [("heartbeat", "delay", {"window": ("10s", "70s"), "delay": "1s"})],
    "refused route": [("route", "refuse", {"times": 1})],
    "dropped route": [("route", "drop", {"times": 1})],
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_rule_acts_in_process_as_over_the_codec(case, commands_made):
    typed = run("inprocess", CASES[case])
    assert commands_made == []                  # in process: typed, every call
    wired = run("loopback", CASES[case])
    assert typed == wired
    assert any(typed[2])                        # the rule did fire

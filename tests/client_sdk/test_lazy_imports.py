"""What a program using the SDK in process loads (issue 49): a broker with a started
producer and consumer leaves out what only other uses need — protobuf (the Pulsar entry
codec, loaded when compaction first reads a key) and the TCP transport (a client given
namesrv_addr); the first names alone leave out the dead-letter views too (``dead_letters``
/ ``redrive``, the remoting front's DLQ request) and calendar (the first uniq key) — and
each of those still works when asked for. Counted in a fresh interpreter; no timing is asserted (benchmarks/startup_cost.py
measures the CPU)."""
from __future__ import annotations

import json
import subprocess
import sys

NOT_USED = ["google.protobuf", "socket", "rocketmq_emulator.client_sdk.transport.tcp",
            "rocketmq_emulator.client_sdk.transport.remote", "rocketmq_emulator.broker.fronts.pulsar.entries"]
NOT_IMPORTED = NOT_USED + ["rocketmq_emulator.broker.facade.across", "calendar"]

_IN_PROCESS = """
import json, sys
from rocketmq_emulator.client_sdk import EmbeddedBroker, Producer, PushConsumer, Message
imported = set(sys.modules)
broker = EmbeddedBroker()
broker.create_topic("T")
producer = Producer("G", broker)
producer.start()
consumer = PushConsumer("CG", broker)
consumer.subscribe("T", "*")
consumer.register_message_listener(lambda msgs, ctx: "CONSUME_SUCCESS")
consumer.start()
producer.send(Message("T", b"x"))
broker.run_until_idle()
used = set(sys.modules)
consumer.shutdown()
producer.shutdown()
print(json.dumps({"imported": sorted(imported), "used": sorted(used)}))
"""


def _modules() -> dict:
    done = subprocess.run([sys.executable, "-c", _IN_PROCESS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_in_process_use_leaves_out_protobuf_tcp_and_the_dead_letter_views():
    mods = _modules()
    assert [m for m in NOT_USED if m in mods["used"]] == []
    assert [m for m in NOT_IMPORTED if m in mods["imported"]] == []


def test_what_was_left_out_loads_when_asked_for(tmp_path):
    from rocketmq_emulator.client_sdk import EmbeddedBroker, Producer
    from rocketmq_emulator.client_sdk.errors import MQClientError
    from rocketmq_emulator.client_sdk.uniq_key import month_start_ms

    broker = EmbeddedBroker()
    assert broker.dead_letters("CG") == []
    try:
        broker.redrive("CG")
    except ValueError as exc:            # DeadLetterError: the DLQ is empty
        assert "CG" in str(exc)
    else:
        raise AssertionError("redrive of an empty DLQ did not refuse")
    assert month_start_ms(1_700_000_000_000) == (1_698_796_800_000, 1_701_388_800_000)  # Nov 2023 UTC
    try:
        Producer("G", broker, namesrv_addr="127.0.0.1:1")      # both: refused by the TCP module's check
    except MQClientError as exc:
        assert "not both" in str(exc)
    else:
        raise AssertionError("a broker and namesrv_addr together were accepted")

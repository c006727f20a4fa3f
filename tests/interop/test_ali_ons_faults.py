"""Fault rules against the real npm client ali-ons over TCP (issue 38): a rule made with
`rocketmq-emulator fault add` against `serve`, and what the real client does about it —
a refused send retried on the other broker of `--brokers 2`; a send stored but never
acknowledged, so the client's retry stores a duplicate that an SDK consumer sees twice
(the idempotency case); offset commits dropped, so the group's next consumer is given
the messages again. Waits are bounded waits for the node process (real timers)."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, PushConsumer, RemoteBroker
from tests.interop.test_ali_ons import GROUP, TOPIC, OnsDriver, max_offset
from tests.support.cli_run import run_cli
from tests.support.processes import EmulatorProcess, wait_for

pytestmark = pytest.mark.interop


def fault(server, *args) -> list | dict:
    done = run_cli("fault", *args, "--json", "--server", server.address)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def sent_ports(driver) -> list[int]:
    """The broker port of each of ali-ons' sends (an offsetMsgId names its broker's address)."""
    return [int(e["msgId"][8:16], 16) for e in driver.of("sent")]


def test_ali_ons_retries_a_refused_send_on_the_other_broker(tmp_path):
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", brokers=2).start()
    driver = None
    try:
        assert run_cli("topic", "create", TOPIC, "--queues", "2", "--server", server.address).returncode == 0
        rule = fault(server, "add", "send", "refuse", "--broker", "broker-a", "--topic", TOPIC)
        driver = OnsDriver(server.address, ok_count=6, poison_count=0)
        driver.wait_for(lambda ev: len({e["body"] for e in ev if e["event"] == "consumed"}) == 6)
        assert sent_ports(driver) == [server.broker_ports["broker-b"]] * 6      # every send ended on broker-b
        (listed,) = fault(server, "list")
        assert listed["id"] == rule["id"] and listed["hits"] >= 1              # broker-a refused some first tries
        assert sum(max_offset(server.broker_ports["broker-a"], TOPIC, q) for q in range(2)) == 0
        assert sum(max_offset(server.broker_ports["broker-b"], TOPIC, q) for q in range(2)) == 6
        driver.close()
    finally:
        if driver is not None:
            driver.close()
        server.stop()


def test_a_send_stored_but_not_acknowledged_becomes_a_duplicate_the_sdk_consumer_sees_twice(tmp_path):
    """ali-ons retries a send that timed out on another broker (with one broker it has
    none to try, and gives up): `--brokers 2`, the first try's answer lost after storing."""
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", brokers=2).start()
    driver, remote = None, None
    try:
        assert run_cli("topic", "create", TOPIC, "--queues", "1", "--server", server.address).returncode == 0
        fault(server, "add", "send", "drop", "--stored", "--topic", TOPIC, "--times", "1")     # once, cluster-wide
        driver = OnsDriver(server.address, ok_count=1, poison_count=0)
        driver.wait_for(lambda ev: len(driver.of("sent")) == 1, timeout=30)    # after its 3 s send timeout
        stored = [max_offset(port, TOPIC) for port in server.broker_ports.values()]
        assert sorted(stored) == [1, 1]                                         # stored twice, one per try
        seen = []
        remote = RemoteBroker(server.address)
        remote.run_in_background()
        consumer = remote.call(lambda: PushConsumer("CG_SDK", remote, listener=lambda msgs, ctx: seen.extend(msgs)
                                                    or CONSUME_SUCCESS).subscribe(TOPIC, "*").start())
        wait_for(lambda: len(seen) >= 2, timeout=30)                            # bounded: real-time clients
        remote.call(consumer.shutdown)
        assert [m.body for m in seen] == [b"ok-0", b"ok-0"]
        # two records (ali-ons sets no UNIQ_KEY: each is known by its offsetMsgId), one
        # business key: what a consumer has to deduplicate on
        assert seen[0].msg_id != seen[1].msg_id and seen[0].keys == seen[1].keys == "ok-0"
        driver.close()
    finally:
        if remote is not None:
            remote.close()
        if driver is not None:
            driver.close()
        server.stop()


def test_dropped_offset_commits_give_the_groups_next_consumer_the_messages_again(tmp_path):
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual").start()
    driver = None
    try:
        assert run_cli("topic", "create", TOPIC, "--queues", "1", "--server", server.address).returncode == 0
        fault(server, "add", "ack", "drop", "--group", GROUP)
        driver = OnsDriver(server.address, ok_count=3, poison_count=0)
        driver.wait_for(lambda ev: len(driver.of("consumed")) == 3)
        driver.close()                                                          # commits on close: dropped too
        driver = None
        (rule,) = fault(server, "list")
        assert rule["hits"] >= 1
        fault(server, "clear")
        driver = OnsDriver(server.address, ok_count=0, poison_count=0)
        driver.wait_for(lambda ev: len(driver.of("consumed")) == 3)
        assert sorted(e["body"] for e in driver.of("consumed")) == ["ok-0", "ok-1", "ok-2"]
        assert {e["reconsumeTimes"] for e in driver.of("consumed")} == {0}     # 4.x: from the queue again
        driver.close()
    finally:
        if driver is not None:
            driver.close()
        server.stop()

"""The dashboard in a real browser (Debian's Chromium driven by Playwright, both installed
by ./dev test), RocketMQ 4.x: a poison message climbs the retry ladder as the page's
advance buttons are clicked (on the message page: they are on every page), lands in the
DLQ; from the search box to its message page, its group's ladder and the DLQ bar's list,
re-driven there and back to its page, where the re-drive and the new delivery show.
Screenshots of each step are kept in .test-artifacts/dashboard/."""
from __future__ import annotations

import json
import urllib.request

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import RECONSUME_LATER, Message, Producer, PushConsumer, RemoteBroker
from tests.broker.fronts.http.browser import (CHROMIUM, chromium_page, follow_to_the_dead_letter_and_back, search,
                                              shot, sources, timeline)
from tests.support.processes import EmulatorProcess, wait_for

__all__ = ["CHROMIUM", "broker"]


@pytest.fixture
def broker(tmp_path):
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", http=True).start()
    remote = RemoteBroker(server.address)
    assert main(["topic", "create", "Orders", "--queues", "1", "--server", server.address]) == 0
    deliveries = []
    consumer = PushConsumer("billing", remote, max_reconsume_times=2)
    consumer.subscribe("Orders", "*")
    consumer.register_message_listener(lambda msgs, ctx: deliveries.extend(msgs) or RECONSUME_LATER)
    producer = Producer("pg", remote).start()
    consumer.start()
    remote.run_in_background()
    server.deliveries, server.producer = deliveries, producer
    yield server
    remote.call(consumer.shutdown)
    remote.call(producer.shutdown)
    remote.close()
    server.stop()


def test_a_poison_message_from_the_search_box_to_its_dead_letter_and_back_after_a_redrive(broker):
    receipt = broker.producer.send(Message("Orders", b"poison order 17", keys="order-17"))
    wait_for(lambda: len(broker.deliveries) == 1)
    base = f"http://127.0.0.1:{broker.http_port}"
    with chromium_page() as page:
        held = []                                                     # the first /api/state, held back
        page.route("**/api/state", lambda route: held.append(route) if not held else route.continue_())
        page.goto(base + "/")
        page.wait_for_selector("#groups >> text=loading")             # no bare headings before the first answer
        assert page.inner_text("#clock") == "loading…" and "loading" in page.inner_text("#dlq")
        held[0].continue_()
        page.wait_for_selector("#groups >> text=L3: 1")               # the first retry waits at level 3 (10 s)
        assert "loading" not in page.inner_text("body")
        shot(page, "4x-0-overview")
        search(page, "order-17")                                      # a key naming one message: its page
        page.wait_for_selector("#timeline >> text=sent back to delay level 3")
        assert "waiting now" in page.inner_text("#now")
        page.click("button[data-advance='10s']")                      # time travel from the message page
        wait_for(lambda: len(broker.deliveries) == 2)
        page.wait_for_selector("#timeline >> text=sent back to delay level 4")
        page.click("button[data-advance='next']")                     # to the next due message
        wait_for(lambda: len(broker.deliveries) == 3)
        page.wait_for_selector("#timeline >> text=dead-lettered")
        walk = follow_to_the_dead_letter_and_back(page, base, receipt.msg_id, "billing", "4x",
                                                  lambda: wait_for(lambda: len(broker.deliveries) == 4))
        page.goto(base + "/#/consumers/4.x")
        page.wait_for_selector("#consumers >> text=billing")
        clients = page.inner_text("#consumers")
        shot(page, "4x-6-consumers")
        page.goto(base + "/")
        page.wait_for_selector("#dlq >> text=re-driven as")
        page.wait_for_selector("#events >> text=dead_lettered")
        shot(page, "4x-7-overview-after")
        overview_events = page.inner_text("#events")
    assert [m.reconsume_times for m in broker.deliveries] == [0, 1, 2, 0]
    before, after = walk["before"], walk["after"]
    assert sum("delivered to" in line for line in before) == 3          # each delivery, with its client
    assert [line for line in before if "sent back to delay level" in line][0].count("billing") >= 1
    assert sources(before) == {"store", "event log"}
    assert any("re-driven from the dead letter" in line for line in after)
    assert any("re-driven as" in line for line in after)
    assert sum("delivered to" in line for line in after) == 4
    assert "PYTHON" in clients and "billing" in clients                # its client, with language and version
    assert "sent_back" in overview_events and "redelivered" in overview_events
    state = json.loads(urllib.request.urlopen(f"{base}/api/state", timeout=10).read())
    [dead] = state["dead_letters"]
    assert dead["redriven_as"] and dead["group"] == "billing"
    assert all(p.exists() for p in walk["shots"].values())


def test_a_transaction_waiting_for_its_producer_is_shown_with_its_checks(tmp_path):
    """Issue 42: a half message no one ends is listed under "Transactions waiting" with its
    topic, producer group and checks; the advance button moves its check-back ladder."""
    from rocketmq_emulator.client_sdk import LocalTransactionState

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", http=True).start()
    remote = RemoteBroker(server.address)
    producer = Producer("tx-app", remote, transaction_checker=lambda msg: LocalTransactionState.UNKNOW).start()
    remote.run_in_background()
    try:
        sent = remote.call(lambda: producer.send_message_in_transaction(Message("Payments", b"undecided"),
                                                                        lambda m, a: LocalTransactionState.UNKNOW))
        with chromium_page() as page:
            page.goto(f"http://127.0.0.1:{server.http_port}/")
            page.wait_for_selector(f"#half >> text={sent.transaction_id}")
            [row] = [r.split("\t") for r in page.inner_text("#half").splitlines()[1:]]
            assert row[:4] == ["Payments", "tx-app", sent.transaction_id, "0"]
            page.click("button[data-advance='10s']")                 # past transactionTimeOut (6 s)
            page.wait_for_selector("#half >> td:text-is('1')")       # checked once, still waiting
            shot(page, "tx-0-transactions-waiting")
    finally:
        remote.call(producer.shutdown)
        remote.close()
        server.stop()

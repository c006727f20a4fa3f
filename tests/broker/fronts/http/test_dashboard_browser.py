"""The dashboard in a real browser (Debian's Chromium driven by Playwright, both installed
by ./dev test): a poison message climbs the retry ladder as the advance buttons are
clicked, lands in the DLQ, and the re-drive button sends it back to its topic. Screenshots
of each step are kept in .test-artifacts/dashboard/."""
from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import pytest
# (playwright and the http extra: ./dev test installs them; without them this fails, it does not skip)
from playwright import sync_api as playwright

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import RECONSUME_LATER, Message, Producer, PushConsumer, RemoteBroker
from tests.support.processes import EmulatorProcess, wait_for

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[4] / ".test-artifacts" / "dashboard"


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


def test_a_poison_message_climbs_the_ladder_and_is_redriven_from_the_page(broker):
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed: run ./dev test, which installs it")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    broker.producer.send(Message("Orders", b"poison order 17", keys="order-17"))
    wait_for(lambda: len(broker.deliveries) == 1)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless=new"])
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        held = []                                                     # the first /api/state, held back
        page.route("**/api/state", lambda route: held.append(route) if not held else route.continue_())
        page.goto(f"http://127.0.0.1:{broker.http_port}/")
        page.wait_for_selector("#groups >> text=loading")             # no bare headings before the first answer
        assert page.inner_text("#clock") == "loading…" and "loading" in page.inner_text("#dlq")
        held[0].continue_()
        page.wait_for_selector("#groups >> text=L3: 1")               # the first retry waits at level 3 (10 s)
        assert "loading" not in page.inner_text("body")
        page.screenshot(path=str(ARTIFACTS / "1-waiting-level-3.png"), full_page=True)
        page.click("button[data-advance='10s']")
        wait_for(lambda: len(broker.deliveries) == 2)
        page.wait_for_selector("#groups >> text=L4: 1")               # failed again: level 4 (30 s)
        page.screenshot(path=str(ARTIFACTS / "2-waiting-level-4.png"), full_page=True)
        page.click("button[data-advance='next']")                     # to the next due message
        wait_for(lambda: len(broker.deliveries) == 3)
        page.wait_for_selector("#dlq >> text=dead")                   # the third failure: the DLQ
        page.wait_for_selector("#events >> text=dead_lettered")        # and the live feed says so
        page.screenshot(path=str(ARTIFACTS / "3-dead-letter.png"), full_page=True)
        assert "order-17" in page.inner_text("#dlq") and "keys" in page.inner_text("#dlq tr")   # a keys column
        rows = {r[2]: r for r in (row.split("\t") for row in page.inner_text("#events").splitlines()[1:])}
        assert rows["redelivered"][4] == "billing" and rows["redelivered"][7] in ("3", "4"), rows   # group, level
        assert rows["dead_lettered"][4] == "billing" and rows["dead_lettered"][7] == "-", rows     # no level
        assert "poison order 17" not in page.inner_text("#waiting")
        assert page.inner_text("#events").count("sent_back") >= 2
        page.click("button.redrive[data-group='billing']")
        page.wait_for_selector("#dlq >> text=re-driven as")
        wait_for(lambda: len(broker.deliveries) == 4)                 # back in Orders, consumed again
        page.screenshot(path=str(ARTIFACTS / "4-redriven.png"), full_page=True)
        browser.close()
    assert [m.reconsume_times for m in broker.deliveries] == [0, 1, 2, 0]
    assert all(m.body == b"poison order 17" for m in broker.deliveries)
    state = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{broker.http_port}/api/state", timeout=10).read())
    [dead] = state["dead_letters"]
    assert dead["redriven_as"] and dead["group"] == "billing"
    assert sorted(p.name for p in ARTIFACTS.glob("*.png")) == ["1-waiting-level-3.png", "2-waiting-level-4.png",
                                                               "3-dead-letter.png", "4-redriven.png"]


def test_a_transaction_waiting_for_its_producer_is_shown_with_its_checks(tmp_path):
    """Issue 42: a half message no one ends is listed under "Transactions waiting" with its
    topic, producer group and checks; the advance button moves its check-back ladder."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed: run ./dev test, which installs it")
    from rocketmq_emulator.client_sdk import LocalTransactionState

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", http=True).start()
    remote = RemoteBroker(server.address)
    producer = Producer("tx-app", remote, transaction_checker=lambda msg: LocalTransactionState.UNKNOW).start()
    remote.run_in_background()
    try:
        sent = remote.call(lambda: producer.send_message_in_transaction(Message("Payments", b"undecided"),
                                                                        lambda m, a: LocalTransactionState.UNKNOW))
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless=new"])
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(f"http://127.0.0.1:{server.http_port}/")
            page.wait_for_selector(f"#half >> text={sent.transaction_id}")
            [row] = [r.split("\t") for r in page.inner_text("#half").splitlines()[1:]]
            assert row[:4] == ["Payments", "tx-app", sent.transaction_id, "0"]
            page.click("button[data-advance='10s']")                 # past transactionTimeOut (6 s)
            page.wait_for_selector("#half >> td:text-is('1')")       # checked once, still waiting
            browser.close()
    finally:
        remote.call(producer.shutdown)
        remote.close()
        server.stop()

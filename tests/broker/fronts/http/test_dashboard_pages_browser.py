"""The dashboard's pages beyond one message's walk, in Debian's Chromium (issue 39 items 2,
3 and 5): the overview draws each group's ladder in its row and lists the busiest topics
and groups; a topic has its own page of rates over the broker's clock, reached from the
overview and the topics page; every page opened directly shows the broker's clock, and its
advance buttons move it there; empty states and errors are said on the page. Screenshots: .test-artifacts/dashboard/."""
from __future__ import annotations

from tests.broker.fronts.http.browser import chromium_page, search, shot
from tests.broker.fronts.http.test_dashboard_browser import CHROMIUM, broker
from tests.support.processes import EmulatorProcess, wait_for

__all__ = ["CHROMIUM", "broker"]


def test_the_overview_draws_each_groups_ladder_and_a_topic_has_its_own_rates_page(broker):
    from rocketmq_emulator.client_sdk import Message

    broker.producer.send(Message("Orders", b"poison order 18", keys="order-18"))
    wait_for(lambda: len(broker.deliveries) == 1)
    base = f"http://127.0.0.1:{broker.http_port}"
    with chromium_page() as page:
        page.goto(base + "/")
        page.wait_for_selector("#groups >> text=L3: 1")
        # the ladder in the group's row: level 3 holds the one waiting message, the DLQ none
        waiting = page.locator("#groups svg.mini rect[fill='var(--wait)']")
        assert waiting.count() == 1 and waiting.locator("title").text_content() == "level 3: 1 waiting"
        assert page.locator("#groups svg.mini rect").count() == 18 + 1
        page.wait_for_selector("#busy-topics >> text=Orders")
        assert "billing" in page.inner_text("#busy-groups")
        shot(page, "pages-0-overview")
        page.locator("#busy-topics a", has_text="Orders").click()
        page.wait_for_selector("#topic-rates svg polyline")
        assert page.url.endswith("#/topic/Orders")
        legend = page.inner_text("#topic-rates .legend")
        assert "produced: 1" in legend and "retried: 1" in legend
        assert "billing" in page.inner_text("#topic-groups")
        assert page.get_attribute("nav a[data-nav='topics']", "aria-current") == "page"
        shot(page, "pages-1-topic")

    with chromium_page() as page:                   # a page opened directly, not through the overview
        page.goto(base + "/#/topics")
        page.wait_for_selector("#topics-all >> text=Orders")
        page.wait_for_function("document.querySelector('#clock').textContent.startsWith('20')")
        before = page.inner_text("#clock")
        page.click("button[data-advance='10s']")   # the first retry comes due: a second delivery
        wait_for(lambda: len(broker.deliveries) == 2)
        page.wait_for_function("t => document.querySelector('#clock').textContent !== t", arg=before)
        after = page.inner_text("#clock")
        page.locator("#topics-all a", has_text="Orders").first.click()
        page.wait_for_selector("#topic-rates >> text=retried: 2")
    assert (before[11:19], after[11:19]) == ("00:00:00", "00:00:10")


def test_an_empty_broker_says_so_a_wrong_id_and_a_stopped_broker_are_shown_as_errors(tmp_path):
    """A broker on the real clock, nothing sent yet: each page says what is not there
    rather than drawing bare headings; the advance buttons are off and say why; a search
    that finds nothing, a message id no broker holds and a broker that stopped answering
    are each one readable line on the page."""
    server = EmulatorProcess(tmp_path / "store", http=True).start()
    base = f"http://127.0.0.1:{server.http_port}"
    try:
        with chromium_page(width=500) as page:
            page.goto(base + "/")
            page.wait_for_selector("#groups >> text=no group has used this broker yet")
            for table, says in (("#waiting", "nothing waits for a retry"), ("#dlq", "no dead letters"),
                                ("#busy-topics", "nothing moved in this window")):
                assert says in page.inner_text(table)
            assert "real: the buttons need --clock virtual" in page.inner_text("#clockbar")
            assert page.locator("#advance button:disabled").count() == 4
            shot(page, "empty-0-overview-500px")
            for dialect in ("4.x", "5.x", "pulsar"):
                page.goto(f"{base}/#/consumers/{dialect}")
                page.wait_for_selector("#consumers >> text=none yet")
            page.goto(base + "/")
            search(page, "order-none")
            page.wait_for_selector("#results >> text=no message has this id or key on a running broker")
            page.goto(base + "/#/message/7F000001000022B30000000000999999")
            page.wait_for_selector("#message >> text=searching for it")
            assert "no running broker holds a message" in page.inner_text("#error")
            shot(page, "empty-1-no-such-message")
            server.stop()
            page.evaluate("location.hash = '#/topics'")   # the page is loaded; the broker behind it is gone
            page.wait_for_selector("#error >> text=the broker does not answer")
    finally:
        server.stop()


def test_after_a_restart_a_pulsar_bar_says_which_of_its_messages_it_cannot_list(tmp_path):
    """A Pulsar cursor saves how many messages passed each redelivery count, not which;
    after a restart the bar still counts them and its list says why they are not listed."""
    from rocketmq_emulator.broker.core import BrokerCore
    from rocketmq_emulator.broker.operations import SendRequest
    from rocketmq_emulator.broker.pulsar_model.cursors import SubType
    from rocketmq_emulator.delay_scheduler import VirtualClock

    core = BrokerCore.open(tmp_path / "store", VirtualClock())
    topic = "pulsar|public|default|orders"
    core.ensure_pulsar_topic(topic)
    ch = core.connect()
    for i in range(2):
        core.send(SendRequest("", topic, b"m%d" % i, 0, {}), ch)
    consumer = object()
    core.subscriptions.subscribe("billing", topic, consumer, SubType.SHARED, earliest=True)
    core.subscriptions.flow(consumer, 10)
    offsets = [d.offset for d in core.subscriptions.dispatch("billing", topic)]
    core.subscriptions.redeliver(consumer, offsets)                  # both reach count 1
    core.subscriptions.dispatch("billing", topic)
    core.subscriptions.ack(consumer, offsets)
    core.close()
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", http=True).start()
    try:
        with chromium_page() as page:
            page.goto(f"http://127.0.0.1:{server.http_port}/#/group/pulsar/billing")
            page.click("#ladder rect[data-which='passed'][data-step='1']")
            page.wait_for_selector("#bar-unlisted >> text=2 of the 2 this bar counts are not listed")
            assert "no messages" in page.inner_text("#bar")
            shot(page, "pulsar-7-bar-after-restart")
    finally:
        server.stop()

"""The dashboard at 500 px wide, in Debian's Chromium (issue 47 item 11): no table is cut
off on the right - each fits the window (a table of rows shows each row as a block of
"column  value" lines there), and nothing makes the page itself wider than the window.
(A table wider than its box scrolled inside it before, its right part out of sight with no
sign of it.) Screenshots: .test-artifacts/dashboard/."""
from __future__ import annotations

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import Message
from tests.broker.fronts.http.browser import chromium_page, shot
from tests.broker.fronts.http.test_dashboard_browser import CHROMIUM, broker
from tests.support.processes import wait_for

__all__ = ["CHROMIUM", "broker"]

# Every table on the page: how far its box reaches past the window's right edge (0: it does
# not), and whether all of it is in sight (its scroll width within its box's).
_OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  return {page: document.documentElement.scrollWidth - width,
          tables: [...document.querySelectorAll('table')].map(t => {
            const box = t.closest('.scroll') || t;
            return {id: t.id, past: Math.round(box.getBoundingClientRect().right - width),
                    wider_by: Math.max(0, t.scrollWidth - box.clientWidth)};
          })};
}"""


def _cut_off(page) -> tuple[int, list]:
    found = page.evaluate(_OVERFLOW)
    return found["page"], [t for t in found["tables"] if t["past"] > 0 or t["wider_by"] > 1]


def test_at_500_px_every_table_fits_and_the_rates_chart_says_where_the_clock_jumped(broker):
    receipt = broker.producer.send(Message("Orders", b"poison order 19 with a body long enough to need room",
                                           keys="order-19"))
    wait_for(lambda: len(broker.deliveries) == 1)
    for n in (2, 3):                                   # its two retries, then the DLQ (maxReconsumeTimes 2)
        assert main(["clock", "advance", "next", "--server", broker.address]) == 0
        wait_for(lambda: len(broker.deliveries) == n)
    base = f"http://127.0.0.1:{broker.http_port}"
    with chromium_page(width=500) as page:
        page.goto(base + "/")
        page.wait_for_selector("#dlq >> text=order-19")
        page.wait_for_selector("#events >> text=dead_lettered")
        overview = _cut_off(page)
        # the two clock advances are marked on the rates chart: the seconds each skipped
        assert page.locator("#rates svg rect.jump").count() == 2
        # and the 260 s of the 5 min window before the broker started (at 00:00:00, 40 s ago) are said
        assert page.locator("#rates svg rect.before").count() == 1
        assert "before the broker started" in page.text_content("#rates svg")
        jumped = page.inner_text("#rates .legend")
        shot(page, "narrow-0-overview-500px")
        page.goto(f"{base}/#/message/{receipt.msg_id}")
        page.wait_for_selector("#timeline >> text=dead-lettered")
        message = _cut_off(page)
        shot(page, "narrow-1-message-500px")
        page.goto(f"{base}/#/group/4.x/billing")
        page.wait_for_selector("#queues >> text=Orders")
        group = _cut_off(page)
        page.goto(f"{base}/#/consumers/4.x")
        page.wait_for_selector("#consumers >> text=billing")
        consumers = _cut_off(page)
    assert overview == (0, []) and message == (0, []) and group == (0, []) and consumers == (0, [])
    assert "the clock jumped (clock advance): +10 s, +30 s" in " ".join(jumped.split())

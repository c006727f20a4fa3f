"""The dashboard at 1,000 groups and 100,000 messages waiting for a retry (issue 39 item
5), in Debian's Chromium: every view answers a page and the count of all — never one
giant table — the overview, each consumer page, the waiting messages and a group's
ladder are paged and usable, also 500 px wide. The store is built in this process (1,000
4.x groups each sending back the same 100 messages), then `serve` opens it."""
from __future__ import annotations

import json
import urllib.request

import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig
from rocketmq_emulator.broker.operations import SendBack, SendOutcome, SendRequest
from rocketmq_emulator.delay_scheduler import VirtualClock
from tests.broker.fronts.http.browser import chromium_page, shot
from tests.support.processes import EmulatorProcess

GROUPS, MESSAGES = 1000, 100


def build_store(root) -> None:
    core = BrokerCore.open(root, VirtualClock())
    core.create_topic("Orders", 4)
    channel = core.connect()
    offsets = []
    for i in range(MESSAGES):
        sent = core.send(SendRequest("pg", "Orders", b"order %d" % i, i % 4, {"UNIQ_KEY": f"U{i:05d}",
                                                                               "KEYS": f"order-{i}"}), channel)
        assert sent.outcome is SendOutcome.STORED
        offsets.append(int(sent.msg_id[16:], 16))          # the commit-log offset its offsetMsgId names
    for g in range(GROUPS):
        name = f"group-{g:04d}"
        core.update_group(SubscriptionGroupConfig(name))
        for q in range(4):
            core.record_offset_commit(name, "Orders", q, 20)
        for off in offsets:
            core.send_back(SendBack(name, off))
    assert core.schedule.scheduler.pending_count() == GROUPS * MESSAGES
    core.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale") / "store"
    build_store(root)
    s = EmulatorProcess(root, "--clock", "virtual", http=True).start()
    yield s
    s.stop()


def get(server, path: str) -> dict:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}{path}", timeout=60).read())


def test_every_view_answers_a_page_and_the_count_of_all(server):
    state = get(server, "/api/state")
    assert state["totals"] == {"groups": GROUPS, "topics": 1, "waiting": GROUPS * MESSAGES, "dead_letters": 0}
    assert len(state["groups"]) == 100 and len(state["waiting"]) == 200
    assert all(g["ladder"] == [{"level": 3, "delay_ms": 10_000, "waiting": MESSAGES}] for g in state["groups"])
    page = get(server, "/api/consumers?dialect=4.x&start=950&limit=50")
    assert page["total"] == GROUPS and [r["group"] for r in page["rows"]] == [f"group-{g:04d}" for g in range(950, 1000)]
    assert all(r["retry_waiting"] == MESSAGES and r["lag"] == 4 * 5 for r in page["rows"])     # 25 a queue, 20 read
    last = get(server, f"/api/waiting?start={GROUPS * MESSAGES - 30}&limit=100")
    assert last["total"] == GROUPS * MESSAGES and len(last["rows"]) == 30
    group = get(server, "/api/group?name=group-0500")
    assert [(s["step"], s["waiting"]) for s in group["ladder"]["steps"] if s["waiting"]] == [(3, MESSAGES)]
    bar = get(server, "/api/bar?group=group-0500&dialect=4.x&step=3&which=waiting&start=90&limit=50")
    assert bar["total"] == MESSAGES and len(bar["rows"]) == 10
    life = get(server, "/api/message?id=U00042")
    assert life["copies_total"] == 1 + GROUPS and len(life["copies"]) == 200
    assert life["timeline_total"] > len(life["timeline"])


def test_the_pages_stay_paged_and_usable(server):
    base = f"http://127.0.0.1:{server.http_port}"
    with chromium_page() as page:
        page.goto(base + "/")
        page.wait_for_selector("#groups >> text=group-0000")
        assert page.locator("#groups tr").count() == 101                 # a heading and 100 rows, not 1,000
        assert page.locator("#waiting tr").count() == 201
        assert "100,000" in page.inner_text("#totals")
        shot(page, "scale-1-overview")
        page.goto(base + "/#/consumers/4.x")
        page.wait_for_selector("#consumers-pager >> text=1–50 of 1,000")
        page.click("#consumers-pager button:has-text('next')")
        page.wait_for_selector("#consumers-pager >> text=51–100 of 1,000")
        assert page.locator("#consumers tr").count() == 51
        page.fill("#filter", "group-09")                                   # a filter, typed
        page.wait_for_selector("#consumers-pager >> text=1–50 of 100")
        shot(page, "scale-2-consumers")
        page.goto(base + "/#/waiting")
        page.wait_for_selector("#waiting-pager >> text=1–100 of 100,000")
        assert page.locator("#waiting-all tr").count() == 101
        shot(page, "scale-3-waiting")
        page.goto(base + "/#/group/4.x/group-0500")
        page.click("#ladder rect[data-which='waiting']")
        page.wait_for_selector("#bar-list >> text=1–50 of 100")
        shot(page, "scale-4-group")
        page.set_viewport_size({"width": 500, "height": 900})
        page.goto(base + "/#/consumers/4.x")
        page.wait_for_selector("#consumers >> text=group-0900")          # (its filter is kept)
        assert page.input_value("#filter") == "group-09"
        assert page.evaluate("document.documentElement.scrollWidth") <= 500    # the table scrolls inside, not the page
        shot(page, "scale-5-consumers-500px")

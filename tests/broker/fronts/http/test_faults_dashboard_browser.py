"""The dashboard's fault rules panel in a real browser (Debian's Chromium driven by
Playwright, as test_dashboard_browser.py), issue 38: a rule added through the HTTP API
shows on the overview; a real client's send it refuses over TCP raises the panel's
count as it happens and is a line of the live events naming the rule; the rule's remove
button takes it off the broker (the next send goes through), and the clear button takes
every rule. Screenshots in .test-artifacts/dashboard/."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import Message, Producer, RemoteBroker
from rocketmq_emulator.client_sdk.errors import MQBrokerError
from tests.broker.fronts.http.browser import chromium_page, shot
from tests.cli.test_http_security import request
from tests.support.processes import EmulatorProcess

JSON = {"Content-Type": "application/json"}


def api(server, method: str, path: str, doc=None):
    status, _, raw = request(server.http_port, method, path, json.dumps(doc).encode() if doc is not None else b"", JSON)
    assert status in (200, 201), raw
    return json.loads(raw)


def test_a_rule_from_the_api_is_seen_firing_in_the_panel_and_the_feed_and_removed_with_its_button(tmp_path):
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", http=True).start()
    remote = RemoteBroker(server.address)
    try:
        assert main(["topic", "create", "Orders", "--queues", "1", "--server", server.address]) == 0
        producer = Producer("pg", remote).start()
        remote.run_in_background()
        rule = api(server, "POST", "/api/faults", {"operation": "send", "action": "refuse", "topic": "Orders"})
        base = f"http://127.0.0.1:{server.http_port}"
        with chromium_page() as page:
            page.goto(base + "/")
            row = page.locator("#faults tr", has=page.locator(f"button[data-id='{rule['id']}']"))
            row.wait_for()
            assert [c.strip() for c in row.locator("td").all_inner_texts()[:6]] == [
                str(rule["id"]), "refuse send", "topic Orders", "every match", "0", "0"]
            assert "no events yet" in page.inner_text("#events")
            with pytest.raises(MQBrokerError):              # refused: the first try and the producer's 2 retries
                remote.call(lambda: producer.send(Message("Orders", b"refused")))
            [listed] = api(server, "GET", "/api/faults")
            assert listed["hits"] == 3
            page.wait_for_function(f"""() => {{ const b = document.querySelector("#faults button[data-id='{rule['id']}']");
                return b && b.closest("tr").children[5].innerText.trim() === "3"; }}""")     # live, no reload
            page.wait_for_selector(f"#events >> text=rule {rule['id']}: refuse send")
            feed = [line for line in page.inner_text("#events").splitlines() if "fault" in line]
            assert len(feed) == 3 and all(f"rule {rule['id']}: refuse send" in line and "Orders" in line for line in feed)
            shot(page, "faults-0-panel-and-feed")
            page.click(f"#faults button.fault-remove[data-id='{rule['id']}']")
            page.wait_for_selector("#faults >> text=no fault rule")
            assert api(server, "GET", "/api/faults") == []
            assert remote.call(lambda: producer.send(Message("Orders", b"through"))).msg_id
            # a "times 1" rule that fired stays in the panel as spent (issue 47.8)
            once = api(server, "POST", "/api/faults", {"operation": "send", "action": "refuse", "topic": "Orders",
                                                       "times": 1})
            assert remote.call(lambda: producer.send(Message("Orders", b"refused once"))).msg_id   # then retried
            spent = page.locator("#faults tr", has=page.locator(f"button[data-id='{once['id']}']"))
            page.wait_for_selector("#faults >> text=spent (its 1 time(s) used up)")
            assert [c.strip() for c in spent.locator("td").all_inner_texts()[3:6]] == [
                "spent (its 1 time(s) used up)", "1", "1"]
            # two more rules, and the clear button
            for op in ("pull", "ack"):
                api(server, "POST", "/api/faults", {"operation": op, "action": "drop", "group": "billing", "times": 2})
            page.wait_for_selector("#faults >> text=drop ack")
            assert "2 more time(s)" in page.inner_text("#faults") and "group billing" in page.inner_text("#faults")
            shot(page, "faults-1-two-rules")
            page.click("#faults-clear")
            page.wait_for_selector("#faults >> text=no fault rule")
            assert api(server, "GET", "/api/faults") == []
            assert page.inner_text("#error") == ""
        remote.call(producer.shutdown)
    finally:
        remote.close()
        server.stop()

"""Another web page cannot drive the dashboard (issue 34, item 1), in a real browser
(Debian's Chromium via Playwright, as test_dashboard_browser.py): a page served by a
second local HTTP server, on another port and under another name, tries what a hostile
page can — a text/plain fetch and a JSON fetch to move the clock 10 years, a reading of
the state, a form POST that re-drives the dead letters — and a DNS-rebound name
(evil.example resolved to 127.0.0.1 by the browser's resolver rules) asks for the state.
Nothing changes on the broker and nothing is read; the dashboard's own buttons work in
the same browser right after."""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
# (playwright and the http extra: ./dev test installs them; without them this fails, it does not skip)
from playwright import sync_api as playwright

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import Message
from tests.support.html_page import HtmlPageServer
from tests.support.logs import told
from tests.support.processes import wait_for

from tests.broker.fronts.http.test_dashboard_browser import CHROMIUM, broker  # noqa: F401 (the same broker: a consumer that always fails)

ARTIFACTS = Path(__file__).resolve().parents[4] / ".test-artifacts" / "dashboard-csrf"
TEN_YEARS = "3650d"

ATTACK = """<!doctype html><html><head><title>cute cats</title></head><body>
<form id="f" method="POST" action="{dash}/api/dlq/redrive" enctype="text/plain" target="sink">
<input name='{{"group":"billing","all":true,"x":"' value='"}}'></form>
<iframe name="sink" id="sink"></iframe>
<script>
const dash = "{dash}";
const said = {{}};
async function attempt(name, fn) {{
  try {{ said[name] = await fn(); }} catch (e) {{ said[name] = "error: " + e.name; }}
}}
(async () => {{
  await attempt("text_plain", async () => {{
    const r = await fetch(dash + "/api/clock/advance", {{method: "POST", mode: "no-cors",
      headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{duration: "{ten_years}"}})}});
    return "sent, opaque " + r.type;
  }});
  await attempt("json", async () => {{
    const r = await fetch(dash + "/api/clock/advance", {{method: "POST",
      headers: {{"Content-Type": "application/json"}}, body: JSON.stringify({{duration: "{ten_years}"}})}});
    return "status " + r.status;
  }});
  await attempt("read_state", async () => "read " + (await (await fetch(dash + "/api/state")).text()).length);
  await attempt("read_rebound", async () => "read " + (await (await fetch("{rebound}/api/state")).text()).length);
  document.getElementById("sink").onload = () => {{ document.title = "done " + JSON.stringify(said); }};
  document.getElementById("f").submit();
}})();
</script></body></html>"""


def state(port: int) -> dict:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=10).read())


def test_a_page_elsewhere_changes_and_reads_nothing_and_the_dashboard_still_works(broker):
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed: run ./dev test, which installs it")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    port = broker.http_port
    broker.producer.send(Message("Orders", b"secret poison order", keys="order-9"))
    for delivered, due in ((1, "10s"), (2, "30s")):                   # its two retries, then the DLQ
        wait_for(lambda: len(broker.deliveries) == delivered)  # noqa: B023 (called at once)
        assert main(["clock", "advance", due, "--server", broker.address]) == 0
    wait_for(lambda: state(port)["dead_letters"])
    before = state(port)
    site = HtmlPageServer(ATTACK.format(dash=f"http://127.0.0.1:{port}", rebound=f"http://evil.example:{port}",
                                        ten_years=TEN_YEARS))
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--headless=new", "--host-resolver-rules=MAP evil.example 127.0.0.1"])
            page = browser.new_page()
            page.goto(f"http://evil.example:{site.port}/")
            page.wait_for_function("document.title.startsWith('done')", timeout=20_000)
            said = json.loads(page.title()[len("done "):])
            form_answer = page.frame(name="sink").content()                 # what the server told the form
            page.screenshot(path=str(ARTIFACTS / "csrf-attacker-page.png"))
            rebound = page.goto(f"http://evil.example:{port}/api/state")    # the rebound name, navigated to
            assert rebound.status == 421 and "secret" not in rebound.text() and "Orders" not in rebound.text()

            after = state(port)                                              # nothing changed
            assert after["clock"]["now_ms"] == before["clock"]["now_ms"]
            assert after["dead_letters"] == before["dead_letters"] and not after["dead_letters"][0]["redriven_as"]
            assert len(broker.deliveries) == 3
            assert said["text_plain"] == "sent, opaque opaque"                # sent, and refused by the server
            assert "is not this server's" in form_answer and "CSRF" in form_answer
            assert said["json"].startswith("error")                           # the preflight got no grant
            assert said["read_state"].startswith("error") and said["read_rebound"].startswith("error")

            page.goto(f"http://127.0.0.1:{port}/")                            # the dashboard, same browser
            page.wait_for_selector("#dlq >> text=dead")
            page.click("button[data-advance='10s']")
            wait_for(lambda: state(port)["clock"]["now_ms"] == before["clock"]["now_ms"] + 10_000)
            page.click("button.redrive[data-group='billing']")
            page.wait_for_selector("#dlq >> text=re-driven as")
            wait_for(lambda: len(broker.deliveries) == 4)                     # back in Orders, consumed again
            page.screenshot(path=str(ARTIFACTS / "csrf-dashboard-still-works.png"), full_page=True)
            browser.close()
    finally:
        site.close()
    broker.stop()
    err = broker.proc.stderr.read()
    assert "answered 403 to POST /api/clock/advance" in err.splitlines()[0]     # the text/plain fetch, refused
    # it, the preflight, the form and the rebound reads (a line each, rate-limited: one kind)
    assert told(err, "answered 4") >= 5
    assert "Traceback" not in err


def test_with_a_token_the_page_opened_once_with_it_works_and_without_it_gets_nothing(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed: run ./dev test, which installs it")
    from tests.support.processes import EmulatorProcess

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", "--http-token", "t0ken", http=True).start()
    try:
        port = server.http_port
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless=new"])
            page = browser.new_page()
            assert page.goto(f"http://127.0.0.1:{port}/").status == 401
            page.goto(f"http://127.0.0.1:{port}/?token=t0ken")                # once: the cookie is kept
            page.wait_for_selector("#clock >> text=2024-01-01")
            page.click("button[data-advance='1m']")
            token = {"Authorization": "Bearer t0ken"}
            wait_for(lambda: json.loads(urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{port}/api/state", headers=token), timeout=10).read())["clock"]["now_ms"]
                == 1704067260000)
            assert page.goto(f"http://127.0.0.1:{port}/api/state").status == 200     # the cookie, not the URL
            browser.close()
    finally:
        server.stop()

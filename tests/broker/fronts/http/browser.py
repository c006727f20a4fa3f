"""What the dashboard's browser tests share: Debian's Chromium through Playwright, the
screenshots kept in .test-artifacts/dashboard/ (not committed), and the walk every
dialect's test takes — one poison message from the search box to its dead letter and
back after a re-drive."""
from __future__ import annotations

import re
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
# (playwright and the http extra: ./dev test installs them; without them this fails, it does not skip)
from playwright import sync_api as playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[4] / ".test-artifacts" / "dashboard"


@contextmanager
def chromium_page(width: int = 1100, height: int = 900):
    """A page in headless Chromium; a script error on the page fails the test."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed: run ./dev test, which installs it")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    errors = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless=new"])
        page = browser.new_page(viewport={"width": width, "height": height})
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            yield page
        finally:
            browser.close()
    assert errors == [], errors


def shot(page, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def search(page, text: str) -> None:
    """Find a message the way a keyboard user does: "/" to the search box, type, Enter."""
    page.click("main")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def timeline(page) -> list[str]:
    return [t.strip() for t in page.locator("#timeline li").all_inner_texts()]


def follow_to_the_dead_letter_and_back(page, base: str, search_text: str, group: str, name: str, redelivered) -> dict:
    """From the search box to the message page (dead-lettered), to its group's ladder and
    the DLQ bar's list, re-drive it there, back to the message page: it is re-driven and
    delivered again (``redelivered()`` waits for the client to get it). Returns the
    message page's timeline before and after and the screenshots taken."""
    shots = {}
    page.goto(base + "/")
    page.wait_for_selector("#groups >> text=" + group)
    search(page, search_text)
    page.wait_for_selector("#timeline >> text=dead-lettered")
    assert page.url.split("#")[1].startswith("/message/")
    before = timeline(page)
    shots["message"] = shot(page, f"{name}-1-message-dead")
    # its dead-lettered line names the group: to the group's page and its ladder
    page.locator("#timeline li", has_text="dead-lettered").locator("a", has_text=group).first.click()
    page.wait_for_selector("#ladder svg rect[data-which='dead']")
    shots["group"] = shot(page, f"{name}-2-group-ladder")
    dead_bar = page.locator("#ladder rect[data-which='dead']")
    dead_bar.focus()
    page.keyboard.press("Enter")                       # a bar is a button: the keyboard opens it too
    page.wait_for_selector("#bar >> text=dead")
    row = page.locator("#bar tr", has_text="dead").first
    message_id = row.locator("a.id").first.inner_text()
    shots["dlq"] = shot(page, f"{name}-3-dlq-bar")
    page.click("button.redrive[data-group='%s']" % group)
    page.wait_for_selector("#bar >> text=re-driven as")
    redelivered()
    page.locator("#bar a.id", has_text=message_id).first.click()
    page.wait_for_selector("#timeline >> text=re-driven from the dead letter")
    page.wait_for_function("""() => { const items = [...document.querySelectorAll('#timeline li')].map(li => li.innerText);
        const at = items.findIndex(t => t.includes('re-driven from the dead letter'));
        return at >= 0 && items.slice(at).some(t => /delivered to|received by/.test(t)); }""", timeout=20_000)
    after = timeline(page)
    shots["back"] = shot(page, f"{name}-4-message-redriven")
    page.set_viewport_size({"width": 500, "height": 900})
    shots["narrow"] = shot(page, f"{name}-5-message-500px")
    page.set_viewport_size({"width": 1100, "height": 900})
    return {"before": before, "after": after, "shots": shots, "message_id": message_id}


def sources(lines: list[str]) -> set[str]:
    """The source badges of timeline lines ("store", "event log", "live")."""
    return {m.group(1) for line in lines for m in [re.search(r"(store|event log|live)", line)] if m}

#!/usr/bin/env python3
"""The dashboard and /metrics while the broker takes W2 load (issue 24's benchmark): p50 /
p99 latency of GET /metrics, GET /api/state and GET / polled every 50 ms from this
process, while a separate process runs W2 against the same `serve` (the SDK producing
with a window of 32 sends in flight, then a PushConsumer consuming with ack), side by side
in one run: without a browser, and with a headless Chromium (Debian's, via playwright)
showing the dashboard, which polls /api/state every second. Target: p99 < 100 ms.

Usage: python benchmarks/dashboard_latency.py [--n 50000] [--runs 2]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from helpers.bench_host import host_speed  # noqa: E402

PATHS = ("/metrics", "/api/state", "/")
POLL_S = 0.05


def load(address: str, n: int) -> None:
    """W2 from this (child) process: produce n with a window of 32, then consume them."""
    from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, Message, Producer, PushConsumer, RemoteBroker

    remote = RemoteBroker(address)
    rt = remote.runtime
    producer = Producer("w2_producer", remote).start()
    state = {"in_flight": 0, "ok": 0}

    def sent(result, error):
        state["in_flight"] -= 1
        state["ok"] += error is None
    t0 = time.perf_counter()
    for i in range(n):
        if state["in_flight"] >= 32:
            rt.run_until(lambda: state["in_flight"] < 32, "60s")
        state["in_flight"] += 1
        producer.send_async(Message("W2", b"x" * 100), sent)
    rt.run_until(lambda: state["in_flight"] == 0, "60s")
    t1 = time.perf_counter()
    seen = [0]
    consumer = PushConsumer("w2_consumer", remote, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                            listener=lambda msgs, ctx: seen.__setitem__(0, seen[0] + len(msgs)) or CONSUME_SUCCESS)
    consumer.subscribe("W2", "*")
    consumer.start()
    rt.run_until(lambda: seen[0] >= n, "300s")
    t2 = time.perf_counter()
    print(f"{n / (t1 - t0):.0f} {n / (t2 - t1):.0f} {state['ok']}", flush=True)
    consumer.shutdown()
    producer.shutdown()
    remote.close()


def poll(port: int, stop: threading.Event, out: dict) -> None:
    while not stop.is_set():
        for path in PATHS:
            t = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
                r.read()
            out.setdefault(path, []).append((time.perf_counter() - t) * 1000)
        stop.wait(POLL_S)


def one_run(n: int, browser: bool) -> dict:
    from tests.support.processes import EmulatorProcess

    tmp = Path(tempfile.mkdtemp(prefix="dash-"))
    server = EmulatorProcess(tmp / "store", http=True).start()
    pw = page = chromium = None
    try:
        subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "topic", "create", "W2", "--queues", "4",
                        "--server", server.address], check=True, stdout=subprocess.DEVNULL)
        if browser:
            from playwright.sync_api import sync_playwright
            pw = sync_playwright().start()
            chromium = pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                          args=["--no-sandbox", "--headless=new"])
            page = chromium.new_page()
            page.goto(f"http://127.0.0.1:{server.http_port}/")
        stop, lat = threading.Event(), {}
        poller = threading.Thread(target=poll, args=(server.http_port, stop, lat), daemon=True)
        poller.start()
        child = subprocess.run([sys.executable, __file__, "--load", server.address, "--n", str(n)],
                               capture_output=True, text=True, check=True)
        stop.set()
        poller.join(15)
        produce, consume, ok = (float(x) for x in child.stdout.split())
        if ok != n:
            raise AssertionError(f"only {ok:.0f} of {n} sends were acknowledged")
        return {"lat": lat, "produce": produce, "consume": consume}
    finally:
        if chromium is not None:
            chromium.close()
        if pw is not None:
            pw.stop()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--load", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.load:
        load(a.load, a.n)
        return
    if a.n < 1000 or a.runs < 1:
        ap.error("--n must be >= 1000 and --runs >= 1")
    print(f"dashboard and /metrics under W2 load (N={a.n:,}, produce window 32 then consume, in another process), "
          f"{a.runs} run(s) each, interleaved; host {host_speed()}")
    results = {False: [], True: []}
    for _ in range(a.runs):
        for browser in (False, True):
            results[browser].append(one_run(a.n, browser))
    for browser in (False, True):
        rs = results[browser]
        label = "with a browser on the dashboard" if browser else "no browser"
        print(f"  {label}: W2 produce {statistics.median(r['produce'] for r in rs):,.0f} msgs/s, consume "
              f"{statistics.median(r['consume'] for r in rs):,.0f} msgs/s")
        for path in PATHS:
            xs = [x for r in rs for x in r["lat"].get(path, [])]
            p99 = pct(xs, 0.99)
            print(f"    GET {path:<11} {len(xs):>5} requests  p50 {pct(xs, 0.5):6.1f} ms  p99 {p99:6.1f} ms  "
                  f"max {max(xs):6.1f} ms  ({'within' if p99 < 100 else 'NOT within'} the 100 ms target)")
    print(f"host after the run: {host_speed()}")


if __name__ == "__main__":
    main()

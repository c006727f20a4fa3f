#!/usr/bin/env python3
"""W2 plain throughput over loopback TCP: client_sdk on both ends, `serve` in between.

The server is a real `rocketmq-emulator serve` subprocess (real clock, a fresh store in
a temp dir per run, so both processes have a core each, as the peer benchmarks'
servers do). Per run:

  produce, one at a time   ``Producer.send`` (synchronous SEND_MESSAGE_V2), --sync-n msgs
  produce, window W        ``Producer.send_async`` with at most W (32) sends in flight,
                           N (50,000) messages of 100 bytes (peer-bench common.body_for)
  produce, batches of B    ``Producer.send_batch`` (SEND_BATCH_MESSAGE, B=32 messages a
                           request), N messages to another topic: what the broker takes
                           when the per-request cost is shared (not comparable with the
                           echo, which is one frame per message)
  server ceiling           the same N sends as pre-encoded SEND_MESSAGE_V2 frames over a
                           bare socket, window W, no SDK at all: what `serve` itself takes,
                           so the gap between it and the window phase is the SDK's cost
  consume with ack         a PushConsumer (pull batch 32, listener per message, returns
                           CONSUME_SUCCESS) until all N are consumed and the consumed
                           offsets are committed to the broker (RocketMQ's ack)

It verifies every send was SEND_OK, the consumer saw exactly the N bodies and the
committed offsets add up to N; prints msgs/s per phase with the CPU seconds the client
and the server used (which of them is the bottleneck), and in the same run the raw
asyncio frame echo floor (../shared/peer-bench/bench_asyncio_frames.py, run now with
this python, same N and window: one at a time vs one at a time, window vs window) and
RabbitMQ's W2 figures (bench_rabbitmq.py against a throw-away node started with
rabbitmq_local.sh, measured now; ``./dev bench w2_throughput`` installs Debian's
rabbitmq-server and pika. Without them it falls back to the figures RECORDED in
peers-results.md on another machine, and says so).

Usage: python benchmarks/w2_throughput.py [--n 50000] [--sync-n 10000] [--window 32]
       [--batch 32] [--runs 3] [--profile] [--no-peers]
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PEER = REPO.parent / "shared" / "peer-bench"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(PEER))

import common  # noqa: E402  (peer-bench: the shared W2 body)
from helpers.bench_host import cpu_seconds  # noqa: E402

from rocketmq_emulator.broker.fronts.remoting.protocol import FrameDecoder, RemotingCommand, RequestCode, encode  # noqa: E402
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, Message, Producer, PushConsumer, RemoteBroker, SendStatus  # noqa: E402
from rocketmq_emulator.client_sdk.api import BrokerAPI  # noqa: E402
from tests.support.processes import EmulatorProcess  # noqa: E402

TOPIC = "W2"
SYNC_TOPIC = "W2Sync"
BATCH_TOPIC = "W2Batch"
RAW_TOPIC = "W2Raw"
GROUP = "w2_consumer"
RABBIT_RECORDED = {"produce": 18_402, "consume": 15_868}   # fallback if the table cannot be read
# Debian's rabbitmq-server package puts its scripts here (rabbitmq_local.sh runs them from there).
RABBIT_LIBBIN = os.environ.get("RABBITMQ_LIBBIN", "/usr/lib/rabbitmq/bin")


class Phase:
    """Wall time and client / server CPU of one phase."""

    def __init__(self, server_pid: int, profile: cProfile.Profile | None) -> None:
        self.server_pid = server_pid
        self.profile = profile

    def __enter__(self):
        gc.collect()
        self.s0, self.c0 = cpu_seconds(self.server_pid), time.process_time()
        if self.profile:
            self.profile.enable()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        if self.profile:
            self.profile.disable()
        self.client_cpu = time.process_time() - self.c0
        self.server_cpu = cpu_seconds(self.server_pid) - self.s0


def raw_frames(n: int, bodies: list[bytes]) -> list[bytes]:
    """SEND_MESSAGE_V2 frames as the SDK would build them, encoded before the timer."""
    frames = []
    now = int(time.time() * 1000)
    for i, body in enumerate(bodies):
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None, body)
        cmd.ext_fields = {"a": "w2_raw", "b": RAW_TOPIC, "c": "TBW102", "d": "4", "e": str(i % 4), "f": "0",
                          "g": str(now), "h": "0", "i": "WAIT\x01true\x02UNIQ_KEY\x01%032X\x02" % i, "j": "0",
                          "k": "false", "m": "false", "n": "broker-a"}
        frames.append(encode(cmd))
    return frames


def send_raw_frames(port: int, frames: list[bytes], window: int) -> None:
    """Write the frames with at most ``window`` unanswered; every answer must be SUCCESS."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    decoder = FrameDecoder()
    sent = answered = 0
    n = len(frames)
    try:
        while answered < n:
            while sent < n and sent - answered < window:
                sock.sendall(frames[sent])
                sent += 1
            data = sock.recv(262144)
            if not data:
                raise AssertionError("the server closed the raw connection")
            for reply in decoder.feed(data):
                if reply.code != 0:
                    raise AssertionError(f"raw send answered {reply}")
                answered += 1
    finally:
        sock.close()


def run_w2(n: int, sync_n: int, window: int, batch: int, profiles: dict | None = None, brokers: int = 1) -> dict:
    """One W2 run against a fresh `serve` (``brokers`` > 1: `serve --brokers N`, the
    topics made on every broker beforehand, as auto-creation would put a topic on the
    first broker that takes a send only)."""
    bodies = [common.body_for(i) for i in range(n)]           # prepared outside the timers
    sync_msgs = [Message(SYNC_TOPIC, common.body_for(i)) for i in range(sync_n)]
    msgs = [Message(TOPIC, b) for b in bodies]
    tmp = Path(tempfile.mkdtemp(prefix="w2-"))
    server = EmulatorProcess(tmp / "store", brokers=brokers).start()
    if brokers > 1:
        import contextlib
        import io

        from rocketmq_emulator.broker.cli.main import main as cli

        for topic in (TOPIC, SYNC_TOPIC, BATCH_TOPIC):
            with contextlib.redirect_stdout(io.StringIO()):
                created = cli(["topic", "create", topic, "--queues", "4", "--server", server.address])
            if created != 0:
                raise AssertionError(f"topic create {topic} failed")
    remote = RemoteBroker(server.address)
    rt = remote.runtime
    prof = (lambda name: profiles.setdefault(name, cProfile.Profile())) if profiles is not None else (lambda name: None)
    out: dict = {}
    try:
        producer = Producer("w2_producer", remote).start()
        producer.send(Message(TOPIC, b"creates the topic"))   # route lookups and topic creation: not timed
        producer.send(Message(SYNC_TOPIC, b"creates the topic"))
        warm = 1
        if sync_n:
            send = producer.send
            with Phase(server.proc.pid, prof("produce_sync")) as ph:
                for m in sync_msgs:
                    if send(m).status is not SendStatus.SEND_OK:
                        raise AssertionError("a synchronous send was not SEND_OK")
            out["produce_sync"] = ph

        state = {"in_flight": 0, "ok": 0, "errors": []}

        def sent(result, error):
            state["in_flight"] -= 1
            if error is not None:
                state["errors"].append(error)
            elif result.status is SendStatus.SEND_OK:
                state["ok"] += 1

        def window_open():
            return state["in_flight"] < window

        send_async = producer.send_async
        with Phase(server.proc.pid, prof("produce_window")) as ph:
            for m in msgs:
                if state["in_flight"] >= window:
                    rt.run_until(window_open, "60s")
                state["in_flight"] += 1
                send_async(m, sent)
            rt.run_until(lambda: state["in_flight"] == 0, "60s")
        out["produce_window"] = ph
        if state["errors"] or state["ok"] != n:
            raise AssertionError(f"window sends: {state['ok']} ok of {n}, errors {state['errors'][:3]}")

        seen = []
        total = n + warm

        def listener(batch, context):
            seen.extend(m.body for m in batch)
            return CONSUME_SUCCESS

        consumer = PushConsumer(GROUP, remote, listener=listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                persist_consumer_offset_interval=3_600_000)
        consumer.subscribe(TOPIC, "*")
        with Phase(server.proc.pid, prof("consume")) as ph:
            consumer.start()
            if not rt.run_until(lambda: len(seen) >= total, "120s"):
                raise AssertionError(f"consumed only {len(seen)} of {total}")
            consumer.persist_offsets()                            # the ack: consumed offsets to the broker
            api = BrokerAPI(consumer.instance.transport)
            committed = sum(api.query_consumer_offset(GROUP, TOPIC, mq.queue_id, mq.broker_name)
                            for mq in consumer.assigned_queues(TOPIC))
        out["consume"] = ph
        frames = raw_frames(n + 1, [b"creates the topic"] + bodies)
        send_raw_frames(server.port, frames[:1], 1)               # not timed
        with Phase(server.proc.pid, None) as ph:
            send_raw_frames(server.port, frames[1:], window)
        out["server_ceiling"] = ph
        if batch:
            batches = [[Message(BATCH_TOPIC, b) for b in bodies[i:i + batch]] for i in range(0, n, batch)]
            send_batch = producer.send_batch
            with Phase(server.proc.pid, prof("produce_batch")) as ph:
                for chunk in batches:
                    if send_batch(chunk).status is not SendStatus.SEND_OK:
                        raise AssertionError("a batch send was not SEND_OK")
            out["produce_batch"] = ph
        if committed != total:
            raise AssertionError(f"committed offsets add up to {committed}, not {total}")
        if len(seen) != total or sorted(seen[i] for i in range(len(seen)) if seen[i] != b"creates the topic") \
                != sorted(bodies):
            raise AssertionError("the consumer did not see exactly the produced bodies")
        consumer.shutdown()
        producer.shutdown()
    finally:
        remote.close()
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    rows = {"n": n, "sync_n": sync_n}
    for name, ph in out.items():
        count = sync_n if name == "produce_sync" else n
        rows[name] = {"msgs_per_s": count / ph.wall, "wall_s": ph.wall, "client_cpu_s": ph.client_cpu,
                      "server_cpu_s": ph.server_cpu}
    return rows


def raw_echo(n: int, window: int, runs: int) -> dict:
    """bench_asyncio_frames.py, run now: one-at-a-time and window req/s (medians)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "echo.json"
        subprocess.run([sys.executable, str(PEER / "bench_asyncio_frames.py"), "--n", str(n), "--runs", str(runs),
                        "--window", str(window), "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
        summary = json.loads(out.read_text())["summary"]
    return {"seq": summary["seq_req_per_s"]["median"], "window": summary["pipelined_req_per_s"]["median"]}


def rabbitmq(n: int, runs: int) -> tuple[dict, str]:
    """RabbitMQ W2 (classic durable queue, persistent, confirms window 100, prefetch 100),
    measured now by the peer scripts on a throw-away node when Debian's rabbitmq-server
    and pika are here (``./dev bench`` installs both); else the figures RECORDED in
    peers-results.md, which come from another machine."""
    why_not = _rabbit_missing()
    if why_not is None:
        try:
            figures = _rabbit_now(n, runs)
            return figures, f"{figures.pop('versions')}, measured now on this machine, median of {runs}"
        except (subprocess.SubprocessError, OSError, KeyError, ValueError) as exc:
            stderr = (getattr(exc, "stderr", None) or b"").decode(errors="replace").strip().splitlines()
            why_not = f"the live run failed ({type(exc).__name__}: {exc}{'; ' + stderr[-1] if stderr else ''})"
    text = (PEER / "peers-results.md").read_text() if (PEER / "peers-results.md").exists() else ""
    m = re.search(r"RabbitMQ classic durable queue[^|]*\|\s*W2, confirms window 100\s*\|\s*50,000\s*\|"
                  r"\s*produce ([\d,]+)[^|]*consume ([\d,]+)", text)
    figures = ({"produce": float(m.group(1).replace(",", "")), "consume": float(m.group(2).replace(",", ""))}
               if m else dict(RABBIT_RECORDED))
    return figures, (f"RabbitMQ 3.10.8 RECORDED in peers-results.md on another machine, not re-measured: "
                     f"{why_not}; the ratios below are not like-for-like")


def _rabbit_missing() -> str | None:
    if not Path(RABBIT_LIBBIN, "rabbitmq-server").exists():
        return "rabbitmq-server is not installed (./dev bench installs it)"
    try:
        import pika  # noqa: F401
    except ImportError:
        return "pika is not installed (./dev bench installs the bench extra)"
    return None


def _rabbit_now(n: int, runs: int) -> dict:
    """Start a node on 127.0.0.1:5673 (state in a temp dir), run bench_rabbitmq.py w2,
    stop the node whatever happened."""
    script = str(PEER / "rabbitmq_local.sh")
    with tempfile.TemporaryDirectory(prefix="w2-rabbitmq-") as tmp:
        node_dir, out = Path(tmp) / "node", Path(tmp) / "rabbit.json"
        try:
            subprocess.run(["sh", script, "start", str(node_dir)], check=True, timeout=180,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            subprocess.run([sys.executable, str(PEER / "bench_rabbitmq.py"), "w2", "--n", str(n),
                            "--confirms", "window", "--runs", str(runs), "--json", str(out)],
                           check=True, timeout=1800, stdout=subprocess.DEVNULL)
            doc = json.loads(out.read_text())
        finally:
            subprocess.run(["sh", script, "stop", str(node_dir)], timeout=120,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    summary = doc["summary"]
    versions = re.search(r"rabbitmq \S+ pika \S+", doc.get("bench", ""))
    return {"produce": summary["produce_msgs_per_s"]["median"], "consume": summary["consume_msgs_per_s"]["median"],
            "versions": versions.group(0) if versions else "versions unknown"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50000, help="messages in the window-produce and consume phases")
    ap.add_argument("--sync-n", type=int, default=10000, help="messages in the one-at-a-time produce phase (0: skip)")
    ap.add_argument("--window", type=int, default=32, help="sends in flight (the echo floor uses the same window)")
    ap.add_argument("--batch", type=int, default=32, help="messages per SEND_BATCH_MESSAGE in the extra batch "
                                                         "phase (0: skip it)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile the client in one run, print each phase's top")
    ap.add_argument("--no-peers", action="store_true", help="skip the echo floor and the RabbitMQ figures")
    a = ap.parse_args()
    if a.n < 1 or a.window < 1 or a.sync_n < 0 or a.batch < 0 or a.runs < 1:
        ap.error("--n, --window and --runs must be >= 1, --sync-n and --batch >= 0")
    if a.profile:
        profiles: dict = {}
        run_w2(a.n, a.sync_n, a.window, a.batch, profiles)
        for name, prof in profiles.items():
            print(f"== client profile: {name}")
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
        return

    rows = [run_w2(a.n, a.sync_n, a.window, a.batch) for _ in range(a.runs)]
    phases = [p for p in ("produce_sync", "produce_window", "server_ceiling", "consume", "produce_batch")
              if p in rows[0]]
    med = {p: {k: statistics.median(r[p][k] for r in rows) for k in rows[0][p]} for p in phases}
    print(f"W2 over loopback TCP: client_sdk (RemoteBroker) -> `rocketmq-emulator serve` subprocess (real clock, "
          f"store on disk), 100-byte bodies, {a.runs} run(s), median (min-max), python {sys.version.split()[0]}")
    labels = {"produce_sync": f"produce, one at a time (send), {a.sync_n:,} msgs",
              "produce_window": f"produce, window {a.window} (send_async), {a.n:,} msgs",
              "server_ceiling": f"  server ceiling: raw pre-encoded frames, window {a.window}, no SDK",
              "consume": f"consume with ack (PushConsumer, offsets committed), {a.n:,} msgs",
              "produce_batch": f"produce, send_batch of {a.batch} (extra, not like-for-like), {a.n:,} msgs"}
    for p in phases:
        rates = [r[p]["msgs_per_s"] for r in rows]
        m = med[p]
        print(f"  {labels[p]:<70} {m['msgs_per_s']:>8,.0f} msgs/s ({min(rates):,.0f}-{max(rates):,.0f}); "
              f"CPU client {m['client_cpu_s']:.2f} s, server {m['server_cpu_s']:.2f} s "
              f"(busy {m['server_cpu_s'] / m['wall_s']:.0%}) in {m['wall_s']:.2f} s wall")
    if "server_ceiling" in med:
        w, c = med["produce_window"]["msgs_per_s"], med["server_ceiling"]["msgs_per_s"]
        print(f"  the SDK's window sends reach {w / c:.0%} of what `serve` takes from a bare socket")
    if a.no_peers:
        return
    echo = raw_echo(a.n, a.window, a.runs)
    print(f"raw asyncio frame echo (bench_asyncio_frames.py, measured now, N={a.n:,}, {a.runs} run(s)): "
          f"one at a time {echo['seq']:,.0f} req/s, window {a.window} {echo['window']:,.0f} req/s")
    if "produce_sync" in med:
        r = med["produce_sync"]["msgs_per_s"] / echo["seq"]
        print(f"  produce one at a time / echo one at a time = {r:.0%}  (target >= 50%: {'met' if r >= .5 else 'NOT met'})")
    r = med["produce_window"]["msgs_per_s"] / echo["window"]
    print(f"  produce window {a.window} / echo window {a.window}       = {r:.0%}  "
          f"(target >= 50%: {'met' if r >= .5 else 'NOT met'})")
    if "server_ceiling" in med:
        r = med["server_ceiling"]["msgs_per_s"] / echo["window"]
        print(f"  server ceiling / echo window {a.window}          = {r:.0%}  (no SDK: the broker's own bound)")
    r = med["consume"]["msgs_per_s"] / echo["window"]
    print(f"  consume / echo window {a.window}                 = {r:.0%}  "
          f"(pulls of 32 messages: not one request per message)")
    rabbit, how = rabbitmq(a.n, a.runs)
    print(f"RabbitMQ classic durable queue, persistent, confirms window 100, prefetch 100 ({how}): "
          f"produce {rabbit['produce']:,.0f}, consume {rabbit['consume']:,.0f} msgs/s")
    for p, key in (("produce_window", "produce"), ("consume", "consume")):
        x = med[p]["msgs_per_s"] / rabbit[key]
        print(f"  {p:<15} {x:.2f}x RabbitMQ  (target >= 1x: {'met' if x >= 1 else 'NOT met'})")


if __name__ == "__main__":
    main()

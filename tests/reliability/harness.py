"""kill -9 under load: one run of `rocketmq-emulator serve` in a subprocess, real clients
over TCP, a SIGKILL at a random moment, a restart on the same data directory, then the
books: was every acknowledged message kept, and did every group resume without loss?

A run: the broker starts with a broker.conf (flushDiskType, short delay levels so retries
come within the run); a Producer (namesrv_addr) sends from a thread, keeping each
acknowledged send's UNIQ_KEY and offsetMsgId; a PushConsumer fails about 10 % of first
deliveries (RECONSUME_LATER: the retry comes back through %RETRY%). At a random moment
the broker gets SIGKILL and is started again on the same port and directory; the clients
stay up (their connections break and reconnect, as an application's would) and the
producer keeps sending a little longer. Then:

* lost: acknowledged messages that a fresh consumer group, reading the topic from
  offset 0, never sees;
* reused: offsetMsgIds acknowledged for two different messages (the restarted broker
  gave a lost message's offset to another one);
* not resumed: acknowledged messages the failing group never consumed successfully.

Used by tests/reliability/test_kill9.py (a few runs) and benchmarks/kill9_table.py (the
table for many runs, on this tree or another).
"""
from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, RECONSUME_LATER, Message, MQClientError, Producer,
                                          PushConsumer, RemotingError)
from tests.support.processes import free_port, stop_process, wait_for, wait_port

__all__ = ["KillRun", "run_once", "serve_command"]

TOPIC = "KillTopic"
FAIL_SHARE = 0.10            # of first deliveries, RECONSUME_LATER
# Retries within the run: level 3 (the first retry) is 300 ms here, not 10 s.
DELAY_LEVELS = " ".join(["100ms", "200ms"] + ["300ms"] * 16)


def serve_command(port: int, data_dir: Path, conf: Path) -> list[str]:
    # (only the remoting port: a fixed one here, and the other fronts' default ports may be
    # taken on this machine — by a real Pulsar, say — or by another run)
    return [sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--port", str(port),
            "--data-dir", str(data_dir), "--config", str(conf), "--log-level", "WARNING", "--no-grpc", "--no-pulsar", "--no-http"]


class KillRun:
    """One run's books (see the module doc for what each count means)."""

    def __init__(self, mode: str, kill_after_s: float) -> None:
        self.mode = mode
        self.kill_after_s = kill_after_s
        self.acked = self.acked_before_kill = 0
        self.lost = self.reused = self.not_resumed = 0
        self.samples: list[str] = []         # a few lost UNIQ_KEYs, for the report

    def row(self) -> str:
        return (f"{self.mode:11} kill after {self.kill_after_s:4.2f}s  acked {self.acked:6}  lost {self.lost:5}  "
                f"reused ids {self.reused:5}  not resumed {self.not_resumed:5}")


class _Broker:
    def __init__(self, work: Path, mode: str, env: dict | None) -> None:
        self.port = free_port()
        self.data = work / "store"
        self.conf = work / "broker.conf"
        self.conf.write_text(f"flushDiskType={mode}\nmessageDelayLevel={DELAY_LEVELS}\n")
        self.log = work / "serve.log"
        self.env = env
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(serve_command(self.port, self.data, self.conf), stdout=subprocess.DEVNULL,
                                         stderr=log, env=self.env)
        try:
            wait_port(self.port, timeout=30)
        except TimeoutError:
            self.stop()
            raise RuntimeError(f"serve did not listen on {self.port}: {self.log.read_text()[-2000:]}") from None

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        stop_process(self.proc, grace=20)


def _fails(uniq: str, attempt: int) -> bool:
    """About FAIL_SHARE of first deliveries fail, decided by the message (so a redelivery
    of the same attempt fails again, as a deterministic bug would); retries succeed."""
    return attempt == 0 and zlib.crc32(uniq.encode()) % 1000 < FAIL_SHARE * 1000


def run_once(work: Path, mode: str, rng: random.Random, *, kill_window_s: tuple[float, float] = (0.5, 2.5),
             after_restart_s: float = 0.5, settle_s: float = 60.0, env: dict | None = None) -> KillRun:
    work.mkdir(parents=True, exist_ok=True)
    run = KillRun(mode, round(rng.uniform(*kill_window_s), 2))
    broker = _Broker(work, mode, env)
    broker.start()
    acked: dict[str, str] = {}                  # UNIQ_KEY -> offsetMsgId
    ids: dict[str, str] = {}                    # offsetMsgId -> UNIQ_KEY (the first one acknowledged)
    succeeded: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def listener(msgs, ctx):
        for m in msgs:
            if _fails(m.msg_id, m.reconsume_times):
                return RECONSUME_LATER
        with lock:
            succeeded.update(m.msg_id for m in msgs)
        return CONSUME_SUCCESS

    def send_loop(producer: Producer) -> None:
        i = 0
        while not stop.is_set():
            try:
                res = producer.send(Message(TOPIC, b"kill-%08d" % i + bytes(200)))
            except (MQClientError, RemotingError):      # the broker is down: not acknowledged
                time.sleep(0.02)
                continue
            i += 1
            with lock:
                acked[res.msg_id] = res.offset_msg_id
                first = ids.setdefault(res.offset_msg_id, res.msg_id)
                if first != res.msg_id:
                    run.reused += 1

    producer = consumer = fresh = None
    try:
        producer = Producer("KillProducer", namesrv_addr=broker.address, send_msg_timeout=1000,
                            retry_times_when_send_failed=0).start()
        producer.send(Message(TOPIC, b"creates the topic"))
        # (a restarted broker knows the group again at its next heartbeat: 1 s, not 30 s)
        consumer = PushConsumer("KillGroup", namesrv_addr=broker.address, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                listener=listener, heartbeat_broker_interval=1000)
        consumer.subscribe(TOPIC, "*").start()
        sender = threading.Thread(target=send_loop, args=(producer,), daemon=True)
        sender.start()
        time.sleep(run.kill_after_s)
        broker.kill()
        with lock:
            run.acked_before_kill = len(acked)
        broker.start()
        # (the restarted broker answers once its store is open: on a loaded host that can
        # take longer than after_restart_s, so wait for its first acknowledgement, bounded)
        try:
            wait_for(lambda: len(acked) > run.acked_before_kill, timeout=settle_s)
        except AssertionError:
            pass
        time.sleep(after_restart_s)
        stop.set()
        sender.join(30)
        with lock:
            want = set(acked)
        run.acked = len(want)
        seen: set[str] = set()

        def read_all(msgs, ctx):
            with lock:
                seen.update(m.msg_id for m in msgs)
            return CONSUME_SUCCESS

        fresh = PushConsumer("KillCheck", namesrv_addr=broker.address, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                             listener=read_all)
        fresh.subscribe(TOPIC, "*").start()
        try:
            wait_for(lambda: want <= seen, timeout=settle_s)
        except AssertionError:
            pass
        try:
            wait_for(lambda: want <= succeeded, timeout=settle_s)
        except AssertionError:
            pass
        with lock:
            lost = want - seen
            run.lost = len(lost)
            run.not_resumed = len(want - succeeded)
            run.samples = sorted(lost)[:5]
    finally:
        stop.set()
        for client in (fresh, consumer, producer):
            if client is not None:
                try:
                    client.shutdown()
                except Exception:       # a client of a broker being torn down: its error is moot
                    pass
        broker.stop()
    return run


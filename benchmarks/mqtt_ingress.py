"""MQTT ingress throughput: messages/s from an aiomqtt publisher through mosquitto into
the emulator's store, beside mosquitto's own QoS 1 publish -> subscribe rate with aiomqtt,
both one publish at a time (each awaits its PUBACK), in one run.

    python benchmarks/mqtt_ingress.py [--n 5000]

Needs Debian's mosquitto (./dev test installs it). Everything binds 127.0.0.1.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiomqtt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode  # noqa: E402
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, encode  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mosquitto(workdir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    conf = workdir / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n"
                    "log_type error\nmax_inflight_messages 0\nmax_queued_messages 100000\nset_tcp_nodelay true\n")
    proc = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", str(conf)],
                            stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("mosquitto did not start")


async def mosquitto_baseline(port: int, n: int) -> float:
    payload = b"x" * 100
    async with aiomqtt.Client("127.0.0.1", port, identifier="bench-sub") as sub, \
            aiomqtt.Client("127.0.0.1", port, identifier="bench-pub") as pub:
        await sub.subscribe("bench/t", qos=1)
        got = 0

        async def receive():
            nonlocal got
            async for _ in sub.messages:
                got += 1
                if got == n:
                    return
        t0 = time.perf_counter()
        rx = asyncio.create_task(receive())
        for _ in range(n):
            await pub.publish("bench/t", payload, qos=1)
        await asyncio.wait_for(rx, 60)
        return n / (time.perf_counter() - t0)


def stored_count(port: int, topic: str) -> int:
    total = 0
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        dec = FrameDecoder()
        for q in range(4):
            req = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": q})
            s.sendall(encode(req))
            while True:
                cmds = dec.feed(s.recv(65536))
                if cmds:
                    total += int(cmds[0].ext_fields["offset"])
                    break
    return total


async def emulator_ingress(mqtt_port: int, emu_port: int, n: int) -> float:
    payload = b"x" * 100
    async with aiomqtt.Client("127.0.0.1", mqtt_port, identifier="bench-dev") as dev:
        # warm up: the bridge must be subscribed before timing starts
        for _ in range(100):
            await dev.publish("rocketmq/Warmup", b"w", qos=1)
            await asyncio.sleep(0.05)
            if stored_count(emu_port, "Warmup"):
                break
        t0 = time.perf_counter()
        for _ in range(n):
            await dev.publish("rocketmq/Bench", payload, qos=1)
        while stored_count(emu_port, "Bench") < n:
            await asyncio.sleep(0.01)
        return n / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        mosq, mport = start_mosquitto(work)
        emu = subprocess.Popen([sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--port", "0", "--data-dir",
                                str(work / "store"), "--log-level", "WARNING", "--mqtt", f"mqtt://127.0.0.1:{mport}"],
                               stdout=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            line = emu.stdout.readline()
            eport = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
            base = asyncio.run(mosquitto_baseline(mport, args.n))
            ours = asyncio.run(emulator_ingress(mport, eport, args.n))
        finally:
            emu.terminate()
            emu.wait(15)
            mosq.terminate()
            mosq.wait(10)
    print(f"MQTT QoS 1, one publish at a time, {args.n} messages of 100 bytes, 127.0.0.1:")
    print(f"  mosquitto publish->subscribe (aiomqtt both ends): {base:10,.0f} msgs/s")
    print(f"  emulator ingress (publish->stored, PUBACK after flush): {ours:10,.0f} msgs/s")
    print(f"  ratio emulator / mosquitto: {ours / base:.2f}  (target >= 0.50)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The ``rocketmq-emulator`` command: serve, clock, snapshot, analyze, simulate.

Errors are one readable line on stderr and a non-zero exit code (2 for bad usage or
input, 1 for a failure while running).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from pathlib import Path

__all__ = ["main"]

DEFAULT_DATA_DIR = Path.home() / ".rocketmq-emulator" / "store"


def _fail(msg: str, code: int = 2) -> int:
    print(f"rocketmq-emulator: error: {msg}", file=sys.stderr)
    return code


# -- serve ------------------------------------------------------------------------------
def _limit(kind):
    """An argparse type: a number >= 0 of ``kind`` (0 turns the limit off)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
        if not value >= 0:
            raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
        return value
    return parse


def _serve_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rocketmq-emulator serve",
                                description="Run the name server + broker on one port.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind and advertise (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9876, help="port (default 9876; 0 picks a free one)")
    p.add_argument("--data-dir", default=None, help=f"store directory (default {DEFAULT_DATA_DIR})")
    p.add_argument("--config", default=None, help="a RocketMQ broker.conf whose keys are honoured")
    p.add_argument("--message-delay-level", default=None, help='delay table, e.g. "1s 5s 10s" (messageDelayLevel)')
    p.add_argument("--clock", choices=("real", "virtual"), default="real",
                   help="real wall clock, or a virtual one moved by `rocketmq-emulator clock advance`")
    p.add_argument("--max-frame-size", type=int, default=16 * 1024 * 1024, help="largest accepted frame in bytes")
    p.add_argument("--max-connections", type=_limit(int), default=1000,
                   help="connections open at once; one more is closed as it is accepted (default 1000; 0 = no limit)")
    p.add_argument("--idle-timeout", type=_limit(float), default=None, metavar="SECONDS",
                   help="close a connection silent this long, one with a held pull excepted (default 120, "
                        "or serverChannelMaxIdleTimeSeconds from --config; 0 = never)")
    p.add_argument("--frame-timeout", type=_limit(float), default=30.0, metavar="SECONDS",
                   help="close a connection whose frame is unfinished this long after its first byte "
                        "(default 30; 0 = never)")
    p.add_argument("--max-outgoing-buffer", type=_limit(int), default=16 * 1024 * 1024, metavar="BYTES",
                   help="unread reply bytes at which a connection's requests wait until it reads "
                        "(default 16777216; 0 = no limit)")
    p.add_argument("--mqtt", default=None, help="mqtt://[USER[:PASS]@]HOST:PORT of an MQTT broker to bridge to")
    p.add_argument("--mqtt-username", default=None)
    p.add_argument("--mqtt-password", default=None)
    p.add_argument("--mqtt-client-id", default=None, help="MQTT client identifier (default rocketmq-emulator)")
    p.add_argument("--mqtt-prefix", default=None, help="ingress topic prefix (default rocketmq)")
    p.add_argument("--mqtt-egress", action="append", default=[], metavar="TOPIC",
                   help="forward TOPIC to rocketmq-out/TOPIC (repeatable)")
    p.add_argument("--log-level", default="INFO")
    return p


def serve_main(argv: list[str]) -> int:
    args = _serve_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from rocketmq_emulator.delay_scheduler import SystemClock, VirtualClock

    from .config import BrokerConfig, ConfigError, load_broker_conf
    from .core import BrokerCore

    try:
        cfg = load_broker_conf(args.config) if args.config else BrokerConfig()
        # No event record is kept: nothing in a serve process reads one, and it would grow
        # with every message; the MQTT bridge subscribes to the kinds it publishes.
        overrides = {"broker_ip": args.host, "record_events": False}
        if args.message_delay_level:
            overrides["message_delay_level"] = args.message_delay_level
        cfg = cfg.replace(**overrides)
        cfg.validate()
    except ConfigError as exc:
        return _fail(str(exc))
    data_dir = Path(args.data_dir or cfg.store_path_root_dir or DEFAULT_DATA_DIR).expanduser()
    mqtt = None
    if args.mqtt:
        from .adapters.mqtt_bridge import parse_mqtt_url

        try:
            mqtt = parse_mqtt_url(args.mqtt, username=args.mqtt_username, password=args.mqtt_password,
                                  client_id=args.mqtt_client_id, topic_prefix=args.mqtt_prefix,
                                  egress_topics=args.mqtt_egress or None)
        except ValueError as exc:
            return _fail(str(exc))
    args.mqtt_settings = mqtt
    clock = VirtualClock() if args.clock == "virtual" else SystemClock()
    try:
        return asyncio.run(_serve(cfg, data_dir, clock, args))
    except KeyboardInterrupt:
        return 0


async def _serve(cfg, data_dir: Path, clock, args) -> int:
    from rocketmq_emulator.store import StoreError

    from .adapters.tcp import RemotingServer
    from .core import BrokerCore

    # Bind first so the advertised address carries the real port (``--port 0``).
    probe_port = args.port
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        core = BrokerCore.open(data_dir, clock, cfg.replace(listen_port=probe_port or 0))
    except (StoreError, OSError) as exc:
        print(f"rocketmq-emulator: error: cannot open store {data_dir}: {exc}", file=sys.stderr)
        return 2
    idle = args.idle_timeout if args.idle_timeout is not None else cfg.server_channel_max_idle_time_seconds
    server = RemotingServer(core, args.host, args.port, max_frame_size=args.max_frame_size,
                            max_connections=args.max_connections, idle_timeout_s=idle,
                            frame_timeout_s=args.frame_timeout, max_outgoing_buffer=args.max_outgoing_buffer)
    try:
        await server.start()
    except OSError as exc:
        core.close()
        print(f"rocketmq-emulator: error: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    core.config.listen_port = server.port
    core.store_host = (core.config.broker_ip, server.port)
    bridge = None
    if args.mqtt_settings is not None:
        from .adapters.mqtt_bridge import MqttBridge

        bridge = MqttBridge(core, args.mqtt_settings, server.after_activity)
        bridge.start()
    print(f"rocketmq-emulator listening on {server.address} (name server + broker); "
          f"store {data_dir}; clock {args.clock}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except NotImplementedError:
            pass
    await stop.wait()
    if bridge is not None:
        await bridge.stop()
    await server.stop()
    core.close()
    print("rocketmq-emulator stopped; store flushed", flush=True)
    return 0


# -- clock ------------------------------------------------------------------------------
def clock_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="rocketmq-emulator clock", description="Move a virtual-clock server's time.")
    sub = p.add_subparsers(dest="action", required=True)
    adv = sub.add_parser("advance", help="advance the clock by DURATION (500ms, 10s, 2h)")
    adv.add_argument("duration")
    adv.add_argument("--server", default="127.0.0.1:9876", help="HOST:PORT of `rocketmq-emulator serve`")
    adv.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the reply")
    args = p.parse_args(argv)
    from rocketmq_emulator.delay_scheduler import DelayLevelError, parse_duration

    try:
        parse_duration(args.duration)
    except DelayLevelError as exc:
        return _fail(str(exc))
    from .protocol import EMULATOR_CLOCK_ADVANCE, RemotingCommand

    req = RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"duration": args.duration})
    reply = _call_server(args.server, req, args.timeout)
    if isinstance(reply, int):
        return reply
    print(f"clock now {reply.header('nowMillis')} ms")
    return 0


# -- topic ------------------------------------------------------------------------------
def topic_main(argv: list[str]) -> int:
    """``topic create``: UPDATE_AND_CREATE_TOPIC, what ``mqadmin updateTopic`` sends.
    Clients without the Java client's TBW102 fallback (ali-ons) need their topics made
    before they send."""
    p = argparse.ArgumentParser(prog="rocketmq-emulator topic", description="Create or update a topic on a server.")
    sub = p.add_subparsers(dest="action", required=True)
    create = sub.add_parser("create", help="create (or update) TOPIC, as mqadmin updateTopic")
    create.add_argument("topic")
    create.add_argument("--queues", type=int, default=8, help="read and write queue count (default 8)")
    create.add_argument("--perm", type=int, default=6, choices=(2, 4, 6), help="2 write, 4 read, 6 both")
    create.add_argument("--order", action="store_true", help="an ordered topic")
    create.add_argument("--server", default="127.0.0.1:9876", help="HOST:PORT of `rocketmq-emulator serve`")
    create.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the reply")
    args = p.parse_args(argv)
    if not 1 <= args.queues <= 1024:
        return _fail(f"--queues must be 1..1024, got {args.queues}")
    from .protocol import RemotingCommand, RequestCode

    req = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": args.topic, "readQueueNums": args.queues, "writeQueueNums": args.queues,
        "perm": args.perm, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": args.order})
    reply = _call_server(args.server, req, args.timeout)
    if isinstance(reply, int):
        return reply
    print(f"topic {args.topic} created: {args.queues} queues, perm {args.perm}")
    return 0


def _call_server(server: str, req, timeout: float):
    """Send one request to ``server`` (HOST:PORT) and return its successful reply, or
    the exit code after printing one error line."""
    from .protocol import ProtocolError
    from .protocol.codec import FrameDecoder, encode

    host, _, port = server.rpartition(":")
    if not host or not port.isdigit():
        return _fail(f"--server must be HOST:PORT, got {server!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            sock.sendall(encode(req))
            decoder = FrameDecoder()
            while True:
                data = sock.recv(65536)
                if not data:
                    return _fail(f"{server} closed the connection", 1)
                for cmd in decoder.feed(data):
                    if cmd.opaque == req.opaque:
                        if cmd.code != 0:
                            return _fail(cmd.remark or f"refused with code {cmd.code}", 1)
                        return cmd
    except (OSError, ProtocolError) as exc:
        return _fail(f"cannot reach {server}: {exc}", 1)


# -- dispatch -----------------------------------------------------------------------------
_USAGE = """usage: rocketmq-emulator COMMAND [options]

commands:
  serve      run the name server + broker (RocketMQ 4.x remoting protocol)
  clock      move a virtual-clock server's time: clock advance 2h --server HOST:PORT
  topic      create a topic on a server (mqadmin updateTopic): topic create NAME --queues 4
  snapshot   take a consistent snapshot of a store: snapshot --data-dir DIR --out SNAP
  analyze    Spark analysis of a snapshot: analyze SNAP --out DIR [--master URL]
  simulate   deterministic simulation run: simulate --seed N --messages M --duration 6h --out DIR

run `rocketmq-emulator COMMAND --help` for a command's options"""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "serve":
        return serve_main(rest)
    if cmd == "clock":
        return clock_main(rest)
    if cmd == "topic":
        return topic_main(rest)
    if cmd in ("snapshot", "analyze"):
        try:
            from rocketmq_emulator.spark_analytics import cli as analytics_cli
        except ImportError as exc:
            return _fail(f"{cmd} needs the analytics extra (pip install 'rocketmq-emulator[analytics]'): {exc}")
        return getattr(analytics_cli, f"{cmd}_main")(rest)
    if cmd == "simulate":
        try:
            from rocketmq_emulator.client_sdk.simulation.cli import simulate_main
        except ImportError:
            return _fail("simulate is not available in this build yet")
        return simulate_main(rest)
    return _fail(f"unknown command {cmd!r}; run `rocketmq-emulator --help`")


if __name__ == "__main__":
    sys.exit(main())

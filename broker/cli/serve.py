"""``rocketmq-emulator serve``: the options, and the wiring of one core (or a cluster) with
its store, clock and fronts — remoting, gRPC, Pulsar, HTTP, MQTT — on one asyncio loop."""
from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import shutil
import signal
import socket
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from ..adapters.connection_guard import DEFAULT_MAX_PENDING_BYTES
from .common import (LONG_MAX, CommandParser, UsageError, fail, int_in_range, iso_utc, missing_extra, quoted,
                     usage_error, whole_number)

__all__ = ["serve_main", "DEFAULT_DATA_DIR", "DEFAULT_DATA_DIR_TEXT"]

DEFAULT_DATA_DIR = Path.home() / ".rocketmq-emulator" / "store"
DEFAULT_DATA_DIR_TEXT = "~/.rocketmq-emulator/store"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# A frame holds a message of up to maxMessageSize (4 MiB) plus its header; below 64 KiB
# ordinary requests would be refused, and the length field is a signed 32-bit int.
FRAME_SIZE_RANGE = (64 * 1024, 1024 ** 3)
log = logging.getLogger("broker.serve")


def _limit(kind):
    """An argparse type: a number >= 0 of ``kind`` (0 turns the limit off), at most a
    Java long (a count, bytes or seconds: none is wider)."""
    def parse(text: str):
        try:
            value = kind(text) if kind is not int else whole_number(text)
        except ValueError:
            value = None
        if value is not None and value > LONG_MAX:
            raise argparse.ArgumentTypeError(f"must be at most {LONG_MAX}, got {quoted(text)}")
        if value is None or not value >= 0:
            raise argparse.ArgumentTypeError(f"expected a number >= 0, got {quoted(text)}")
        return value
    return parse


def _serve_parser() -> argparse.ArgumentParser:
    from ..fronts.mqtt.bridge import MqttSettings

    mqtt_defaults = MqttSettings()
    p = CommandParser(prog="rocketmq-emulator serve",
                      description="Run the name server + broker on one port. The store lives in --data-dir "
                                  f"(default {DEFAULT_DATA_DIR_TEXT}) and is kept between runs; --in-memory "
                                  "keeps nothing on disk.")
    p.add_argument("--host", default="127.0.0.1", help="address to bind and advertise")
    p.add_argument("--port", type=int_in_range(0, 65535, "a port number"), default=9876,
                   help="one port for name-server and broker requests; 0 picks a free one (stdout says which "
                        "in a line `listening HOST:PORT remoting`)")
    p.add_argument("--brokers", type=int_in_range(1, 26, "a number of brokers"), default=1,
                   help="brokers broker-a, broker-b, ... in this process on one clock behind one name server; "
                        "broker-a keeps --port (with the name server) and the data dir's root, the others take "
                        "free ports (lines `listening HOST:PORT broker-b`) and stores in DATA_DIR/brokers/NAME")
    p.add_argument("--data-dir", default=None,
                   help=f"store directory (default: {DEFAULT_DATA_DIR_TEXT}, here {DEFAULT_DATA_DIR}, "
                        "or storePathRootDir from --config)")
    p.add_argument("--in-memory", action="store_true",
                   help="keep the store in memory: nothing is written to disk, all is gone when the server stops")
    p.add_argument("--config", default=None, help="a RocketMQ broker.conf whose keys are honoured")
    p.add_argument("--message-delay-level", default=None,
                   help='delay table, e.g. "1s 5s 10s" (messageDelayLevel; default: the 18 levels 1s ... 2h)')
    p.add_argument("--clock", choices=("real", "virtual"), default="real",
                   help="real wall clock, or a virtual one moved by `rocketmq-emulator clock advance` "
                        "(kept in the store across restarts)")
    lo, hi = FRAME_SIZE_RANGE
    p.add_argument("--max-frame-size", type=int_in_range(lo, hi, "a number of bytes"), default=16 * 1024 * 1024,
                   metavar="BYTES", help=f"largest accepted frame, {lo} to {hi} bytes; a larger one closes its "
                                         "connection")
    p.add_argument("--max-connections", type=_limit(int), default=1000,
                   help="connections open at once, per front (remoting, each broker's own, gRPC, Pulsar, HTTP); "
                        "at the limit the oldest connection that never sent a request makes room, else a new one "
                        "is closed as it is accepted (0 = no limit)")
    p.add_argument("--handshake-timeout", type=_limit(float), default=10.0, metavar="SECONDS",
                   help="close a connection that has not begun within this long of its accept: no byte "
                        "(remoting), no CONNECT (Pulsar), no whole request head (HTTP), no HTTP/2 handshake "
                        "(gRPC) (0 = never)")
    p.add_argument("--idle-timeout", type=_limit(float), default=None, metavar="SECONDS",
                   help="close a connection silent this long, one with a held pull excepted (default: 120, "
                        "or serverChannelMaxIdleTimeSeconds from --config; 0 = never)")
    p.add_argument("--frame-timeout", type=_limit(float), default=30.0, metavar="SECONDS",
                   help="close a connection whose frame (HTTP: request) is unfinished this long after its first "
                        "byte (0 = never)")
    p.add_argument("--max-outgoing-buffer", type=_limit(int), default=16 * 1024 * 1024, metavar="BYTES",
                   help="unread reply bytes at which a connection's requests wait until it reads; the Pulsar front "
                        "stops pushing messages to a connection at a quarter of it (0 = no limit)")
    p.add_argument("--pulsar-max-pending-bytes", type=_limit(int), default=DEFAULT_MAX_PENDING_BYTES,
                   metavar="BYTES",
                   help="messages the Pulsar front holds unsent for all its connections together (default 64 MiB); "
                        "past it, dispatch pauses for every consumer whose socket has not taken what it was given, "
                        "and resumes as they read (0 = no limit)")
    p.add_argument("--mqtt", default=None, metavar="URL",
                   help="mqtt://[USER[:PASS]@]HOST[:PORT] of an MQTT broker to bridge to (port 1883 if left out; "
                        "needs the mqtt extra)")
    p.add_argument("--mqtt-username", default=None, help="MQTT user name (or USER in the --mqtt URL)")
    p.add_argument("--mqtt-password", default=None, help="MQTT password (or PASS in the --mqtt URL)")
    p.add_argument("--mqtt-client-id", default=mqtt_defaults.client_id,
                   help="MQTT client identifier (a persistent session: QoS 1 publishes survive a reconnect)")
    p.add_argument("--mqtt-prefix", default=mqtt_defaults.topic_prefix,
                   help="ingress topic prefix: PREFIX/TOPIC[/TAG] is stored in TOPIC")
    p.add_argument("--mqtt-egress", action="append", default=[], metavar="TOPIC",
                   help=f"forward TOPIC to {mqtt_defaults.out_prefix}/TOPIC (repeatable)")
    p.add_argument("--grpc-port", type=int_in_range(0, 65535, "a port number"), default=None,
                   help="port of the RocketMQ 5.x gRPC front (apache.rocketmq.v2, plaintext; default 8081, "
                        "the 5.x proxy's, or a free one with --port 0; 0 picks a free one)")
    p.add_argument("--no-grpc", action="store_true", help="no 5.x gRPC front")
    p.add_argument("--pulsar-port", type=int_in_range(0, 65535, "a port number"), default=None,
                   help="port of the Pulsar binary protocol front (default 6650, Pulsar's, or a free one with "
                        "--port 0; 0 picks a free one)")
    p.add_argument("--no-pulsar", action="store_true", help="no Pulsar front")
    p.add_argument("--http-port", type=int_in_range(0, 65535, "a port number"), default=None,
                   help="port of the HTTP front: /healthz and Prometheus /metrics (default 8080, or a free one "
                        "with --port 0; 0 picks a free one)")
    p.add_argument("--no-http", action="store_true", help="no HTTP front")
    p.add_argument("--http-token", default=None, metavar="TOKEN",
                   help="a token every HTTP endpoint but /healthz requires (Authorization: Bearer TOKEN, or "
                        "?token=TOKEN once in the browser); with a --host that is not loopback one is made up and "
                        "printed at start-up when this is not given")
    p.add_argument("--http-allowed-host", action="append", default=[], metavar="NAME",
                   help="a further name the HTTP front answers to in the Host header (repeatable; besides "
                        "127.0.0.1, localhost, [::1] and --host); other Host names get 421 (DNS rebinding)")
    p.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, default="INFO",
                   help="least severe log lines shown on stderr (any case)")
    return p


def serve_main(argv: list[str]) -> int:
    try:
        args = _serve_parser().parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    from rocketmq_emulator.delay_scheduler import SystemClock, VirtualClock

    from ..adapters.advertise import advertised_ip
    from ..config import BrokerConfig, ConfigError, load_broker_conf, parse_properties

    if args.in_memory and args.data_dir:
        return fail("serve", "--in-memory keeps nothing on disk; it cannot be given with --data-dir")
    try:
        cfg = load_broker_conf(args.config) if args.config else BrokerConfig()
        # No event record is kept: nothing in a serve process reads one, and it would grow
        # with every message; the MQTT bridge subscribes to the kinds it publishes.
        # Routes and offsetMsgIds advertise brokerIP1 when broker.conf sets it, else the
        # bind address — never a wildcard such as 0.0.0.0 (clients would dial themselves).
        ip1 = None
        if args.config and "brokerIP1" in parse_properties(Path(args.config).read_text(encoding="utf-8")):
            ip1 = cfg.broker_ip
        overrides = {"broker_ip": advertised_ip(args.host, ip1), "record_events": False}
        if args.message_delay_level:
            overrides["message_delay_level"] = args.message_delay_level
        cfg = cfg.replace(**overrides)
        cfg.validate()
    except (ConfigError, ValueError) as exc:
        return fail("serve", str(exc))
    host_error = _unbindable_host(args.host)
    if host_error:
        return fail("serve", host_error)
    data_dir = None
    if not args.in_memory:
        data_dir = Path(args.data_dir or cfg.store_path_root_dir or DEFAULT_DATA_DIR).expanduser()
    mqtt = None
    if args.mqtt:
        from ..fronts.mqtt.bridge import parse_mqtt_url

        try:
            mqtt = parse_mqtt_url(args.mqtt, username=args.mqtt_username, password=args.mqtt_password,
                                  client_id=args.mqtt_client_id, topic_prefix=args.mqtt_prefix,
                                  egress_topics=args.mqtt_egress or None)
        except ValueError as exc:
            return fail("serve", str(exc))
        # Checked here, not when the bridge first connects: a missing extra is a start-up error.
        missing = missing_extra("mqtt", "aiomqtt", "paho.mqtt.client")
        if missing:
            return fail("serve", f"--mqtt {missing}")
    args.mqtt_settings = mqtt
    for front in _FRONTS:
        port, error = _front_port(args, front)
        if error:
            return fail("serve", error)
        setattr(args, front.name, port)
    running = _already_running(args, data_dir)
    if running:
        return fail("serve", running)
    args.log_limiter = _serve_logging(args.log_level)
    clock = VirtualClock() if args.clock == "virtual" else SystemClock()
    try:
        return asyncio.run(_serve(cfg, data_dir, clock, args))
    except KeyboardInterrupt:
        return 0


class _StoreDir:
    """The store directory of one start. A start that fails takes back what it created:
    the directory and any parents it made, or what it put in a directory that was empty.
    A directory that held anything before is left as it was (the store itself undoes
    nothing it did not do)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.new_top = next((p for p in reversed([path, *path.parents]) if not p.exists()), None)
        self.was_empty = path.is_dir() and not any(path.iterdir())

    def take_back(self) -> None:
        try:
            if self.new_top is not None:
                shutil.rmtree(self.new_top)
            elif self.was_empty:
                for child in self.path.iterdir():
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        except OSError as exc:
            log.warning("could not remove what the failed start created in %s: %s", self.path, exc)


def _serve_logging(level: str):
    """stderr, one line per record whatever a client sent, floods of one kind told in a
    line per second (adapters/log_limits.py); returns the limiter to flush."""
    from ..adapters.log_limits import install

    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=level, format=fmt)
    return install(logging.getLogger().handlers[0], fmt)


async def _flush_log_limiter(limiter) -> None:
    while True:
        await asyncio.sleep(limiter.window_s)
        limiter.flush()


def _open_core(cfg, data_dir: Path | None, clock, port: int):
    """The broker on its store, and the keeper of a virtual clock's time when the
    store is on disk (None otherwise). Raises StoreError / OSError."""
    from rocketmq_emulator.store import StoreError

    from ..core import BrokerCore
    from ..fronts.pulsar.entry_keys import pulsar_entry_keys

    cfg = cfg.replace(listen_port=port)
    if data_dir is None:
        return BrokerCore.in_memory(clock, cfg, entry_keys=pulsar_entry_keys()), None
    data_dir.mkdir(parents=True, exist_ok=True)
    core = BrokerCore.open(data_dir, clock, cfg, entry_keys=pulsar_entry_keys())
    if not clock.is_virtual:
        return core, None
    keeper = core.clock_keeper()
    try:
        keeper.resume()
    except (StoreError, OSError):
        core.close()
        raise
    core.add_flush_hook(keeper.save)        # every flush (and close) writes the clock's time
    core.restart_delivery_log_at(clock.now_ms())   # (the event log starts at the time resumed)
    return core, keeper


async def _flush_in_real_time(flush, interval_s: float) -> None:
    """A virtual-clock server's flush: its core ticks only when time is advanced, so
    offsets, delay offsets and the clock's time are written every flushIntervalCommitLog
    of real time instead (a real-clock server's timer does this on its own)."""
    while True:
        await asyncio.sleep(interval_s)
        flush()


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _unbindable_host(host: str) -> str | None:
    """Why no listener can bind ``host`` (it names no address of this machine), or None.
    Checked before any listener starts: the gRPC front's C++ core would log its own line
    first, and each front would blame its port."""
    from ..adapters.advertise import is_wildcard

    if is_wildcard(host):
        return None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host.strip("[]"), 0, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRNOTAVAIL:
            return f"--host {host} is not an address of this machine ({os.strerror(exc.errno)})"
    return None         # (a name that does not resolve is said by advertised_ip, in its words)


def _already_running(args, data_dir: Path | None) -> str | None:
    """Said before the store opens or any front binds (the store's lock or the gRPC port
    would be blamed first): the remoting port is taken by a RocketMQ server that
    answers there — `./dev serve` run twice — named, with how to start a second one."""
    from rocketmq_emulator.store.store_dir import lock_is_held

    from ..adapters.advertise import is_wildcard
    from .probe import remoting_server_on

    if not args.port:
        return None
    host = "127.0.0.1" if is_wildcard(args.host) else args.host.strip("[]")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, args.port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)      # as the listener binds
            probe.bind(address)
        return None
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            return None             # (said by the listener that fails, in its words)
    found = remoting_server_on(host, args.port, timeout=2.0)
    if found is None:
        return None
    who, clock = found
    store = ""
    if data_dir is not None and lock_is_held(data_dir / "lock"):
        store = f", and another store: --data-dir DIR or --in-memory ({data_dir} is the running one's)"
    return (f"{who} is already running on {_host_port(args.host, args.port)}{f' ({clock} clock)' if clock else ''}; "
            f"to start a second one beside it, give it other ports: --port 0 picks free ones for every front "
            f"(or --port N with --grpc-port, --pulsar-port and --http-port){store}")


def _listen_error(args, port: int, front: str | None, exc: OSError) -> str:
    """A port serve cannot have, and the options that move or disable that listener."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)     # asyncio wraps the OS's words
    if front is None:
        return (f"cannot listen on {_host_port(args.host, port)} (remoting): {reason}; --port N moves it, "
                f"--port 0 picks free ports for every front")
    label = next(f.label for f in _FRONTS if f.name == front)
    return (f"cannot listen on {_host_port(args.host, port)} ({label}): {reason}; --{front}-port N moves it, "
            f"--no-{front} turns it off, --port 0 picks free ports for every front")


async def _serve(cfg, data_dir: Path | None, clock, args) -> int:
    from rocketmq_emulator.store import StoreError

    from ..adapters.connection_guard import ConnectionLimits
    from ..adapters.supervisor import Supervisor
    from ..fronts.remoting.listener import RemotingServer

    supervisor = Supervisor()
    loop = asyncio.get_running_loop()
    supervisor.install(loop)
    # (not supervised: a start that fails returns at once, and the loop's end cancels it)
    log_flusher = asyncio.create_task(_flush_log_limiter(args.log_limiter))
    store_dir = _StoreDir(data_dir) if data_dir is not None else None
    try:
        core, keeper = _open_core(cfg, data_dir, clock, args.port or 0)
    except (StoreError, OSError) as exc:
        if store_dir is not None and not isinstance(exc, StoreError):
            store_dir.take_back()
        from rocketmq_emulator.store.store_dir import lock_is_held

        beside = ("; to run a second broker beside it: --data-dir DIR or --in-memory"
                  if data_dir is not None and lock_is_held(data_dir / "lock") else "")
        return fail("serve", f"cannot open store {data_dir}: {exc}{beside}")
    idle = args.idle_timeout if args.idle_timeout is not None else cfg.server_channel_max_idle_time_seconds
    args.limits = ConnectionLimits(max_connections=args.max_connections, handshake_timeout_s=args.handshake_timeout,
                                   idle_timeout_s=idle, frame_timeout_s=args.frame_timeout,
                                   max_outgoing_buffer=args.max_outgoing_buffer)
    server = RemotingServer(core, args.host, args.port, max_frame_size=args.max_frame_size, **asdict(args.limits))
    started = _Started(core, store_dir)
    grpc_server = None
    if args.grpc is not None:           # first: a port it cannot have stops the start early
        from ..fronts.grpc5.listener import GrpcServer

        grpc_server = GrpcServer(core, args.host, args.grpc, server.after_activity, limits=args.limits)
        if (failed := await started.start(grpc_server, lambda exc: _listen_error(args, args.grpc, "grpc", exc))):
            return failed
    pulsar_server = None
    if args.pulsar is not None:
        from ..fronts.pulsar.listener import PulsarServer

        pulsar_server = PulsarServer(core, args.host, args.pulsar, server.after_activity, limits=args.limits,
                                     max_pending_bytes=args.pulsar_max_pending_bytes)
        if (failed := await started.start(pulsar_server, lambda exc: _listen_error(args, args.pulsar, "pulsar", exc))):
            return failed
    before = asyncio.all_tasks()
    if (failed := await started.start(server, lambda exc: _listen_error(args, args.port, None, exc))):
        return failed
    for task in asyncio.all_tasks() - before:
        supervisor.watch(task, f"the remoting server's {task.get_coro().__qualname__}")
    core.config.listen_port = server.port
    core.store_host = (core.config.broker_ip, server.port)
    try:
        listeners = await _start_cluster(core, server, cfg, data_dir, clock, args, supervisor)
    except _StartError as exc:
        return await started.give_up(str(exc))
    for srv in listeners.servers.values():
        started.started(srv, srv.core)
        for task in srv.background_tasks():     # stopped on purpose if the start gives up: not a failure
            started.on_give_up(lambda task=task: supervisor.release(task))
    cores = [srv.core for srv in listeners.servers.values()]
    http_server = None
    if args.http is not None:
        http_server = _http_front(args, listeners, grpc_server, pulsar_server)
        if (failed := await started.start(http_server, lambda exc: _listen_error(args, args.http, "http", exc))):
            return failed
    bridge = None
    if args.mqtt_settings is not None:
        from ..fronts.mqtt.bridge import MqttBridge

        bridge = MqttBridge(core, args.mqtt_settings, server.after_activity)
        supervisor.watch(bridge.start(), "the MQTT bridge")
    flusher = None
    if keeper is not None:
        flusher = supervisor.watch(asyncio.create_task(
            _flush_in_real_time(core.flush_cluster, cfg.flush_interval_commit_log / 1000)), "the store's flush")
    # before the listening lines: a script that reads one may signal us at once
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, supervisor.stop.set)
        except NotImplementedError:
            pass
    address = _host_port(args.host, server.port)
    where = "store in memory" if data_dir is None else f"store {data_dir}"
    when = f" at {iso_utc(clock.now_ms())}" if clock.is_virtual else ""
    print(f"rocketmq-emulator listening on {address} (name server + broker); {where}; clock {args.clock}{when}")
    print(f"listening {address} remoting", flush=True)      # for scripts: one line per listener
    for name, srv in list(listeners.servers.items())[1:]:
        print(f"listening {_host_port(args.host, srv.port)} {name}", flush=True)
    if grpc_server is not None:
        print(f"listening {_host_port(args.host, grpc_server.port)} grpc", flush=True)      # RocketMQ 5.x
    if pulsar_server is not None:
        print(f"listening {_host_port(args.host, pulsar_server.port)} pulsar", flush=True)
    if http_server is not None:
        print(f"listening {_host_port(args.host, http_server.port)} http", flush=True)
        if args.http_token_made:
            from ..adapters.advertise import is_wildcard

            where = core.config.broker_ip if is_wildcard(args.host) else args.host
            page = f"http://{_host_port(where, http_server.port)}/?token={args.http_token_made}"
            print(f"HTTP token {args.http_token_made} (made up for this run: --host is not loopback): open {page} "
                  f"once; Prometheus and scripts send Authorization: Bearer TOKEN", flush=True)
    await supervisor.stop.wait()
    if http_server is not None:
        await http_server.stop()
    if bridge is not None:
        await bridge.stop()
    if pulsar_server is not None:
        await pulsar_server.stop()
    if grpc_server is not None:
        await grpc_server.stop()
    for srv in listeners.servers.values():
        await srv.stop()
    if flusher is not None:
        flusher.cancel()
    log_flusher.cancel()
    args.log_limiter.flush(float("inf"))          # what was held back is told before the last lines
    for member in cores:
        try:
            unsaved = member.close()        # a store that could not be written says why (logged)
        except Exception as exc:            # logged and said; the run's first failure is the one reported
            supervisor.fail("closing the store", exc)
        else:
            if unsaved is not None and supervisor.failure is None:
                supervisor.failure = f"stopped, but the store could not be flushed: {unsaved}"
    if supervisor.failure is not None:
        return fail("serve", supervisor.failure, 1)
    print("rocketmq-emulator stopped; store flushed" if data_dir is not None else "rocketmq-emulator stopped",
          flush=True)
    return 0


def _http_front(args, listeners, grpc_server, pulsar_server):
    """The HTTP front over every broker of the server: ready when each listener is up
    (a broker stopped on purpose with `broker stop` is reported, not counted)."""
    from ..fronts.http.guard import access_for
    from ..fronts.http.listener import HttpServer
    from ..fronts.http.metrics import BrokerCollector

    servers = listeners.servers
    by_core = {id(srv.core): srv for srv in servers.values()}

    def state() -> dict[str, bool]:
        up = {("remoting" if i == 0 else name): srv.listening or srv.core.stopped
              for i, (name, srv) in enumerate(servers.items())}
        if grpc_server is not None:
            up["grpc"] = True           # started before the remoting server, stopped after it
        if pulsar_server is not None:
            up["pulsar"] = True
        return up

    def connections(core):
        srv = by_core.get(id(core))
        return len(srv.connections) if srv is not None else None

    access, made = access_for(args.host, args.http_allowed_host, args.http_token)
    args.http_token_made = access.token if made else None
    pulsar_url = (lambda: pulsar_server.front.service_url) if pulsar_server is not None else (lambda: None)
    return HttpServer(args.host, args.http, BrokerCollector(lambda: [srv.core for srv in servers.values()],
                                                            connections), state, access=access, limits=args.limits,
                      pulsar_url=pulsar_url)


class _Started:
    """What one start of `serve` has started so far — listeners, the cores behind them,
    the store directory it made — and the one way to give up: each listener stopped in
    the reverse order of its start, every core closed, what the start created on disk
    taken back (_StoreDir), and the one error line."""

    def __init__(self, core, store_dir: _StoreDir | None) -> None:
        self.servers: list = []
        self.cores = [core]
        self.store_dir = store_dir
        self.first: list = []          # done before the listeners stop (tasks released)

    def started(self, server, core=None) -> None:
        if server not in self.servers:
            self.servers.append(server)
        if core is not None and core not in self.cores:
            self.cores.append(core)

    def on_give_up(self, fn) -> None:
        self.first.append(fn)

    async def start(self, server, error_line) -> int | None:
        """Start ``server``; None when it listens, else the exit status of giving up
        with ``error_line(exc)``."""
        try:
            await server.start()
        except OSError as exc:
            return await self.give_up(error_line(exc))
        self.started(server)
        return None

    async def give_up(self, line: str) -> int:
        for fn in self.first:
            fn()
        for server in reversed(self.servers):
            await server.stop()
        for core in self.cores:
            core.close()
        if self.store_dir is not None:
            self.store_dir.take_back()
        return fail("serve", line)


class _StartError(Exception):
    """A broker of the cluster could not start: one line for `serve` to print."""


async def _start_cluster(core, server, cfg, data_dir: Path | None, clock, args, supervisor):
    """broker-a (``core`` on ``server``, started) and ``--brokers - 1`` more, each on its
    own store (DATA_DIR/brokers/NAME) and a free port, behind one name server: the
    ClusterListeners of them all. What this started is stopped again on a failure."""
    from rocketmq_emulator.store import StoreError

    from ..adapters.cluster_listeners import ClusterListeners
    from ..fronts.remoting.listener import RemotingServer
    from ..cluster import Cluster, broker_names

    names = broker_names(args.brokers)
    if args.brokers > 1 and core.config.broker_name != names[0]:
        core.config.broker_name = names[0]     # the cluster's names are broker-a, broker-b, ...
    listeners = ClusterListeners({names[0]: server}, names[0], supervisor)
    started = []
    try:
        for name in names[1:]:
            where = data_dir / "brokers" / name if data_dir is not None else None
            try:
                member, _keeper = _open_core(cfg.replace(broker_name=name), where, clock, 0)
            except (StoreError, OSError) as exc:
                raise _StartError(f"cannot open the store of {name} ({where}): {exc}") from None
            srv = RemotingServer(member, args.host, 0, max_frame_size=server.max_frame_size, **asdict(server.limits))
            listeners.servers[name] = srv
            started.append(srv)
            try:
                await listeners.start_listening(name)
            except OSError as exc:
                raise _StartError(f"cannot listen for {name} on {args.host}: {exc.strerror or exc}") from None
            member.config.listen_port = srv.port
            member.store_host = (member.config.broker_ip, srv.port)
    except _StartError:
        for srv in started:
            for task in srv.background_tasks():
                supervisor.release(task)
            await srv.stop()
            srv.core.close()
        raise
    cluster = Cluster([srv.core for srv in listeners.servers.values()])
    cluster.control = listeners
    cluster.after_change.append(listeners.write_outgoing)
    return listeners


@dataclass(frozen=True)
class _Front:
    """A listener beside the remoting one: its flags, the extra it needs, its default port."""
    name: str                  # --NAME-port, --no-NAME; args.NAME is the port to bind (None: off)
    label: str                 # in messages: "cannot listen on HOST:PORT (LABEL)"
    what: str
    extra: str
    modules: tuple[str, ...]
    default_port: int


_FRONTS = (_Front("grpc", "gRPC", "the RocketMQ 5.x gRPC front", "grpc", ("grpc", "rocketmq_emulator.broker.fronts.grpc5.stubs"),
                  8081),
           _Front("pulsar", "Pulsar", "the Pulsar front", "pulsar",
                  ("google_crc32c", "rocketmq_emulator.broker.fronts.pulsar.schema"), 6650),
           _Front("http", "HTTP", "the HTTP front (/healthz, /metrics)", "http", ("aiohttp", "prometheus_client"), 8080))


def _front_port(args, front: _Front) -> tuple[int | None, str | None]:
    """(port to bind or None for off, a usage error): off with --no-NAME or without its
    extra (a note on stderr, unless --NAME-port asked for it: then an error)."""
    asked = getattr(args, f"{front.name}_port")
    if getattr(args, f"no_{front.name}"):
        if asked is not None:
            return None, f"--no-{front.name} turns {front.what} off; it cannot be given with --{front.name}-port"
        return None, None
    missing = missing_extra(front.extra, *front.modules)
    if missing and asked is not None:
        return None, f"--{front.name}-port {missing}"
    if missing:
        print(f"note: {front.what} is off: it {missing}", file=sys.stderr)
        return None, None
    return (asked if asked is not None else (0 if args.port == 0 else front.default_port)), None


# -- clock ------------------------------------------------------------------------------

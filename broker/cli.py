"""The ``rocketmq-emulator`` command: serve, clock, snapshot, analyze, simulate.

Errors are one readable line on stderr and a non-zero exit code (2 for bad usage or
input, 1 for a failure while running).
"""
from __future__ import annotations

import argparse
import asyncio
import errno
import importlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .cli_common import (CommandParser, UsageError, fail, int_in_range, iso_utc, missing_extra, positive_float,
                         version_text)

__all__ = ["main"]

DEFAULT_DATA_DIR = Path.home() / ".rocketmq-emulator" / "store"
DEFAULT_DATA_DIR_TEXT = "~/.rocketmq-emulator/store"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# A frame holds a message of up to maxMessageSize (4 MiB) plus its header; below 64 KiB
# ordinary requests would be refused, and the length field is a signed 32-bit int.
FRAME_SIZE_RANGE = (64 * 1024, 1024 ** 3)
log = logging.getLogger("broker.serve")


def _fail(msg: str, code: int = 2) -> int:
    """An error of the top-level command (no sub-command known)."""
    return fail("", msg, code)


def _usage_error(exc: UsageError) -> int:
    print(exc, file=sys.stderr)
    return 2


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
    from .adapters.mqtt_bridge import MqttSettings

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
        return _usage_error(exc)
    from rocketmq_emulator.delay_scheduler import SystemClock, VirtualClock

    from .adapters.advertise import advertised_ip
    from .config import BrokerConfig, ConfigError, load_broker_conf, parse_properties

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
        from .adapters.mqtt_bridge import parse_mqtt_url

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
    from .adapters.log_limits import install

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

    from .core import BrokerCore
    from .virtual_time import ClockKeeper

    cfg = cfg.replace(listen_port=port)
    if data_dir is None:
        return BrokerCore.in_memory(clock, cfg), None
    data_dir.mkdir(parents=True, exist_ok=True)
    core = BrokerCore.open(data_dir, clock, cfg)
    if not clock.is_virtual:
        return core, None
    keeper = ClockKeeper(core.store, clock)
    try:
        keeper.resume()
    except (StoreError, OSError):
        core.close()
        raise
    core.flush_hooks.append(keeper.save)        # every flush (and close) writes the clock's time
    return core, keeper


async def _flush_in_real_time(core, interval_s: float) -> None:
    """A virtual-clock server's flush: its core ticks only when time is advanced, so
    offsets, delay offsets and the clock's time are written every flushIntervalCommitLog
    of real time instead (a real-clock server's timer does this on its own)."""
    while True:
        await asyncio.sleep(interval_s)
        core.flush()


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _unbindable_host(host: str) -> str | None:
    """Why no listener can bind ``host`` (it names no address of this machine), or None.
    Checked before any listener starts: the gRPC front's C++ core would log its own line
    first, and each front would blame its port."""
    from .adapters.advertise import is_wildcard

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

    from .adapters.connection_guard import ConnectionLimits
    from .adapters.supervisor import Supervisor
    from .adapters.tcp import RemotingServer

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
        return fail("serve", f"cannot open store {data_dir}: {exc}")
    idle = args.idle_timeout if args.idle_timeout is not None else cfg.server_channel_max_idle_time_seconds
    args.limits = ConnectionLimits(max_connections=args.max_connections, handshake_timeout_s=args.handshake_timeout,
                                   idle_timeout_s=idle, frame_timeout_s=args.frame_timeout,
                                   max_outgoing_buffer=args.max_outgoing_buffer)
    server = RemotingServer(core, args.host, args.port, max_frame_size=args.max_frame_size, **asdict(args.limits))
    grpc_server = None
    if args.grpc is not None:           # first: a port it cannot have stops the start early
        from .adapters.grpc_server import GrpcServer

        grpc_server = GrpcServer(core, args.host, args.grpc, server.after_activity, limits=args.limits)
        try:
            await grpc_server.start()
        except OSError as exc:
            core.close()
            if store_dir is not None:
                store_dir.take_back()
            return fail("serve", _listen_error(args, args.grpc, "grpc", exc))
    pulsar_server = None
    if args.pulsar is not None:
        from .adapters.pulsar_server import PulsarServer

        pulsar_server = PulsarServer(core, args.host, args.pulsar, server.after_activity, limits=args.limits)
        try:
            await pulsar_server.start()
        except OSError as exc:
            if grpc_server is not None:
                await grpc_server.stop()
            core.close()
            if store_dir is not None:
                store_dir.take_back()
            return fail("serve", _listen_error(args, args.pulsar, "pulsar", exc))
    before = asyncio.all_tasks()
    try:
        await server.start()
    except OSError as exc:
        if pulsar_server is not None:
            await pulsar_server.stop()
        if grpc_server is not None:
            await grpc_server.stop()
        core.close()
        if store_dir is not None:
            store_dir.take_back()
        return fail("serve", _listen_error(args, args.port, None, exc))
    for task in asyncio.all_tasks() - before:
        supervisor.watch(task, f"the remoting server's {task.get_coro().__qualname__}")
    core.config.listen_port = server.port
    core.store_host = (core.config.broker_ip, server.port)
    try:
        listeners = await _start_cluster(core, server, cfg, data_dir, clock, args, supervisor)
    except _StartError as exc:
        for srv in (pulsar_server, grpc_server, server):
            if srv is not None:
                await srv.stop()
        core.close()
        return fail("serve", str(exc))
    cores = [srv.core for srv in listeners.servers.values()]
    http_server = None
    if args.http is not None:
        http_server = _http_front(args, listeners, grpc_server, pulsar_server)
        try:
            await http_server.start()
        except OSError as exc:
            for srv in listeners.servers.values():
                for task in srv.background_tasks():
                    supervisor.release(task)        # stopped on purpose: not a failure
            for srv in [pulsar_server, grpc_server, *listeners.servers.values()]:
                if srv is not None:
                    await srv.stop()
            for member in cores:
                member.close()
            if store_dir is not None:
                store_dir.take_back()
            return fail("serve", _listen_error(args, args.http, "http", exc))
    bridge = None
    if args.mqtt_settings is not None:
        from .adapters.mqtt_bridge import MqttBridge

        bridge = MqttBridge(core, args.mqtt_settings, server.after_activity)
        supervisor.watch(bridge.start(), "the MQTT bridge")
    flusher = None
    if keeper is not None:
        flusher = supervisor.watch(asyncio.create_task(
            _flush_in_real_time(core.names, cfg.flush_interval_commit_log / 1000)), "the store's flush")
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
            from .adapters.advertise import is_wildcard

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
    from .adapters.http_guard import access_for
    from .adapters.http_server import HttpServer
    from .metrics import BrokerCollector

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
    return HttpServer(args.host, args.http, BrokerCollector(lambda: [srv.core for srv in servers.values()],
                                                            connections), state, access=access, limits=args.limits)


class _StartError(Exception):
    """A broker of the cluster could not start: one line for `serve` to print."""


async def _start_cluster(core, server, cfg, data_dir: Path | None, clock, args, supervisor):
    """broker-a (``core`` on ``server``, started) and ``--brokers - 1`` more, each on its
    own store (DATA_DIR/brokers/NAME) and a free port, behind one name server: the
    ClusterListeners of them all. What this started is stopped again on a failure."""
    from rocketmq_emulator.store import StoreError

    from .adapters.cluster_listeners import ClusterListeners
    from .adapters.tcp import RemotingServer
    from .cluster import Cluster, broker_names

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


_FRONTS = (_Front("grpc", "gRPC", "the RocketMQ 5.x gRPC front", "grpc", ("grpc", "rocketmq_emulator.broker.rocketmq5.stubs"),
                  8081),
           _Front("pulsar", "Pulsar", "the Pulsar front", "pulsar",
                  ("google_crc32c", "rocketmq_emulator.broker.pulsar_front.schema"), 6650),
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
def _server_address(text: str) -> str:
    """An argparse type: HOST:PORT with a port from 1 to 65535."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port from 1 to 65535, got {text!r}")
    return text


def _add_server_options(p: argparse.ArgumentParser, timeout: float) -> None:
    p.add_argument("--server", type=_server_address, default="127.0.0.1:9876",
                   help="HOST:PORT of `rocketmq-emulator serve`")
    p.add_argument("--timeout", type=positive_float, default=timeout, metavar="SECONDS",
                   help="seconds to wait for the reply")


def _duration(text: str) -> str:
    """An argparse type: a duration > 0 like 500ms, 10s, 2h or 1h30m, or ``next``."""
    from rocketmq_emulator.delay_scheduler import DelayLevelError, parse_duration

    if text == "next":
        return text
    try:
        ms = parse_duration(text)
    except DelayLevelError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if ms <= 0:
        raise argparse.ArgumentTypeError(f"durations are positive (the clock only moves forward), got {text!r}")
    return text


def clock_main(argv: list[str]) -> int:
    p = CommandParser(prog="rocketmq-emulator clock", description="Read or move a server's clock.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{advance,now}")
    adv = sub.add_parser("advance", help="advance a virtual clock by DURATION (500ms, 10s, 2h) or to the next due "
                                         "message",
                         description="Advance a `serve --clock virtual` server's clock by DURATION; the reply "
                                     "comes once everything due by then has been delivered.")
    adv.add_argument("duration", type=_duration, help="how far: 500ms, 10s, 5m, 2h, 1d or 1h30m; or next: to when "
                                                      "the next delayed message or retry is due")
    adv.add_argument("--json", action="store_true", help="one JSON object: now_ms, time, clock, advanced_ms")
    _add_server_options(adv, 60.0)
    now = sub.add_parser("now", help="print a server's clock", description="Print a server's clock (either kind).")
    now.add_argument("--json", action="store_true", help="one JSON object: now_ms, time, clock")
    _add_server_options(now, 10.0)
    if len(argv) > 1 and argv[0] == "advance" and re.match(r"-\d", argv[1]):
        # argparse would take "-5s" for an option and say a duration is missing
        return fail("clock advance", f"durations are positive (the clock only moves forward), got {argv[1]!r}")
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return _usage_error(exc)
    from .protocol import EMULATOR_CLOCK_ADVANCE, RemotingCommand

    # `now` is an advance of nothing: the one clock request, answered by either clock.
    header = {"duration": args.duration} if args.action == "advance" else {"millis": 0}
    reply = _call_server(f"clock {args.action}", args.server, RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, header),
                         args.timeout, refused_exit=2)
    if isinstance(reply, int):
        return reply
    ms = int(reply.header("nowMillis"))
    doc = {"now_ms": ms, "time": iso_utc(ms), "clock": reply.header("clock")}
    if args.action == "advance":
        doc["advanced_ms"] = reply.header_int("advancedMillis", 0)
    if args.json:
        print(json.dumps(doc))
        return 0
    kind = ", real clock" if doc["clock"] == "real" else ""
    print(f"clock now {ms} ms ({doc['time']}){kind}")
    return 0


# -- topic ------------------------------------------------------------------------------
def topic_main(argv: list[str]) -> int:
    """``topic create``: UPDATE_AND_CREATE_TOPIC, what ``mqadmin updateTopic`` sends.
    Clients without the Java client's TBW102 fallback (ali-ons) need their topics made
    before they send."""
    p = CommandParser(prog="rocketmq-emulator topic", description="Create, list, show or delete topics on a server.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{create,list,show,delete}")
    create = sub.add_parser("create", help="create (or update) TOPIC, as mqadmin updateTopic",
                            description="Create (or update) TOPIC on a server, as mqadmin updateTopic does.")
    create.add_argument("topic", help="the topic's name (with --pulsar: persistent://tenant/ns/name or a short name)")
    create.add_argument("--queues", type=int_in_range(1, 1024), default=None,
                        help="read and write queue count (default 8)")
    create.add_argument("--perm", type=int, default=6, choices=(2, 4, 6), help="2 write, 4 read, 6 both")
    create.add_argument("--order", action="store_true", help="an ordered topic")
    create.add_argument("--pulsar", action="store_true",
                        help="TOPIC is a Pulsar topic (persistent://tenant/ns/name or a short name): one queue")
    create.add_argument("--partitions", type=int_in_range(1, 1024), default=None,
                        help="with --pulsar: a partitioned topic of N partitions (<name>-partition-<i>)")
    create.add_argument("--broker", default=None, metavar="NAME",
                        help="create it on this broker only (default: on every broker that is up)")
    _add_server_options(create, 10.0)
    from .cli_views import add_topic_views, run_view

    add_topic_views(sub, _add_server_options)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return _usage_error(exc)
    if args.action != "create":
        return run_view("topic", args)
    from .protocol import RemotingCommand, RequestCode

    if args.pulsar:
        names = _pulsar_store_topics(args)
        if isinstance(names, str):
            return fail("topic create", names)
        queues = 1
    elif args.partitions is not None:
        return fail("topic create", "--partitions is for Pulsar topics: give --pulsar too")
    else:
        names, queues = [args.topic], args.queues or 8
    from .cli_brokers import broker_addresses

    brokers = broker_addresses("topic create", args.server, args.timeout, args.broker)
    if isinstance(brokers, int):
        return brokers
    for address in brokers.values():            # as mqadmin updateTopic -c: to every broker
        for name in names:
            req = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
                "topic": name, "readQueueNums": queues, "writeQueueNums": queues,
                "perm": args.perm, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": args.order})
            reply = _call_server("topic create", address, req, args.timeout, refused_exit=2)
            if isinstance(reply, int):
                return reply
    if args.pulsar:
        what = f"{args.partitions} partitions" if args.partitions else "not partitioned"
        print(f"Pulsar topic {args.topic} created: {what}, stored as {', '.join(names)}")
    else:
        on = f" on {', '.join(brokers)}" if len(brokers) > 1 or args.broker else ""
        print(f"topic {args.topic} created: {queues} queues, perm {args.perm}{on}")
    return 0


def _pulsar_store_topics(args) -> list[str] | str:
    """The store topics a Pulsar topic (or each of its partitions) is kept in, or why not."""
    from .pulsar_front.names import PulsarNameError, parse_topic, store_topic

    if args.queues is not None:
        return "--queues is not for Pulsar topics: each Pulsar topic (or partition) is one queue"
    try:
        topic = parse_topic(args.topic)
        if args.partitions is None:
            return [store_topic(topic)]
        return [store_topic(f"{topic.full}-partition-{i}") for i in range(args.partitions)]
    except PulsarNameError as exc:
        return str(exc)


def group_main(argv: list[str]) -> int:
    """``group create``: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, what ``mqadmin updateSubGroup``
    sends: a 5.x FIFO group (--orderly) and its maximum retries."""
    p = CommandParser(prog="rocketmq-emulator group", description="Create, list or show consumer groups on a server.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{create,list,show}")
    create = sub.add_parser("create", help="create (or update) GROUP, as mqadmin updateSubGroup",
                            description="Create (or update) consumer GROUP on a server, as mqadmin updateSubGroup.")
    create.add_argument("group", help="the consumer group's name (^[%|a-zA-Z0-9_-]+$, at most 120 characters)")
    create.add_argument("--retry-max-times", type=int_in_range(0, 10_000), default=16,
                        help="retries before the DLQ (retryMaxTimes; 5.x delivers retryMaxTimes + 1 times)")
    create.add_argument("--orderly", action="store_true",
                        help="a FIFO group for 5.x clients (consumeMessageOrderly): a message group's next "
                             "message waits for the one before")
    _add_server_options(create, 10.0)
    from .cli_views import add_group_views, run_view

    add_group_views(sub, _add_server_options)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return _usage_error(exc)
    if args.action != "create":
        return run_view("group", args)
    from .protocol import RemotingCommand, RequestCode

    body = json.dumps({"groupName": args.group, "retryMaxTimes": args.retry_max_times,
                       "consumeMessageOrderly": args.orderly}).encode()
    from .cli_brokers import broker_addresses

    brokers = broker_addresses("group create", args.server, args.timeout)
    if isinstance(brokers, int):
        return brokers
    for address in brokers.values():            # as mqadmin updateSubGroup -c: on every broker
        req = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)
        reply = _call_server("group create", address, req, args.timeout, refused_exit=2)
        if isinstance(reply, int):
            return reply
    print(f"group {args.group} created: retryMaxTimes {args.retry_max_times}"
          + (", orderly (FIFO)" if args.orderly else ""))
    return 0


def _call_server(command: str, server: str, req, timeout: float, refused_exit: int = 1, accept=()):
    """Send one request to ``server`` (HOST:PORT, already checked) and return its
    successful reply (or one whose code is in ``accept``), or the exit code after
    printing one error line (``refused_exit`` when the server refused the request)."""
    replies = _call_server_many(command, server, [req], timeout, refused_exit, accept)
    return replies if isinstance(replies, int) else replies[0]


def _call_server_many(command: str, server: str, reqs: list, timeout: float, refused_exit: int = 1, accept=()):
    """``_call_server`` for several requests on one connection: their replies in the
    order of ``reqs``, or the exit code after one error line. A port that speaks
    another protocol (HTTP, gRPC, Pulsar, TLS) is named, exit 2 (cli_probe)."""
    from .protocol import ProtocolError
    from .protocol.codec import FrameDecoder, encode

    host, _, port = server.rpartition(":")
    host = host.strip("[]")
    waiting = {req.opaque: i for i, req in enumerate(reqs)}
    replies = [None] * len(reqs)
    received = b""                      # the first bytes back, to tell another protocol
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except OSError as exc:
        return fail(command, f"cannot reach {server}: {exc}", 1)
    try:
        with sock:
            sock.sendall(b"".join(encode(req) for req in reqs))
            decoder = FrameDecoder()
            while waiting:
                data = sock.recv(65536)
                if not data:
                    return _unanswered(command, server, host, int(port), received, timeout,
                                       f"{server} closed the connection")
                if len(received) < 64:
                    received += data[:64 - len(received)]
                for cmd in decoder.feed(data):
                    i = waiting.pop(cmd.opaque, None)
                    if i is None:
                        continue
                    if cmd.code != 0 and cmd.code not in accept:
                        return fail(command, cmd.remark or f"refused with code {cmd.code}", refused_exit)
                    replies[i] = cmd
    except (ConnectionResetError, ProtocolError) as exc:
        return _unanswered(command, server, host, int(port), received, timeout, f"cannot reach {server}: {exc}")
    except OSError as exc:
        return fail(command, f"cannot reach {server}: {exc}", 1)
    return replies


def _unanswered(command: str, server: str, host: str, port: int, received: bytes, timeout: float, why: str) -> int:
    """A server that answered no remoting frame: name its protocol when it is one we
    know (the user's mistake, exit 2), else say ``why`` (exit 1)."""
    from .cli_probe import foreign_protocol, wrong_port_text

    protocol = foreign_protocol(host, port, received, timeout)
    if protocol is not None:
        return fail(command, wrong_port_text(server, protocol), 2)
    return fail(command, why, 1)


# -- dispatch -----------------------------------------------------------------------------
_USAGE = """usage: rocketmq-emulator COMMAND [options]

commands:
  serve      run the name server + broker (RocketMQ 4.x remoting protocol)
  clock      read or move a server's time: clock now / clock advance 2h --server HOST:PORT
  topic      topics on a server: topic create NAME --queues 4 / list / show NAME / delete NAME
  group      consumer groups: group create NAME [--orderly] / list / show NAME (offsets, lag, retries, DLQ)
  broker     a cluster's brokers (serve --brokers N): broker list / perm NAME --write off / stop / start
  dlq        a group's dead letters: dlq list GROUP / dlq redrive GROUP --all [--dry-run]
  message    message show ID / message find --topic T --key K / message send TOPIC BODY [--tag --key]
  status     each broker's runtime figures (mqadmin brokerStatus)
  offset     offset reset GROUP TOPIC --to earliest|latest|TIME (mqadmin resetOffsetByTime)
  snapshot   take a consistent snapshot of a store: snapshot --data-dir DIR --out SNAP
  analyze    Spark analysis of a snapshot: analyze SNAP --out DIR [--master URL]
  simulate   deterministic simulation run: simulate --seed N --messages M --duration 6h --out DIR

run `rocketmq-emulator COMMAND --help` for a command's options; --version prints the version"""


# What a shell reports for a tool that SIGPIPE ended (128 + 13): `cmd | head -1` stops
# the command that way, quietly.
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """The command line; a reader of stdout that has gone (``| head -1``) ends the
    command quietly, as it ends a Unix tool."""
    try:
        code = _main(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Python ignores SIGPIPE, so the write raised; point stdout at /dev/null so the
        # interpreter's last flush does not raise again ("Exception ignored ...").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(_USAGE, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(_USAGE)
        return 0
    if argv[0] in ("-V", "--version"):
        print(version_text())
        return 0
    cmd, rest = argv[0], argv[1:]
    builtin = _BUILTIN_COMMANDS.get(cmd)
    if builtin is not None:
        module, function = builtin
        # (this module's own by name: run as `python -m`, it is __main__, not a second import)
        owner = globals() if module is None else vars(importlib.import_module(module, __package__))
        return owner[function](rest)
    registered = _registered_command(cmd)
    if registered is None:
        return _fail(f"unknown command {cmd!r}; run `rocketmq-emulator --help`")
    try:
        command_main = registered.load()
    except ImportError as exc:
        if registered.extras:
            extra = registered.extras[0]
            return fail(cmd, f"needs the {extra} extra (pip install 'rocketmq-emulator[{extra}]'): {exc}")
        return fail(cmd, f"is not available in this build: {exc}")
    return command_main(rest)


# The broker's own commands: (module, function), imported only when run.
_BUILTIN_COMMANDS = {
    "serve": (None, "serve_main"), "clock": (None, "clock_main"), "topic": (None, "topic_main"),
    "group": (None, "group_main"), "broker": (".cli_brokers", "broker_main"), "dlq": (".cli_dlq", "dlq_main"),
    "offset": (".cli_offsets", "offset_main"), "message": (".cli_messages", "message_main"),
    "status": (".cli_messages", "status_main"),
}

# Commands of the packages above the broker (simulate, snapshot, analyze) are registered
# as entry points of this group (pyproject.toml), so this module names none of them.
COMMAND_GROUP = "rocketmq_emulator.commands"


def _registered_command(name: str):
    from importlib.metadata import entry_points

    found = entry_points(group=COMMAND_GROUP, name=name)
    return next(iter(found), None)


if __name__ == "__main__":
    sys.exit(main())

"""A hostile client on every front and admin surface of one `serve`: hypothesis draws
frames and values (numbers past their fields, names with control characters, unknown
codes, bodies of the wrong shape), bounded in count and time. After each input the log
shows no traceback and the server is alive; at the end of each surface a good client is
still served on every front, and memory stayed within a bound. An input that breaks one
of these is shrunk by hypothesis and reported with the log.

The counts of inputs per surface are printed at the end (``pytest -s``) for the record."""
from __future__ import annotations

import json
import os
import socket
import urllib.parse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_emulator.broker.fronts.pulsar import schema as ps
from rocketmq_emulator.broker.fronts.pulsar.frames import encode_payload, encode_simple
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import encode
from rocketmq_emulator.broker.fronts.remoting.protocol.errors import LocalProtocolError

from tests.support.cli_run import CLI_MAIN
from tests.support.remoting import RawClient

from .drawn import edge_ints, hostile_text, number_text, protobuf_message
from .server import FuzzedServer, dumps, wait_closed_or_answered

pytestmark = pytest.mark.interop

# Inputs per surface: enough to cover every code and field with edge values, bounded so
# the whole module stays within about a minute on a 2-core host. FUZZ_EXAMPLES raises it
# for a longer hunt outside CI.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
RSS_GROWTH_BOUND_MB = 400
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = FuzzedServer(tmp_path_factory.mktemp("fuzz"))
    yield srv
    srv.assert_unbroken("the last input")
    summary = srv.stop()
    print(f"\nfuzz summary: {json.dumps(summary)}")


def _surface_done(server, name: str) -> None:
    server.assert_serves_good_clients()
    server.assert_unbroken(f"the {name} surface")
    grown = server.rss_mb() - server.start_rss_mb
    assert grown < RSS_GROWTH_BOUND_MB, f"RSS grew {grown:.0f} MB over the {name} inputs"


# -- RocketMQ 4.x remoting ---------------------------------------------------------------
# Header fields the 4.x processors read, and body keys of the JSON bodies they parse.
_HEADER_NAMES = ("action attributes beginTimestamp brokerName cleanOffset clientID commitLogOffset commitOffset "
                 "commitOrRollback consumerGroup delayLevel dryRun duration endTimestamp expressionType "
                 "fromTransactionCheck group groupName id ids isForce key maxMsgNums maxNum maxReconsumeTimes millis "
                 "msgId offset order originMsgId originTopic perm producerGroup queueId queueOffset readQueueNums "
                 "subVersion subscription suspendTimeoutMillis sysFlag timestamp topic topicFilterType topicSysFlag "
                 "tranStateTableOffset transactionId value writeQueueNums properties bornTimestamp flag "
                 "reconsumeTimes unitMode batch defaultTopic defaultTopicQueueNums").split()
_BODY_KEYS = ("groupName consumeEnable consumeBroadcastEnable retryMaxTimes retryQueueNums brokerId "
              "whichBrokerWhenConsumeSlowly clientID producerDataSet consumerDataSet subscriptionDataSet topic "
              "mqSet offsetTable consumeType messageModel consumeFromWhere brokerName queueId operation action "
              "group client dialect times probability delay_ms window error stored id ids all dry_run to "
              "brokers perm readQueueNums writeQueueNums").split()
_CODES = [int(c) for c in RequestCode] if hasattr(RequestCode, "__iter__") else \
    [v for k, v in vars(RequestCode).items() if k.isupper() and isinstance(v, int)]
_JSON_VALUES = st.recursive(st.none() | st.booleans() | edge_ints(-(2 ** 65), 2 ** 65) | hostile_text()
                            | st.floats(allow_nan=False),
                            lambda inner: st.lists(inner, max_size=3)
                            | st.dictionaries(st.sampled_from(_BODY_KEYS) | hostile_text(10), inner, max_size=4),
                            max_leaves=8)


@st.composite
def remoting_requests(draw):
    ext = draw(st.dictionaries(st.sampled_from(_HEADER_NAMES) | hostile_text(12),
                               hostile_text() | number_text(), max_size=8))
    body = draw(st.one_of(st.just(b""), st.binary(max_size=64),
                          st.dictionaries(st.sampled_from(_BODY_KEYS), _JSON_VALUES, max_size=6).map(dumps),
                          _JSON_VALUES.map(dumps),
                          st.lists(st.tuples(hostile_text(12), hostile_text()), max_size=4)
                          .map(lambda kv: "\n".join(f"{k}={v}" for k, v in kv).encode())))
    code = draw(st.sampled_from(_CODES) | edge_ints(-(2 ** 31), 2 ** 31 - 1))
    return RemotingCommand(code=code, ext_fields=ext, body=body, opaque=draw(edge_ints(-(2 ** 31), 2 ** 31 - 1)),
                           flag=draw(st.sampled_from([0, 2])), serialize_type=draw(st.sampled_from([0, 1])))


@FUZZ
@given(request=remoting_requests())
def test_remoting_requests_of_any_shape(server, request):
    server.inputs["remoting"] += 1
    try:
        frame = encode(request)
    except (ValueError, OverflowError, UnicodeEncodeError, TypeError, KeyError, LocalProtocolError):
        return                                   # no client can put this on the wire
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(frame)
        wait_closed_or_answered(sock, 0.05)
    good = RawClient(server.port, timeout=10)
    try:
        good.call(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    finally:
        good.close()
    server.assert_unbroken(request)


def test_remoting_surface_after_the_fuzz(server):
    _surface_done(server, "remoting")


# -- Pulsar binary protocol --------------------------------------------------------------
_TYPE_FIELDS = {}
for _field in ps.BaseCommand.DESCRIPTOR.fields:
    if _field.message_type is not None:
        _TYPE_FIELDS[_field.name] = _field
_TYPES = {name: number for name, number in vars(ps.Type).items() if not name.startswith("_")}


# Ids and names from a small set, so that a drawn PRODUCER, SEND, SUBSCRIBE, FLOW and ACK
# meet each other's state (an exclusive producer's epoch, a cursor, a sequence id) across
# inputs; edge values still come now and then.
_PULSAR_HINTS = {
    "topic": st.sampled_from(["persistent://public/default/fuzz", "persistent://public/default/fuzz-partition-0",
                              "fuzz", "non-persistent://public/default/fuzz"]) | hostile_text(),
    "subscription": st.sampled_from(["s1", "s2"]) | hostile_text(),
    "producer_name": st.sampled_from(["p1", "p2"]) | hostile_text(),
    "producer_access_mode": st.integers(0, 3),
    **{name: st.integers(0, 3) | edge_ints(0, 2 ** 64 - 1)
       for name in ("producer_id", "consumer_id", "request_id", "sequence_id", "highest_sequence_id", "epoch",
                    "topic_epoch", "ledgerId", "entryId", "ledger_id", "entry_id", "messagePermits")},
}


@st.composite
def pulsar_commands(draw):
    """A BaseCommand of a drawn type with its sub-command drawn field by field (edge
    uint64s included), or now and then a type that does not match its field."""
    field = draw(st.sampled_from(["producer", "send", "subscribe", "flow", "ack", "redeliverUnacknowledgedMessages",
                                  "seek", "close_producer", "close_consumer", "lookupTopic", "partitionMetadata"])
                 | st.sampled_from(sorted(_TYPE_FIELDS)))
    # in PulsarApi.proto a command's Type number is its field's number in BaseCommand
    type_number = _TYPE_FIELDS[field].number
    if type_number not in _TYPES.values() or draw(st.integers(0, 9)) == 0:
        type_number = draw(st.sampled_from(sorted(_TYPES.values())))
    cmd = ps.BaseCommand(type=type_number)
    getattr(cmd, field).CopyFrom(draw(protobuf_message(type(getattr(cmd, field)), depth=2, hints=_PULSAR_HINTS)))
    return cmd


@FUZZ
@given(commands=st.lists(pulsar_commands(), min_size=1, max_size=6), connect_first=st.booleans() | st.just(True),
       metadata=protobuf_message(ps.MessageMetadata, depth=1), payload=st.binary(max_size=64))
def test_pulsar_frames_of_any_shape(server, commands, connect_first, metadata, payload):
    server.inputs["pulsar"] += 1
    frames = []
    if connect_first:
        frames.append(encode_simple(ps.BaseCommand(type=ps.Type.CONNECT, connect=ps.CommandConnect(
            client_version="fuzz", protocol_version=20)).SerializeToString()))
    try:
        for cmd in commands:
            body = cmd.SerializeToString()
            frames.append(encode_payload(body, metadata.SerializeToString(), payload)
                          if cmd.type == ps.Type.SEND else encode_simple(body))
    except (ValueError, TypeError):
        return
    with socket.create_connection(("127.0.0.1", server.pulsar_port), timeout=5) as sock:
        sock.sendall(b"".join(frames))
        wait_closed_or_answered(sock, 0.05)
    server.assert_unbroken(commands)


def test_pulsar_surface_after_the_fuzz(server):
    _surface_done(server, "pulsar")


# -- RocketMQ 5.x gRPC ---------------------------------------------------------------------
def _grpc_unary_methods():
    from rocketmq_emulator.broker.fronts.grpc5.stubs import spb
    service = spb.DESCRIPTOR.services_by_name["MessagingService"]
    return [m for m in service.methods if not m.client_streaming]


@FUZZ
@given(data=st.data())
def test_grpc_requests_of_any_shape(server, data):
    import grpc
    from google.protobuf import message_factory

    server.inputs["grpc"] += 1
    method = data.draw(st.sampled_from(_grpc_unary_methods()), label="method")
    request_cls = message_factory.GetMessageClass(method.input_type)
    response_cls = message_factory.GetMessageClass(method.output_type)
    request = data.draw(protobuf_message(request_cls, depth=3), label="request")
    metadata = data.draw(st.lists(st.tuples(st.sampled_from(["x-mq-client-id", "x-mq-namespace", "x-mq-language",
                                                             "x-mq-protocol", "authorization"]),
                                            hostile_text().filter(lambda v: v.isprintable() and v.isascii())),
                                  max_size=3, unique_by=lambda kv: kv[0]), label="metadata")
    path = f"/apache.rocketmq.v2.MessagingService/{method.name}"
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        try:
            if method.server_streaming:
                call = channel.unary_stream(path, request_serializer=lambda m: m.SerializeToString(),
                                            response_deserializer=response_cls.FromString)
                for _ in call(request, timeout=1.0, metadata=metadata):
                    pass
            else:
                call = channel.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                                           response_deserializer=response_cls.FromString)
                call(request, timeout=5.0, metadata=metadata)
        except grpc.RpcError as exc:
            # a refusal is fine; an exception inside the servicer is not (grpc answers it UNKNOWN)
            assert exc.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INVALID_ARGUMENT,
                                  grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.RESOURCE_EXHAUSTED,
                                  grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION,
                                  grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.PERMISSION_DENIED,
                                  grpc.StatusCode.CANCELLED, grpc.StatusCode.OUT_OF_RANGE), \
                (method.name, exc.code(), exc.details())
    server.assert_unbroken((method.name, request))


def test_grpc_surface_after_the_fuzz(server):
    _surface_done(server, "grpc")


# -- HTTP: dashboard API, fault API, Pulsar admin REST -------------------------------------
_PATHS = ["/healthz", "/metrics", "/", "/api/state", "/api/events", "/api/clock/advance", "/api/dlq/redrive",
          "/api/faults", "/api/faults/{n}", "/api/topics", "/api/groups", "/api/messages/{s}", "/api/message/{s}",
          "/api/group/{s}", "/api/topic/{s}", "/api/retries", "/api/dlq/{s}",
          "/admin/v2/persistent/public/default/{s}/partitions", "/admin/v2/persistent/public/default/{s}",
          "/admin/v2/persistent/public/default", "/admin/v2/non-persistent/public/default/{s}",
          "/admin/v2/persistent/{s}/{s}/{s}/subscriptions", "/admin/v2/persistent/public/default/{s}/stats",
          "/admin/v2/clusters", "/admin/v2/tenants", "/admin/v2/namespaces/public", "/lookup/v2/topic/persistent/{s}"]


@st.composite
def http_requests(draw):
    template = draw(st.sampled_from(_PATHS))
    # percent-encoded as a browser or curl sends it; what a route sees is the decoded name
    segment = draw(hostile_text(30).map(lambda t: urllib.parse.quote(t, safe="") or "x"))
    path = template.replace("{s}", segment).replace("{n}", draw(number_text().map(lambda t: urllib.parse.quote(t[:30], safe="") or "0")))
    query = draw(st.sampled_from(["", "?limit=-1", "?limit=99999999999999999999", "?at=1e300", "?group=%1B%5B31m",
                                  "?authoritative=true", "?partitions=9223372036854775808"]))
    method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE"]))
    body = draw(st.one_of(st.none(), _JSON_VALUES.map(dumps), st.binary(max_size=32),
                          st.dictionaries(st.sampled_from(_BODY_KEYS), _JSON_VALUES, max_size=6).map(dumps)))
    return method, path + query, body


@FUZZ
@given(request=http_requests())
def test_http_requests_of_any_shape(server, request):
    server.inputs["http"] += 1
    method, path, body = request
    status, text = server.http(method, path, body)
    assert status < 500 or (path.startswith("/healthz") and status == 503), (request, status, text[:300])
    server.assert_unbroken(request)


def test_http_surface_after_the_fuzz(server):
    _surface_done(server, "http")


# -- the admin command line against the running server -------------------------------------
_COMMANDS = [["topic", "create", "{s}", "--queues", "{n}"], ["topic", "show", "{s}"], ["topic", "delete", "{s}"],
             ["group", "create", "{s}"], ["group", "show", "{s}"], ["dlq", "list", "{s}"],
             ["dlq", "redrive", "{s}", "--ids", "{s}"], ["offset", "reset", "{s}", "{s}", "--to", "{n}"],
             ["message", "show", "{s}"], ["message", "send", "{s}", "{s}", "--tag", "{s}"],
             ["message", "find", "--topic", "{s}", "--key", "{s}"], ["clock", "advance", "{s}"],
             ["fault", "add", "send", "refuse", "--topic", "{s}", "--times", "{n}"],
             ["fault", "add", "pull", "delay", "--delay", "{s}", "--group", "{s}"], ["fault", "remove", "{n}"],
             ["broker", "perm", "{s}", "--write", "{s}"], ["status", "--broker", "{s}"]]


@st.composite
def cli_lines(draw):
    words = []
    for word in draw(st.sampled_from(_COMMANDS)):
        if word == "{s}":
            word = draw(hostile_text(30).filter(lambda t: "\x00" not in t))
        elif word == "{n}":
            word = draw(number_text())
        words.append(word)
    return words


# Each line is a process (the command line as a user runs it): fewer examples than a wire.
@settings(FUZZ, max_examples=max(10, EXAMPLES // 5))
@given(words=cli_lines())
def test_admin_command_lines_of_any_shape(server, words):
    import subprocess
    import sys

    server.inputs["cli"] += 1
    done = subprocess.run([sys.executable, "-c", CLI_MAIN, *words, "--server", f"127.0.0.1:{server.port}"],
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, (words, done.stderr[-3000:])
    assert done.returncode in (0, 2), (words, done.returncode, done.stderr[-1000:])
    if done.returncode == 2:
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, (words, done.stderr)
        assert "\x1b" not in lines[0], (words, lines[0])
    server.assert_unbroken(words)


def test_cli_surface_after_the_fuzz(server):
    _surface_done(server, "cli")

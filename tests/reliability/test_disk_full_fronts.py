"""A full disk under `serve`, through every front with real clients (issue 34, item 6): the
4.x and 5.x sends are refused, the real Pulsar client's send fails within its send
timeout with an error it surfaces (it resent for ever before), /healthz answers 503 with
the reason and /metrics says the store is not writable while the store refuses writes;
once space is freed all three fronts take writes again, and what was acknowledged is
all there. On a real 8 MiB tmpfs."""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode as RC

from tests.broker.fronts.remoting.listener.test_limits import send_request
from ..support.processes import EmulatorProcess
from ..support.remoting import RawClient
from ..support.logs import told
from .tmpfs import resize_tmpfs, small_tmpfs, take_every_block

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
rocketmq = pytest.importorskip("rocketmq", reason="needs the grpc extra: ./dev test installs it")
from rocketmq import ClientConfiguration, Credentials, Message, Producer  # noqa: E402

pytestmark = pytest.mark.interop
TOPIC = "persistent://public/default/full"


@pytest.fixture
def small_disk(tmp_path):
    yield from small_tmpfs(tmp_path / "disk", "8m")


def http(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def writable_gauge(port: int) -> float:
    [line] = [x for x in http(port, "/metrics")[1].splitlines()
              if x.startswith('rocketmq_emulator_store_writable{broker="broker-a"}')]
    return float(line.split()[-1])


def message5(body: bytes) -> Message:
    m = Message()
    m.topic, m.body = "Orders", body
    return m


def pulsar_send(producer, body: bytes, wait_s: float = 30) -> object:
    """The result the client reports for one send (bounded wait: a client that never
    gives up fails the test instead of hanging it)."""
    done, results = threading.Event(), []
    started = time.monotonic()
    producer.send_async(body, lambda result, msg_id: (results.append(result), done.set()))
    assert done.wait(wait_s), f"the Pulsar client's send did not finish within {wait_s} s"
    print(f"Pulsar send: {results[0]} after {time.monotonic() - started:.1f} s")
    return results[0]


def test_every_front_refuses_on_a_full_disk_and_takes_writes_again_when_space_is_freed(small_disk, tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("mapedFileSizeCommitLog=1048576\n")
    server = EmulatorProcess(small_disk / "store", "--config", str(conf), grpc=True, pulsar=True, http=True).start()
    client = producer5 = None
    try:
        assert main(["topic", "create", "Orders", "--queues", "1", "--server", server.address]) == 0
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=5)
        producer = client.create_producer(TOPIC, send_timeout_millis=3000, batching_enabled=False)
        producer.send(b"before")
        producer5 = Producer(ClientConfiguration(f"127.0.0.1:{server.grpc_port}", Credentials(), request_timeout=3),
                             ("Orders",))
        producer5.startup()
        producer5.send(message5(b"5.x before"))
        remoting = RawClient(server.port, timeout=10)
        assert remoting.call(send_request("Orders", b"4.x before")).code == RC.SUCCESS
        assert http(server.http_port, "/healthz")[0] == 200 and writable_gauge(server.http_port) == 1

        take_every_block(small_disk / "ballast")
        big = bytes(64 * 1024)                      # (more than the free tail of a page the log already has)
        reply = remoting.call(send_request("Orders", big))
        assert reply.code == RC.SERVICE_NOT_AVAILABLE and "No space left on device" in reply.remark
        with pytest.raises(Exception):
            producer5.send(message5(big))
        assert pulsar_send(producer, big) != pulsar.Result.Ok          # gave up within its send timeout
        status, body = http(server.http_port, "/healthz")
        doc = json.loads(body)
        assert status == 503 and doc["status"] == "not ready"
        assert "No space left on device" in doc["store"]["broker-a"]
        assert writable_gauge(server.http_port) == 0

        (small_disk / "ballast").unlink()           # space is freed
        assert http(server.http_port, "/healthz")[0] == 200 and writable_gauge(server.http_port) == 1
        assert remoting.call(send_request("Orders", b"4.x after")).code == RC.SUCCESS
        producer5.send(message5(b"5.x after"))
        fresh = client.create_producer(TOPIC, send_timeout_millis=3000, batching_enabled=False)
        assert pulsar_send(fresh, b"after") == pulsar.Result.Ok
        remoting.close()

        reader = client.subscribe(TOPIC, "check", initial_position=pulsar.InitialPosition.Earliest)
        assert [reader.receive(timeout_millis=5000).data() for _ in range(2)] == [b"before", b"after"]
    finally:
        if producer5 is not None:
            producer5.shutdown()
        if client is not None:
            client.close()
        server.stop()
    err = server.proc.stderr.read()
    assert "Traceback" not in err and err.count("cannot write the commit log") == 1


def test_a_pulsar_send_fails_in_its_timeout_on_a_disk_with_a_page_free_but_not_the_message(small_disk, tmp_path):
    """Issue 46, item 2: with 20 KiB free the store's old 4 KiB probe said "writable", so
    /healthz said ready and the Pulsar producer was admitted again after each failed
    SEND (the client reconnects), restarting its send timeout: the send hung for ever and
    the log grew by a dozen lines a second. Now the store refuses until the refused size
    fits: PRODUCER is refused (ServiceNotReady), the send fails within its timeout,
    /healthz says 503, and the state is logged once when it begins."""
    conf = tmp_path / "broker.conf"
    conf.write_text("mapedFileSizeCommitLog=1048576\n")
    server = EmulatorProcess(small_disk / "store", "--config", str(conf), pulsar=True, http=True).start()
    client = None
    try:
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=5)
        producer = client.create_producer(TOPIC, send_timeout_millis=2000, batching_enabled=False)
        late = client.create_producer(TOPIC, send_timeout_millis=2000, batching_enabled=False)
        sent = 0
        while pulsar_send(producer, bytes(64 * 1024)) == pulsar.Result.Ok:       # fill it with Pulsar sends
            sent += 1
        assert sent > 50
        take_every_block(small_disk / "ballast")
        resize_tmpfs(small_disk, "8212k")           # 20 KiB free: a page fits, a 32 KiB message does not
        assert pulsar_send(late, bytes(32 * 1024), wait_s=15) == pulsar.Result.Timeout
        status, body = http(server.http_port, "/healthz")
        assert status == 503 and "No space left on device" in json.loads(body)["store"]["broker-a"]
        assert http(server.http_port, "/healthz")[0] == 503        # its own probe did not end the state

        resize_tmpfs(small_disk, "16m")             # space is freed: ready again, the message fits
        assert http(server.http_port, "/healthz")[0] == 200
        fresh = client.create_producer(TOPIC, send_timeout_millis=3000, batching_enabled=False)
        assert pulsar_send(fresh, bytes(32 * 1024)) == pulsar.Result.Ok
    finally:
        if client is not None:
            client.close()
        server.stop()
    err = server.proc.stderr.read()
    assert "Traceback" not in err
    # one line as the state begins, one as it ends: at most twice each (the fill's state
    # ends when the tmpfs grows, and the 32 KiB message begins another)
    assert 1 <= told(err, "cannot write the commit log") <= 2, err
    assert told(err, "commit-log writes succeed again") <= 2, err

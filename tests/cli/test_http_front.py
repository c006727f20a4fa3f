"""serve's HTTP front: /healthz (ready once every listener is up) and /metrics, parsed by
the Prometheus client's own parser, against a running two-broker serve with traffic."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
# (the http extra: ./dev test installs it; without it these imports fail, they do not skip)
from prometheus_client.parser import text_string_to_metric_families

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, RECONSUME_LATER, Message, Producer, PushConsumer,
                                         RemoteBroker)
from tests.support.processes import EmulatorProcess


def get(port: int, path: str):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type"), exc.read().decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("http") / "store", "--clock", "virtual", brokers=2, http=True).start()
    remote = RemoteBroker(s.address)
    assert main(["topic", "create", "Orders", "--queues", "2", "--server", s.address]) == 0
    producer = Producer("pg", remote).start()
    for i in range(6):
        producer.send(Message("Orders", b"poison" if i == 0 else b"ok"))
    seen = []
    consumer = PushConsumer("billing", remote, max_reconsume_times=0, persist_consumer_offset_interval=100)
    consumer.subscribe("Orders", "*")
    consumer.register_message_listener(lambda msgs, ctx: seen.extend(msgs) or (
        RECONSUME_LATER if msgs[0].body == b"poison" else CONSUME_SUCCESS))
    consumer.start()
    assert remote.run_until(lambda: len(seen) == 6 and consumer.stats.send_back_ok == 1, "15s")
    consumer.persist_offsets()
    remote.run_for("300ms")
    s.remote, s.clients, s.seen = remote, [consumer, producer], seen
    yield s
    for c in s.clients:
        c.shutdown()
    remote.close()
    s.stop()


def samples(server) -> dict:
    status, ctype, text = get(server.http_port, "/metrics")
    assert status == 200 and ctype.startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_healthz_is_ready_when_every_listener_is_up(server):
    status, ctype, text = get(server.http_port, "/healthz")
    body = json.loads(text)
    assert status == 200 and ctype.startswith("application/json")
    assert body["status"] == "ready" and body["listeners"] == {"remoting": True, "broker-b": True}


def test_metrics_count_messages_lag_dead_letters_and_the_delay_queue(server):
    m = samples(server)
    stored = sum(v for (name, labels), v in m.items()
                 if name == "rocketmq_emulator_topic_messages_total" and ("topic", "Orders") in labels)
    assert stored == 6
    dead = sum(v for (name, labels), v in m.items()
               if name == "rocketmq_emulator_group_dead_letters_total" and ("group", "billing") in labels)
    assert dead == 1
    lag = [v for (name, labels), v in m.items()
           if name == "rocketmq_emulator_group_lag" and ("topic", "Orders") in labels]
    assert lag and sum(lag) == 0
    levels = {dict(labels)["level"] for (name, labels) in m if name == "rocketmq_emulator_delay_queue_depth"}
    assert levels == {str(i) for i in range(1, 19)}
    assert {dict(labels)["broker"]: v for (name, labels), v in m.items() if name == "rocketmq_emulator_up"} == {
        "broker-a": 1.0, "broker-b": 1.0}
    assert all(v >= 1 for (name, labels), v in m.items() if name == "rocketmq_emulator_connections")


def test_a_delayed_retry_shows_in_the_delay_queue_until_the_clock_moves(server):
    producer = Producer("pg2", server.remote).start()
    server.clients.append(producer)
    producer.send(Message("Orders", b"later", delay_time_level=3))
    m = samples(server)
    waiting = sum(v for (name, labels), v in m.items()
                  if name == "rocketmq_emulator_delay_queue_depth" and ("level", "3") in labels)
    assert waiting == 1
    feed = json.loads(get(server.http_port, "/api/events?after=0")[2])
    assert [e["kind"] for e in feed][-1] == "delayed" and feed[-1]["delay_level"] == 3
    server.remote.advance_server_clock("10s")
    after = json.loads(get(server.http_port, f"/api/events?after={feed[-1]['seq']}")[2])
    assert [e["kind"] for e in after] == ["redelivered"]
    assert get(server.http_port, "/api/events?after=x")[0] == 400
    m = samples(server)
    assert sum(v for (name, labels), v in m.items()
               if name == "rocketmq_emulator_delay_queue_depth" and ("level", "3") in labels) == 0


def test_a_stopped_broker_is_down_in_metrics_but_does_not_make_the_server_unready(server):
    assert main(["broker", "stop", "broker-b", "--server", server.address]) == 0
    try:
        status, _, text = get(server.http_port, "/healthz")
        assert status == 200 and json.loads(text)["status"] == "ready"
        up = {dict(labels)["broker"]: v for (name, labels), v in samples(server).items()
              if name == "rocketmq_emulator_up"}
        assert up == {"broker-a": 1.0, "broker-b": 0.0}
    finally:
        assert main(["broker", "start", "broker-b", "--server", server.address]) == 0


def test_an_unknown_path_is_a_json_404(server):
    status, ctype, text = get(server.http_port, "/nope")
    assert status == 404 and ctype.startswith("application/json") and json.loads(text)["error"]


def post(port: int, path: str, body) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_dashboards_state_and_its_actions_refuse_bad_input_with_json(server):
    state = json.loads(get(server.http_port, "/api/state")[2])
    assert state["clock"]["virtual"] and [b["name"] for b in state["brokers"]] == ["broker-a", "broker-b"]
    [billing] = [g for g in state["groups"] if g["group"] == "billing"]
    assert billing["dead_letters"] == 1 and len(state["dead_letters"]) == 1
    assert post(server.http_port, "/api/clock/advance", {"duration": "soon"})[0] == 400
    assert post(server.http_port, "/api/clock/advance", b"not json")[0] == 400
    status, doc = post(server.http_port, "/api/clock/advance", {"duration": "next"})
    assert (status, "no next due message" in doc["error"]) == (409, True)
    status, doc = post(server.http_port, "/api/clock/advance", {"duration": "1s"})
    assert status == 200 and doc["advanced_ms"] == 1000
    assert post(server.http_port, "/api/dlq/redrive", {"all": True})[0] == 400
    assert post(server.http_port, "/api/dlq/redrive", {"group": "billing"})[0] == 400
    assert post(server.http_port, "/api/dlq/redrive", {"group": "nobody", "all": True})[0] == 409
    status, doc = post(server.http_port, "/api/dlq/redrive", {"group": "billing", "ids": ["zz"]})
    assert status == 400 and "not a dead letter of billing" in doc["error"]
    [dead] = state["dead_letters"]
    for either in (dead["msg_id"], dead["offset_msg_id"]):          # either id, as `message show` takes
        status, doc = post(server.http_port, "/api/dlq/redrive", {"group": "billing", "ids": [either],
                                                                  "dry_run": True})
        assert (status, [s["id"] for s in doc["sent"]]) == (200, [dead["offset_msg_id"]])
    status, doc = post(server.http_port, "/api/dlq/redrive", {"group": "billing", "all": True, "dry_run": True})
    assert status == 200 and doc["dry_run"] and len(doc["sent"]) == 1
    assert "<title>rocketmq-emulator</title>" in get(server.http_port, "/")[2]


def test_the_dashboard_names_every_message_by_its_message_id(server):
    """One id across the page: waiting retries, live events and dead letters give the
    message id (UNIQ_KEY, what consumers and `message send` show); a dead letter carries
    its DLQ record's offsetMsgId beside it (the id `dlq list` and a re-drive take)."""
    state = json.loads(get(server.http_port, "/api/state")[2])
    [dead] = state["dead_letters"]
    [poison] = [m for m in server.seen if m.body == b"poison"][:1]
    [listed] = server.remote.dead_letters("billing")
    assert dead["msg_id"] == poison.msg_id == listed.msg_id
    assert dead["offset_msg_id"] == listed.offset_msg_id != dead["msg_id"]


def test_a_real_clock_server_refuses_to_move_its_time(tmp_path):
    s = EmulatorProcess(tmp_path / "store", http=True).start()
    try:
        status, doc = post(s.http_port, "/api/clock/advance", {"duration": "10s"})
        assert status == 409 and "real clock" in doc["error"]
        assert json.loads(get(s.http_port, "/api/state")[2])["clock"]["virtual"] is False
    finally:
        s.stop()

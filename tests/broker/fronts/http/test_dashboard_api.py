"""The dashboard's JSON views on a running `serve` (issue 39): a poison message found and
followed by its ids, its life the same after a restart (what the store proves) with the
event log's part gone and said so, pages bounded, bad input a 400 with one line, nothing
there a 404, the rates in /metrics — and the HTTP front's rules (Host, token) before
every new route, as before the old ones (tests/cli/test_http_security.py)."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import RECONSUME_LATER, Message, Producer, PushConsumer, RemoteBroker
from tests.cli.test_http_security import request
from tests.support.processes import EmulatorProcess, wait_for

VIEWS = ("/api/clock", "/api/search?q=x", "/api/message?id=x", "/api/consumers?dialect=4.x", "/api/group?name=billing",
         "/api/bar?group=billing&step=3", "/api/waiting", "/api/dead?group=billing", "/api/topics", "/api/rates")


def get(port: int, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def advance(port: int, duration: str) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/clock/advance", method="POST",
                                 data=json.dumps({"duration": duration}).encode(),
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()


def run_poison(server) -> tuple[str, list]:
    """A poison message of Orders through billing's ladder (2 retries) to the DLQ."""
    remote = RemoteBroker(server.address)
    assert main(["topic", "create", "Orders", "--queues", "1", "--server", server.address]) == 0
    seen = []
    consumer = PushConsumer("billing", remote, max_reconsume_times=2)
    consumer.subscribe("Orders", "*")
    consumer.register_message_listener(lambda msgs, ctx: seen.extend(msgs) or RECONSUME_LATER)
    producer = Producer("pg", remote).start()
    consumer.start()
    remote.run_in_background()
    receipt = producer.send(Message("Orders", b"poison", keys="order-17"))
    for n, step in ((1, "10s"), (2, "30s"), (3, None)):
        wait_for(lambda: len(seen) == n)
        if step:
            advance(server.http_port, step)
    wait_for(lambda: get(server.http_port, "/api/dead?group=billing")[1]["total"] == 1)
    remote.call(consumer.shutdown)
    remote.call(producer.shutdown)
    remote.close()
    return receipt, seen


def test_a_message_is_followed_by_its_ids_and_its_life_is_the_same_after_a_restart(tmp_path):
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", http=True).start()
    try:
        receipt, seen = run_poison(server)
        port = server.http_port
        status, found = get(port, "/api/search?q=order-17")
        assert status == 200 and [r["id"] for r in found["results"]] == [receipt.msg_id]
        status, life = get(port, "/api/message?id=" + receipt.offset_msg_id)
        assert status == 200 and life["msg_id"] == receipt.msg_id
        assert {e["source"] for e in life["timeline"]} == {"store", "events"}
        assert [e["attempt"] for e in life["timeline"] if e["what"] == "delivered"] == [0, 1, 2]
        status, bar = get(port, "/api/bar?group=billing&dialect=4.x&which=dead")
        assert bar["total"] == 1 and bar["rows"][0]["msg_id"] == receipt.msg_id
        status, group = get(port, "/api/group?name=billing")
        assert group["dialect"] == "4.x" and group["ladder"]["dead_lettered"] == 1
        assert {s["step"]: s["passed"] for s in group["ladder"]["steps"] if s["passed"]} == {3: 1, 4: 1}
        assert group["clients"] == []                     # its consumer has left
    finally:
        server.stop()
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", http=True).start()
    try:
        status, again = get(server.http_port, "/api/message?id=" + receipt.msg_id)
        assert status == 200
        store = lambda doc: [e["text"] for e in doc["timeline"] if e["source"] == "store"]   # noqa: E731
        assert store(again) == store(life)                # what the store proves, unchanged
        assert not [e for e in again["timeline"] if e["source"] == "events"]
        assert again["before_events"] is True             # the page says what is not known any more
        assert get(server.http_port, "/api/dead?group=billing")[1]["total"] == 1
    finally:
        server.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("api") / "store", "--clock", "virtual", http=True).start()
    s.receipt, s.seen = run_poison(s)
    yield s
    s.stop()


@pytest.mark.parametrize("path, status, says", [
    ("/api/search", 400, "q is the text to look for"),
    ("/api/search?q=%20", 400, "q is the text to look for"),
    ("/api/message?id=", 400, "id is a message id"),
    ("/api/message?id=7F000001000022B30000000000999999", 404, "no running broker holds a message"),
    ("/api/consumers?dialect=6.x", 400, "dialect is one of 4.x, 5.x, pulsar"),
    ("/api/consumers?limit=501", 400, "limit must be from 0 to 500"),
    ("/api/consumers?start=-1", 400, "start must be from 0"),
    ("/api/consumers?start=ten", 400, "start is a whole number"),
    ("/api/group", 400, "name is needed"),
    ("/api/group?name=nobody", 404, "no running broker knows a group 'nobody'"),
    ("/api/bar?group=billing&which=all&step=3", 400, "which is waiting, passed or dead"),
    ("/api/bar?group=billing&which=waiting", 400, "step is the bar's level"),
    ("/api/waiting?level=0", 400, "level must be from 1"),
    ("/api/rates?seconds=0", 400, "seconds must be from 1 to 3600"),
])
def test_bad_input_is_a_400_and_nothing_there_a_404_with_one_readable_line(server, path, status, says):
    got, doc = get(server.http_port, path)
    assert got == status and says in doc["error"] and "\n" not in doc["error"]


def test_pages_are_bounded_and_the_rates_are_per_second_of_the_brokers_clock(server):
    port = server.http_port
    status, page = get(port, "/api/waiting?limit=0")
    assert status == 200 and page["rows"] == [] and page["total"] == 0
    status, topics = get(port, "/api/topics?limit=1")
    assert topics["total"] >= 3 and len(topics["rows"]) == 1               # Orders, %RETRY%billing, %DLQ%billing
    status, rates = get(port, "/api/rates?seconds=120")
    assert rates["seconds"] == 120 and all(len(v) == 120 for v in rates["totals"].values())
    assert rates["first_s"] == rates["now_ms"] // 1000 - 119
    assert sum(rates["totals"]["produced"]) == 1 and sum(rates["totals"]["dead_lettered"]) == 1
    assert sum(rates["totals"]["retried"]) == 2                             # two send-backs, 10 s apart
    assert [g["group"] for g in rates["by_group"]] == ["billing"]
    # the two `clock advance`s of the ladder are said, each with the seconds it skipped
    assert [j["to_ms"] - j["from_ms"] for j in rates["jumps"]] == [10_000, 30_000]
    assert rates["jumps"][-1]["to_ms"] <= rates["now_ms"]
    assert rates["started_ms"] == 1_704_067_200_000           # the virtual clock's start: the rates count from there
    by_topic = {t["topic"]: (t["produced"], t["consumed"], t["retried"]) for t in rates["by_topic"]}
    assert by_topic == {"Orders": (1, 1, 2), "%RETRY%billing": (0, 2, 0)}   # the retries count where they came from
    status, of_topic = get(port, "/api/rates?seconds=120&topic=Orders")
    assert of_topic["totals"]["retried"] == rates["totals"]["retried"]
    status, of_none = get(port, "/api/rates?seconds=120&topic=Other")
    assert not any(sum(v) for v in of_none["totals"].values()) and of_none["by_group"] == []
    status, state = get(port, "/api/state")
    assert state["totals"] == {"groups": 1, "topics": 1, "waiting": 0, "dead_letters": 1}
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    names = {f.name for f in text_string_to_metric_families(text)}
    assert {"rocketmq_emulator_produced_per_second", "rocketmq_emulator_consumed_per_second",
            "rocketmq_emulator_retried_per_second", "rocketmq_emulator_dead_lettered_per_second"} <= names


def test_the_new_views_follow_the_fronts_host_rule(server):
    for path in VIEWS:
        status, fields, body = request(server.http_port, "GET", path, host=f"evil.example:{server.http_port}")
        assert status == 421 and "DNS rebinding" in json.loads(body)["error"] and b"order-17" not in body, path


def test_with_a_token_every_new_view_wants_it(tmp_path):
    s = EmulatorProcess(tmp_path / "store", "--http-token", "s3cret", http=True).start()
    try:
        for path in VIEWS:
            status, fields, _ = request(s.http_port, "GET", path)
            assert (status, fields["www-authenticate"]) == (401, "Bearer"), path
            status, _, _ = request(s.http_port, "GET", path, headers={"Authorization": "Bearer s3cret"})
            assert status in (200, 404), path                          # (no group billing there: 404)
    finally:
        s.stop()


def test_a_search_text_is_taken_as_it_is_typed(server):
    q = urllib.parse.quote(" order-17 ")
    assert [r["matched"] for r in get(server.http_port, "/api/search?q=" + q)[1]["results"]] == ["key"]


def test_each_view_says_what_it_cost_in_a_server_timing_header(server):
    for path in ("/api/state", "/api/message?id=" + server.receipt.msg_id, "/api/rates"):
        with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}{path}", timeout=10) as r:
            timing = dict(part.strip().split(";dur=") for part in r.headers["Server-Timing"].split(","))
        assert set(timing) == {"view", "cpu"} and all(float(v) >= 0 for v in timing.values()), path


def test_a_message_on_another_broker_of_the_cluster_is_found_by_each_of_its_ids(tmp_path):
    """`serve --brokers 2`: a topic only broker-b holds; its message is found from the one
    HTTP front by key, message id and offset id, and its page names broker-b."""
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", brokers=2, http=True).start()
    try:
        assert main(["topic", "create", "OnB", "--queues", "1", "--broker", "broker-b", "--server", server.address]) == 0
        remote = RemoteBroker(server.address)
        producer = Producer("pg", remote).start()
        receipt = producer.send(Message("OnB", b"kept by broker-b", keys="order-b"))
        remote.call(producer.shutdown)
        remote.close()
        port = server.http_port
        status, found = get(port, "/api/search?q=order-b")
        assert status == 200 and [(r["id"], r["broker"], r["matched"]) for r in found["results"]] == \
            [(receipt.msg_id, "broker-b", "key")]
        for ident in (receipt.msg_id, receipt.offset_msg_id):
            status, life = get(port, "/api/message?id=" + ident)
            assert status == 200 and (life["broker"], life["msg_id"], life["offset_msg_id"]) == \
                ("broker-b", receipt.msg_id, receipt.offset_msg_id)
            assert life["timeline"][0]["text"] == "stored in OnB (queue 0, offset 0)"
            assert set(life["events_since_ms"]) == {"broker-a", "broker-b"}
    finally:
        server.stop()

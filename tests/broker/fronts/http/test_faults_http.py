"""Fault rules over HTTP (issue 38) on a running `serve --brokers 2`: added, listed with
their counts, removed and cleared on every broker; a rule from the API refuses a real
client's sends over TCP, each refusal a line of the live feed naming its rule and a count
of /metrics per rule (kept after the rule is gone); bad rules a 400 naming the field,
with nothing installed; the HTTP guard before every change."""
from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import Message, Producer, RemoteBroker
from rocketmq_emulator.client_sdk.errors import MQBrokerError
from tests.cli.test_http_security import request
from tests.support.cli_run import run_cli
from tests.support.processes import EmulatorProcess

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("faults-http") / "store", "--clock", "virtual", brokers=2,
                        http=True).start()
    assert main(["topic", "create", "Orders", "--queues", "1", "--server", s.address]) == 0
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def no_rules_left(server):
    yield
    call(server, "DELETE", "/api/faults", headers=JSON)


def call(server, method: str, path: str, doc=None, headers: dict | None = None) -> tuple[int, object]:
    body = json.dumps(doc).encode() if doc is not None else b""
    status, fields, raw = request(server.http_port, method, path, body, JSON if headers is None else headers)
    return status, json.loads(raw) if raw else None


def rules(server) -> list[dict]:
    status, doc = call(server, "GET", "/api/faults")
    assert status == 200
    return doc


def metrics(server) -> dict:
    """{(name, labels...): value} of the fault samples of /metrics."""
    status, _, raw = request(server.http_port, "GET", "/metrics")
    assert status == 200
    out = {}
    for family in text_string_to_metric_families(raw.decode()):
        for s in family.samples:
            if "fault" in s.name:
                out[(s.name, *sorted(s.labels.items()))] = s.value
    return out


def test_a_rule_is_added_listed_removed_and_cleared_on_every_broker(server):
    status, added = call(server, "POST", "/api/faults", {"operation": "pull", "action": "delay", "delay": "5s",
                                                         "group": "billing", "times": "3", "window": ["0s", "1h"]})
    assert status == 201, added
    assert added["brokers"] == ["broker-a", "broker-b"]
    assert (added["operation"], added["action"], added["delay_ms"], added["group"], added["left"]) == \
        ("pull", "delay", 5000, "billing", 3)
    start, end = added["window_ms"]
    assert end - start == 3_600_000
    listed = rules(server)
    assert [(r["id"], r["brokers"], r["hits"], r["matched"]) for r in listed] == [
        (added["id"], ["broker-a", "broker-b"], 0, 0)]
    status, second = call(server, "POST", "/api/faults", {"operation": "send", "action": "drop", "stored": True,
                                                          "broker": "broker-b", "delay": 0})
    assert status == 201 and second["id"] == added["id"] + 1 and second["stored"] is True
    assert call(server, "DELETE", f"/api/faults/{added['id']}") == (200, {"removed": True})
    assert call(server, "DELETE", f"/api/faults/{added['id']}") == (200, {"removed": False})     # gone: no error
    assert [(r["id"], r["brokers"]) for r in rules(server)] == [(second["id"], ["broker-a", "broker-b"])]
    assert call(server, "DELETE", "/api/faults") == (200, {"cleared": 1})
    assert rules(server) == []


def test_a_rule_keeps_one_id_on_every_broker_when_one_was_stopped_as_it_was_added(server):
    """Every member gets every rule, up or stopped, whichever way it came (the CLI's wire
    request or HTTP): an id names the same rule everywhere."""
    assert main(["broker", "stop", "broker-b", "--server", server.address]) == 0
    try:
        by_cli = run_cli("fault", "add", "ack", "refuse", "--json", "--server", server.address)
        assert by_cli.returncode == 0, by_cli.stderr
        first = json.loads(by_cli.stdout)
        assert first["brokers"] == ["broker-a", "broker-b"]
    finally:
        assert main(["broker", "start", "broker-b", "--server", server.address]) == 0
    status, second = call(server, "POST", "/api/faults", {"operation": "route", "action": "drop"})
    assert status == 201
    assert [(r["brokers"], r["id"], r["operation"]) for r in rules(server)] == [
        (["broker-a", "broker-b"], first["id"], "ack"), (["broker-a", "broker-b"], second["id"], "route")]
    assert call(server, "DELETE", f"/api/faults/{first['id']}") == (200, {"removed": True})
    assert [(r["brokers"], r["operation"]) for r in rules(server)] == [(["broker-a", "broker-b"], "route")]


def test_a_rule_from_the_api_refuses_a_clients_sends_and_is_counted_per_rule(server):
    before = metrics(server)
    status, rule = call(server, "POST", "/api/faults", {"operation": "send", "action": "refuse", "topic": "Orders"})
    assert status == 201
    _, seen = call(server, "GET", "/api/events?after=0")
    last_seq = seen[-1]["seq"] if seen else 0
    remote = RemoteBroker(server.address)
    producer = Producer("pg", remote).start()
    remote.run_in_background()
    try:
        with pytest.raises(MQBrokerError):                  # refused on both brokers, every retry
            remote.call(lambda: producer.send(Message("Orders", b"refused")))
        [listed] = rules(server)
        hits = listed["hits_on"]
        fired = sum(hits.values())
        assert fired == listed["hits"]
        assert fired == 3 and set(hits) == {"broker-a", "broker-b"}             # the first try and 2 retries
        _, events = call(server, "GET", f"/api/events?after={last_seq}")
        faults = [e for e in events if e["kind"] == "fault"]
        assert len(faults) == fired
        assert {(e["rule"], e["action"], e["operation"], e["topic"]) for e in faults} == {
            (rule["id"], "refuse", "send", "Orders")}
        assert "msg_id" not in faults[0] and {e["broker"] for e in faults} == {"broker-a", "broker-b"}
        now = metrics(server)
        for broker, n in hits.items():
            key = ("rocketmq_emulator_faults_applied_total", ("action", "refuse"), ("broker", broker),
                   ("operation", "send"), ("rule", str(rule["id"])))
            assert now[key] == n
            total = ("rocketmq_emulator_faults_applied_all_rules_total", ("broker", broker))
            assert now[total] - before.get(total, 0) == n
            assert now[("rocketmq_emulator_fault_rules", ("broker", broker))] == 1
        # a rule used up by the fault it applied stays listed as spent (fires no more);
        # removed, /metrics still counts it
        assert call(server, "DELETE", f"/api/faults/{rule['id']}")[1] == {"removed": True}
        status, once = call(server, "POST", "/api/faults", {"operation": "send", "action": "refuse",
                                                             "topic": "Orders", "times": 1})
        assert status == 201
        assert remote.call(lambda: producer.send(Message("Orders", b"through"))).msg_id        # refused, retried
        [spent] = rules(server)
        assert (spent["id"], spent["state"], spent["matched"], spent["hits"], spent["left"]) == (
            once["id"], "spent", 1, 1, 0)
        after = metrics(server)
        # ("times" counts across the cluster: refused once on one broker, then stored)
        assert sum(v for k, v in after.items() if k[0] == "rocketmq_emulator_faults_applied_total"
                   and ("rule", str(once["id"])) in k) == 1
        assert sum(v for k, v in after.items() if k[0] == "rocketmq_emulator_faults_applied_total"
                   and ("rule", str(rule["id"])) in k) == fired                   # kept after removal
        assert all(after[("rocketmq_emulator_fault_rules", ("broker", b))] == 0 for b in hits)
    finally:
        remote.call(producer.shutdown)
        remote.close()


@pytest.mark.parametrize("doc, says", [
    ({"operation": "send", "action": "refuse", "probability": 1.5}, "probability: a number from 0 to 1"),
    ({"operation": "send", "action": "delay", "delay": "-5s"}, "delay:"),
    ({"operation": "send", "action": "delay", "delay": -5}, "delay: a duration >= 0"),
    ({"operation": "send", "action": "delay", "delay": "soon"}, "delay:"),
    ({"operation": "send", "action": "refuse", "broker": "broker-z"}, "broker: no broker named 'broker-z'"),
    ({"operation": "heartbeat", "action": "duplicate"}, "action: duplicate does not apply to heartbeat"),
    ({"operation": "explode", "action": "refuse"}, "operation: 'explode' is not one of"),
    ({"operation": "send"}, "action: needed"),
    ({"operation": "send", "action": "refuse", "colour": "red"}, "colour: not a field of a fault rule"),
    ({"operation": "send", "action": "refuse", "times": "many"}, "times: a number"),
    ({"operation": "send", "action": "refuse", "times": 0}, "times: a whole number >= 1"),
    ({"operation": "send", "action": "refuse", "stored": "yes"}, "stored: true or false"),
    ({"operation": "send", "action": "refuse", "window": ["1s"]}, "window: two durations from now"),
    ({"operation": "send", "action": "refuse", "window": ["10s", "5s"]}, "window: its end must come after"),
    ({"operation": "send", "action": "refuse", "dialect": "6.x"}, "dialect: '6.x' is not one of"),
    # issue 46.7: names a terminal would act on, or that no client sends, and a delay past the one bound
    ({"operation": "send", "action": "refuse", "topic": "T\x1b[2J\nrule 7 on broker-a: forged"}, "topic: "),
    ({"operation": "send", "action": "refuse", "group": "g\u202eevil"}, "group: "),
    ({"operation": "send", "action": "refuse", "client": "c" * 10_000}, "client: "),
    ({"operation": "send", "action": "delay", "delay": 10 ** 30}, "delay: at most 1d"),
    ({"operation": "send", "action": "delay", "delay": "99999999999d"}, "delay: at most 1d"),
    ({"operation": "send", "action": "refuse", "times": 2 ** 64}, "times: a whole number >= 1"),
    ({"operation": "send", "action": "refuse", "window": ["1s", 10 ** 30]}, "window: "),
])
def test_a_bad_rule_is_a_400_naming_the_field_and_installs_nothing(server, doc, says):
    status, answer = call(server, "POST", "/api/faults", doc)
    assert status == 400
    assert says in answer["error"] and not any(c in answer["error"] for c in "\n\x1b\u202e")
    assert len(answer["error"]) < 600 and rules(server) == []


def test_the_http_guard_stands_before_every_change(server):
    rule = {"operation": "send", "action": "refuse"}
    assert call(server, "POST", "/api/faults", None, {"Content-Type": "application/json"})[0] == 400     # no JSON
    assert call(server, "POST", "/api/faults", [1, 2])[0] == 400                                       # not an object
    assert call(server, "POST", "/api/faults", rule, {"Content-Type": "text/plain"})[0] == 415
    assert call(server, "POST", "/api/faults", rule, {**JSON, "Origin": "http://evil.example"})[0] == 403
    assert call(server, "POST", "/api/faults", rule, {**JSON, "Sec-Fetch-Site": "cross-site"})[0] == 403
    status, _ = call(server, "POST", "/api/faults", rule)
    assert status == 201
    assert call(server, "DELETE", "/api/faults", headers={})[0] == 415                 # a change wants JSON
    assert call(server, "DELETE", "/api/faults/1", headers={**JSON, "Origin": "http://evil.example"})[0] == 403
    status, answer = call(server, "DELETE", "/api/faults/one")
    assert status == 400 and answer["error"].startswith("id: a rule's number")
    assert [r["brokers"] for r in rules(server)] == [["broker-a", "broker-b"]]      # still there, on both brokers


def test_a_token_is_wanted_and_a_window_must_not_have_started_on_a_real_clock_server(tmp_path):
    """With a token every fault route wants it; on the real clock a window that starts
    in the past would fire or not depending on when the request ran: a 400 naming it."""
    s = EmulatorProcess(tmp_path / "store", "--http-token", "s3cret", http=True).start()
    try:
        bearer = {**JSON, "Authorization": "Bearer s3cret"}
        assert request(s.http_port, "GET", "/api/faults")[0] == 401
        rule = json.dumps({"operation": "send", "action": "refuse"}).encode()
        assert request(s.http_port, "POST", "/api/faults", rule, JSON)[0] == 401
        assert request(s.http_port, "DELETE", "/api/faults", b"", JSON)[0] == 401
        past = json.dumps({"operation": "send", "action": "refuse", "window": [-60_000, "1m"]}).encode()
        status, _, raw = request(s.http_port, "POST", "/api/faults", past, bearer)
        assert status == 400 and json.loads(raw)["error"].startswith("window: this broker runs on the real clock")
        status, _, raw = request(s.http_port, "POST", "/api/faults", rule, bearer)
        assert status == 201
        status, fields, raw = request(s.http_port, "GET", "/api/faults", b"", bearer)
        assert status == 200 and [r["operation"] for r in json.loads(raw)] == ["send"]
        assert fields["server-timing"].startswith("view;dur=")
    finally:
        s.stop()

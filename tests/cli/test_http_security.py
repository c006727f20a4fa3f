"""Who may ask serve's HTTP front (issue 34, item 1), against a running serve: the Host
header must name the server (DNS rebinding), a request that changes something must be
JSON from the dashboard's own origin (CSRF), a token when one is set, and hostile JSON
is a 400. (The same in a real browser: tests/broker/fronts/http/test_dashboard_csrf.py.)"""
from __future__ import annotations

import json
import socket

import pytest

from rocketmq_emulator.broker.fronts.http.guard import access_for, host_name
from rocketmq_emulator.client_sdk import Message, Producer, RemoteBroker
from tests.support.logs import told
from tests.support.processes import EmulatorProcess


def request(port: int, method: str, path: str, body: bytes = b"", headers: dict | None = None,
            host: str | None = None) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 request over a raw socket (any Host, any header): (status, headers, body)."""
    head = {"Host": host or f"127.0.0.1:{port}", "Connection": "close", **(headers or {})}
    if body or method == "POST":
        head["Content-Length"] = str(len(body))
    raw = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw.encode() + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    top, _, rest = data.partition(b"\r\n\r\n")
    lines = top.decode().split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), fields, rest


def clock(port: int) -> int:
    return json.loads(request(port, "GET", "/api/state")[2])["clock"]["now_ms"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("sec") / "store", "--clock", "virtual", "--http-allowed-host",
                        "dash.internal", http=True).start()
    remote = RemoteBroker(s.address)
    producer = Producer("pg", remote).start()
    producer.send(Message("Orders", b"secret order body"))
    producer.shutdown()
    remote.close()
    yield s
    s.stop()


def test_a_host_that_is_not_this_server_reads_nothing(server):
    port = server.http_port
    assert b"secret order body" not in request(port, "GET", "/api/state")[2]    # (nothing waits: not shown)
    for path in ("/", "/api/state", "/api/events?after=0", "/metrics", "/healthz"):
        status, fields, body = request(port, "GET", path, host=f"evil.example:{port}")
        assert status == 421 and fields["content-type"].startswith("application/json"), path
        assert "DNS rebinding" in json.loads(body)["error"] and b"Orders" not in body
    status, _, _ = request(port, "POST", "/api/clock/advance", b'{"duration": "1h"}',
                           {"Content-Type": "application/json"}, host=f"evil.example:{port}")
    assert status == 421
    for good in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LOCALHOST.:{port}", "localhost",
                 f"dash.internal:{port}"):
        assert request(port, "GET", "/api/state", host=good)[0] == 200, good
    assert request(port, "GET", "/api/state", host=f"dash.internal.evil.example:{port}")[0] == 421


def test_a_change_needs_json_from_the_dashboards_own_origin(server):
    port = server.http_port
    start = clock(port)
    advance = b'{"duration": "1h"}'
    refused = [
        (415, {"Content-Type": "text/plain"}),                                   # a no-preflight fetch
        (415, {"Content-Type": "application/x-www-form-urlencoded"}),            # a form
        (415, {"Content-Type": "multipart/form-data; boundary=x"}),
        (415, {}),
        (403, {"Content-Type": "application/json", "Origin": "http://evil.example"}),
        (403, {"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{port + 1}"}),
        (403, {"Content-Type": "application/json", "Origin": "null"}),           # a sandboxed frame
        (403, {"Content-Type": "text/plain", "Origin": "http://evil.example"}),
        (403, {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}),
    ]
    for status, headers in refused:
        got, fields, body = request(port, "POST", "/api/clock/advance", advance, headers)
        assert (got, fields["content-type"].split(";")[0]) == (status, "application/json"), headers
        assert json.loads(body)["error"]
        got, _, _ = request(port, "POST", "/api/dlq/redrive", b'{"group": "billing", "all": true}', headers)
        assert got == status, headers
    assert clock(port) == start                                                  # nothing moved
    ok = {"Content-Type": "application/json; charset=utf-8", "Origin": f"http://127.0.0.1:{port}",
          "Sec-Fetch-Site": "same-origin"}
    got, _, body = request(port, "POST", "/api/clock/advance", advance, ok)     # the dashboard's own button
    assert got == 200 and json.loads(body)["advanced_ms"] == 3_600_000
    got, _, body = request(port, "POST", "/api/clock/advance", b'{"duration": "1s"}',
                           {"Content-Type": "application/json"})                # curl, a script: no Origin
    assert got == 200 and clock(port) == start + 3_601_000


@pytest.mark.parametrize("body, status", [
    (b"[" * 100_000 + b"]" * 100_000, 400),              # RecursionError in the JSON parser
    (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, 400),
    (b"[1, 2]", 400),
    (b'"text"', 400),
    (b"\xff\xfe\x00", 400),
    (b'{"duration": true}', 400),
    (b'{"duration": null}', 400),
    (b'{"duration": [1]}', 400),
    (b'{"duration": {"a": 1}}', 400),
    (b'{"duration": 1e400}', 400),
    (b'{"duration": "1' + b"0" * 5000 + b'ms"}', 400),
    (b'{"duration": ' + b"9" * 4000 + b"}", 400),       # past Python's int-from-text limit
    (b'{"duration": ' + b"9" * 30 + b"}", 400),         # past a Java long
    (b'{"duration": -5}', 409),
    (b'{"duration": NaN}', 400),
    (b'{"duration": "' + b"x" * 900_000 + b'"}', 400),
    (b"x" * (2 * 1024 * 1024), 413),
])
def test_hostile_json_is_a_400_not_a_500(server, body, status):
    got, fields, text = request(server.http_port, "POST", "/api/clock/advance", body,
                                {"Content-Type": "application/json"})
    assert got == status and fields["content-type"].startswith("application/json")
    assert json.loads(text)["error"]


def test_a_body_announced_over_the_limit_is_refused_before_it_is_sent(server):
    head = (f"POST /api/clock/advance HTTP/1.1\r\nHost: 127.0.0.1:{server.http_port}\r\nContent-Type: "
            f"application/json\r\nContent-Length: {50 * 1024 * 1024}\r\n\r\n{{").encode()
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as s:
        s.sendall(head)                                    # 50 MB announced, one byte sent
        assert s.recv(65536).startswith(b"HTTP/1.1 413")


def test_hostile_json_leaves_no_traceback_in_the_log(server):
    server.stop()
    err = server.proc.stderr.read()
    assert "Traceback" not in err and "RecursionError" not in err and " ERROR " not in err
    assert told(err, "answered 4") == 7 + 18 + 17 + 1              # one WARNING line per refusal (rate-limited)
    assert len(err.splitlines()) < 30


def test_with_a_token_every_endpoint_but_healthz_wants_it(tmp_path):
    s = EmulatorProcess(tmp_path / "store", "--clock", "virtual", "--http-token", "s3cret", http=True).start()
    try:
        port = s.http_port
        assert request(port, "GET", "/healthz")[0] == 200                         # probes need no token
        for path in ("/", "/api/state", "/api/events", "/metrics"):
            status, fields, body = request(port, "GET", path)
            assert (status, fields["www-authenticate"]) == (401, "Bearer") and b"token" in body, path
            assert request(port, "GET", path, headers={"Authorization": "Bearer s3cre"})[0] == 401
            assert request(port, "GET", path, headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert request(port, "POST", "/api/clock/advance", b'{"duration": "1s"}',
                       {"Content-Type": "application/json"})[0] == 401
        status, fields, _ = request(port, "GET", "/?token=s3cret")               # the browser's first visit
        assert status == 200
        cookie = fields["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and cookie.startswith("rocketmq_emulator_token=")
        jar = {"Cookie": cookie.split(";")[0]}
        assert request(port, "GET", "/api/state", headers=jar)[0] == 200
        assert request(port, "POST", "/api/clock/advance", b'{"duration": "1s"}',
                       {"Content-Type": "application/json", **jar})[0] == 200
        assert request(port, "GET", "/?token=wrong")[0] == 401
    finally:
        s.stop()


def test_the_access_rules_by_bind_address():
    loop, made = access_for("127.0.0.1")
    assert (loop.token, made) == (None, False) and loop.hosts == {"127.0.0.1", "localhost", "::1"}
    assert access_for("::1")[0].token is None and access_for("localhost")[0].token is None
    lan, made = access_for("10.1.2.3", ["Dash.Example."])                      # beyond loopback: a token is made up
    assert made and len(lan.token) >= 32 and {"10.1.2.3", "dash.example"} <= lan.hosts
    assert access_for("10.1.2.3")[0].token != lan.token
    given, made = access_for("10.1.2.3", token="mine")
    assert (given.token, made) == ("mine", False)
    assert access_for("127.0.0.1", token="mine")[0].token == "mine"             # asked for: wanted on loopback too
    every, made = access_for("0.0.0.0", addresses=(["192.0.2.7"], ["fe80::1"]))
    assert made and {"192.0.2.7", "fe80::1", "127.0.0.1"} <= every.hosts and "0.0.0.0" not in every.hosts
    assert [host_name(h) for h in ("[::1]:80", "LOCALHOST.", "a.b:8080", "::1")] == ["::1", "localhost", "a.b", "::1"]

"""The Pulsar admin REST refuses to create topics Pulsar refuses (issue 46.7): a name of
characters outside NamedEntity's (``[-=:.a-zA-Z0-9_]``: ``<``, a newline, ESC, a
right-to-left override) or a dot segment (``.``, ``..``: a URL path resolves it away) is
a 412 with a one-line reason, as Pulsar's admin answers, and nothing is made."""
from __future__ import annotations

import pytest

from tests.support.pulsar_http import http, serve_pulsar

NS = "/admin/v2/persistent/public/default"
REFUSED = ["%2E%2E", "%2E", "a%3Cb", "line%0Aforged", "esc%1B%5B31m", "right%E2%80%AEto-left", "sp%20ace"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = serve_pulsar(tmp_path_factory.mktemp("admin-names") / "store")
    yield s
    s.stop()


@pytest.mark.parametrize("encoded", REFUSED)
@pytest.mark.parametrize("made_as", ["", "/partitions"], ids=["non-partitioned", "partitioned"])
def test_a_name_pulsar_refuses_is_a_412_and_makes_nothing(server, encoded, made_as):
    status, doc = http(server.http_port, "PUT", f"{NS}/{encoded}{made_as}", 2 if made_as else None)
    assert status == 412, (status, doc)
    reason = doc["reason"]
    assert reason.startswith("Topic name is not valid") and not any(c in reason for c in "\n\r\x1b\u202e")
    _, topics = http(server.http_port, "GET", NS)
    assert topics == [] and http(server.http_port, "GET", f"{NS}/partitioned")[1] == []


@pytest.mark.parametrize("name", ["orders", "a.b", "k=v:1", "Under_score-1"])
def test_the_names_pulsar_takes_are_made(server, name):
    assert http(server.http_port, "PUT", f"{NS}/{name}") == (204, None)
    assert f"persistent://public/default/{name}" in http(server.http_port, "GET", NS)[1]
    assert http(server.http_port, "DELETE", f"{NS}/{name}") == (204, None)

"""The Pulsar admin REST refuses to create a topic no one could name or read (issue 46.7):
a dot segment (``.``, ``..``: a URL path resolves it away), a control character (a
newline, ESC) or an invisible format character (a right-to-left override) in the local
name, or a tenant or namespace outside NamedEntity's characters, is a 412 with a
one-line reason, and nothing is made. What a default Pulsar broker makes (a local name
with ``<``, a quote or a space: strictTopicNameEnabled is off by default) is made here too,
and shown escaped where it is printed."""
from __future__ import annotations

import pytest

from tests.support.pulsar_http import http, serve_pulsar

NS = "/admin/v2/persistent/public/default"
REFUSED = ["%2E%2E", "%2E", "line%0Aforged", "esc%1B%5B31m", "right%E2%80%AEto-left", "zero%E2%80%8Bwidth", "nul%00"]


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
    assert reason.startswith("Topic name is not valid") and not any(c in reason for c in "\n\r\x1b\u202e\u200b")
    _, topics = http(server.http_port, "GET", NS)
    assert topics == [] and http(server.http_port, "GET", f"{NS}/partitioned")[1] == []


@pytest.mark.parametrize("encoded, name", [("orders", "orders"), ("a.b", "a.b"), ("k=v:1", "k=v:1"),
                                           ("Under_score-1", "Under_score-1"), ("a%3Cb", "a<b"),
                                           ("quote%22d", 'quote"d'), ("sp%20ace", "sp ace")])
def test_the_names_a_default_pulsar_broker_takes_are_made(server, encoded, name):
    assert http(server.http_port, "PUT", f"{NS}/{encoded}") == (204, None)
    assert f"persistent://public/default/{name}" in http(server.http_port, "GET", NS)[1]
    assert http(server.http_port, "DELETE", f"{NS}/{encoded}") == (204, None)


def test_a_namespace_outside_named_entity_characters_is_refused(server):
    status, doc = http(server.http_port, "PUT", "/admin/v2/persistent/public/de%3Cfault/t")
    assert status == 412 and doc["reason"].startswith("Namespace name is not valid"), (status, doc)

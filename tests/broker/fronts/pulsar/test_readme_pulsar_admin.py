"""The README's Pulsar admin REST example, run as written against a real `serve`: the only
change is the HTTP address (the README says 127.0.0.1:8080, the test picks a free port)."""
from __future__ import annotations

import pytest

from tests.support.pulsar_http import serve_pulsar
from tests.support.readme import assert_readme_shows

pytestmark = pytest.mark.interop


def test_the_readme_pulsar_admin_example_runs(tmp_path):
    pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    assert_readme_shows(__file__)
    server = serve_pulsar(tmp_path / "store")
    try:
        example(f"127.0.0.1:{server.http_port}")
    finally:
        server.stop()


def example(address: str) -> None:
    source = EXAMPLE.replace("127.0.0.1:8080", address)
    exec(compile(source, "README", "exec"), {})


EXAMPLE = '''
# --- README example: begin ---
import json
import urllib.request

import pulsar

admin = "http://127.0.0.1:8080/admin/v2/persistent/public/default"
make = urllib.request.Request(f"{admin}/shipments/partitions", data=b"3", method="PUT",
                              headers={"Content-Type": "application/json"})
assert urllib.request.urlopen(make).status == 204            # again: 409, This topic already exists
client = pulsar.Client("http://127.0.0.1:8080")              # lookups over HTTP, messages on 6650
producer = client.create_producer("shipments")
ids = [producer.send(b"shipment %d" % i) for i in range(6)]
assert {m.partition() for m in ids} == {0, 1, 2}
stats = json.load(urllib.request.urlopen(f"{admin}/shipments/partitioned-stats"))
assert stats["msgInCounter"] == 6 and stats["metadata"] == {"partitions": 3}
client.close()
# --- README example: end ---
'''

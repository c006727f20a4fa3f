"""The partition count Pulsar's admin REST API takes is bounded (issue 46, item 1): PUT and
POST .../partitions refuse a count over the bound (Pulsar's
maxNumPartitionsPerPartitionedTopic; here the 1,024 queues a topic may have, as the CLI
and the remoting front cap it) with 406 and Pulsar's reason, a body that is not a Java
int with 400, and nothing is made. The issue's own requests (2^63 and 1,000,000, which
made the server loop until it was killed) are answered at once and the server goes on
serving; each refusal is one WARNING line."""
from __future__ import annotations

import pytest

from tests.support.logs import LOG_LINE, told
from tests.support.pulsar_http import http, serve_pulsar

NS = "/admin/v2/persistent/public/default"
OVER = "Number of partitions should be less than or equal to 1024"


@pytest.fixture
def server(tmp_path):
    s = serve_pulsar(tmp_path / "store")
    yield s
    s.stop()


def test_create_and_add_partitions_refuse_counts_past_the_bound(server):
    port = server.http_port
    # first the one count a broker without the bound takes quickly (it makes 1,025 topics)
    assert http(port, "PUT", f"{NS}/big/partitions", 1025) == (406, {"reason": OVER})
    assert http(port, "PUT", f"{NS}/big/partitions", 1_000_000) == (406, {"reason": OVER})
    status, answer = http(port, "PUT", f"{NS}/big/partitions", 9223372036854775808)     # 2^63
    assert status == 400 and "int" in answer["reason"]
    assert http(port, "PUT", f"{NS}/big/partitions", 2**31)[0] == 400          # past a Java int
    assert http(port, "PUT", f"{NS}/big/partitions", -1) == (406, {"reason": "Number of partitions should be more "
                                                                              "than 0"})
    assert http(port, "GET", f"{NS}/big/partitions") == (200, {"partitions": 0})       # nothing was made
    assert http(port, "PUT", f"{NS}/fits/partitions", 1024) == (204, None)             # the bound itself is taken

    assert http(port, "PUT", f"{NS}/grows/partitions", 2) == (204, None)
    assert http(port, "POST", f"{NS}/grows/partitions", 1025) == (406, {"reason": OVER})
    assert http(port, "POST", f"{NS}/grows/partitions", 1_000_000) == (406, {"reason": OVER})
    assert http(port, "POST", f"{NS}/grows/partitions", 9223372036854775808)[0] == 400
    assert http(port, "POST", f"{NS}/grows/partitions", 0) == (406, {"reason": "Number of partitions should be "
                                                                               "more than 0"})
    assert http(port, "POST", f"{NS}/grows/partitions", "many")[0] == 400
    assert http(port, "GET", f"{NS}/grows/partitions") == (200, {"partitions": 2})
    assert http(port, "POST", f"{NS}/grows/partitions", 1024) == (204, None)
    assert http(port, "GET", f"{NS}/grows/partitions") == (200, {"partitions": 1024})
    assert http(port, "POST", f"{NS}/absent/partitions", 1_000_000) == (406, {"reason": OVER})

    assert http(port, "GET", "/healthz")[0] == 200                              # still serving
    server.stop()
    err = server.proc.stderr.read()
    assert "Traceback" not in err, err
    # one WARNING line each (past five a second the rate limit sums them up, told() counts them)
    assert told(err, "answered 4") == 11, err
    assert all(LOG_LINE.match(line) for line in err.splitlines()), err


def test_every_number_of_the_admin_api_has_the_bound_of_the_java_type_pulsar_reads_it_into(server):
    port = server.http_port
    assert http(port, "PUT", f"{NS}/t") == (204, None)
    assert http(port, "PUT", f"{NS}/t/subscription/s") == (204, None)
    long_max, int_max = (1 << 63) - 1, (1 << 31) - 1
    # a long: the compaction threshold, the retention size, a message id, a timestamp
    assert http(port, "POST", f"{NS}/t/compactionThreshold", long_max) == (204, None)
    assert http(port, "POST", f"{NS}/t/compactionThreshold", long_max + 1)[0] == 400
    assert http(port, "POST", "/admin/v2/namespaces/public/default/retention",
                {"retentionTimeInMinutes": int_max, "retentionSizeInMB": long_max}) == (204, None)
    assert http(port, "POST", "/admin/v2/namespaces/public/default/retention",
                {"retentionTimeInMinutes": int_max + 1, "retentionSizeInMB": 1})[0] == 400
    assert http(port, "POST", "/admin/v2/namespaces/public/default/retention",
                {"retentionTimeInMinutes": 1, "retentionSizeInMB": long_max + 1})[0] == 400
    assert http(port, "POST", f"{NS}/t/subscription/s/resetcursor", {"ledgerId": 1 << 64, "entryId": 0})[0] == 400
    assert http(port, "POST", f"{NS}/t/subscription/s/resetcursor/{long_max + 1}", 0)[0] == 400
    # an int: how many messages to skip
    assert http(port, "POST", f"{NS}/t/subscription/s/skip/{int_max}", 0) == (204, None)
    assert http(port, "POST", f"{NS}/t/subscription/s/skip/{int_max + 1}", 0)[0] == 400
    assert http(port, "GET", "/healthz")[0] == 200

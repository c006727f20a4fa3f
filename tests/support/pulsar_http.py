"""Pulsar's admin REST API and HTTP lookups as a test calls them: ``http(port, method, path,
body)`` sends one request to 127.0.0.1:port (a JSON body when one is given) and returns
(status, the parsed JSON answer or None); ``serve_pulsar`` starts `serve` with its Pulsar
and HTTP fronts (and a broker.conf when ``conf`` says what it holds); ``client_of(server)``
is the real pulsar-client on its binary port, logging errors only."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.processes import EmulatorProcess

__all__ = ["http", "serve_pulsar", "client_of"]


def http(port: int, method: str, path: str, body=None, headers: dict | None = None, raw: bytes | None = None):
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        request.add_header(k, v)
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, text = exc.code, exc.read()
    return status, json.loads(text) if text else None


def serve_pulsar(root: Path, *args: str, conf: str | None = None) -> EmulatorProcess:
    """`serve` on a store at ``root`` with its Pulsar and HTTP fronts on free ports."""
    if conf is not None:
        path = root.parent / f"{root.name}-broker.conf"
        path.write_text(conf)
        args = ("--config", str(path), *args)
    return EmulatorProcess(root, *args, pulsar=True, http=True).start()


def client_of(server: EmulatorProcess, timeout: int = 10, **kw):
    """The real pulsar-client on ``server``'s Pulsar port (``timeout``: its operation
    timeout in seconds; ``kw``: more of pulsar.Client's arguments)."""
    import pulsar

    return pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=timeout,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **kw)

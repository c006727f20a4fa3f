"""The HTTP API of fault rules (issue 38): what `rocketmq-emulator fault add|list|remove|clear`
does, for a script, a test or the dashboard's panel, on every broker of the server.

  GET    /api/faults          the rules, a row per broker (``on``) with ``matched`` and
                              ``hits`` (how often it fired) and ``state`` ("active", or
                              "spent": its times used up, listed until removed): what
                              `fault list --json` gives
  POST   /api/faults          add one: a JSON object with the fields of `fault add`
                              (operation, action, topic, group, client, dialect, broker,
                              times, probability, window: [start, end] from now, delay: ms
                              or "5s", error, stored); 201 with the rule and its id
  DELETE /api/faults/{id}     remove it from every broker: {"removed": bool} (a rule
                              already gone is not an error: false)
  DELETE /api/faults          remove every rule: {"cleared": n}

A bad rule is a 400 with one line naming the field (broker/faults.FaultError). Like every
change, a POST or DELETE passes the HTTP guard (guard.py): ``Content-Type:
application/json`` (a DELETE too, with no body), the dashboard's own origin, the token
when there is one. The cluster's placement is the door's (broker/facade/across.py), shared with
the wire request the CLI sends.
"""
from __future__ import annotations

from aiohttp import web

from ...facade.across import add_fault_rule_document, clear_fault_rules, fault_rules, remove_fault_rule
from ...faults.rules import FaultError
from .dashboard_api import timed
from .guard import json_body

__all__ = ["add_routes"]


def add_routes(router, cores) -> None:
    """``cores()``: every member of the cluster, up or stopped."""
    async def list_rules(request: web.Request) -> web.Response:
        return timed(lambda: fault_rules(cores()))

    async def add_rule(request: web.Request) -> web.Response:
        doc = await json_body(request)
        try:
            rule = add_fault_rule_document(cores(), doc)
        except FaultError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(rule, status=201, headers={"Location": f"/api/faults/{rule['id']}"})

    async def remove_rule(request: web.Request) -> web.Response:
        text = request.match_info["id"]
        try:
            rule_id = int(text)
        except ValueError:
            return web.json_response({"error": f"id: a rule's number (from GET /api/faults), got {text!r}"},
                                     status=400)
        return web.json_response({"removed": remove_fault_rule(cores(), rule_id)})

    async def clear_rules(request: web.Request) -> web.Response:
        return web.json_response({"cleared": clear_fault_rules(cores())})

    router.add_get("/api/faults", list_rules)
    router.add_post("/api/faults", add_rule)
    router.add_delete("/api/faults", clear_rules)
    router.add_delete("/api/faults/{id}", remove_rule)

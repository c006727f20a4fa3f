"""EMULATOR_DLQ: a group's dead letters over the wire (``rocketmq-emulator dlq``). Header
``action`` (list | count | redrive), ``consumerGroup``; for redrive ``ids`` (comma-separated
dead-letter ids, or absent for all) and ``dryRun``. The body of the reply is JSON (count:
``{"dead_letters": n}``, what `group show` says, counted as the dashboard counts them).
In a cluster every broker that is up is asked: a dead-letter id names its broker."""
from __future__ import annotations

import json

from ....cluster import live_members
from ....facade.across import DeadLetterError, redrive
from ..protocol import RequestRefused, ResponseCode as RC

__all__ = ["dead_letter_request"]


def dead_letter_request(front, request, channel):
    core = front.core
    action, group = request.header("action"), request.header("consumerGroup")
    if not group:
        raise RequestRefused("a consumer group is needed (consumerGroup)")
    cores = live_members(core)
    if action == "list":
        rows = [dict(d.to_dict(), broker=c.config.broker_name) for c in cores for d in c.dead_letters(group)]
        return request.response(RC.SUCCESS, body=json.dumps(rows).encode())
    if action == "count":
        n = sum(c.dead_letter_counts().get(group, 0) for c in cores)
        return request.response(RC.SUCCESS, body=json.dumps({"dead_letters": n}).encode())
    if action != "redrive":
        raise RequestRefused(f"unknown dead-letter action {action!r} (list, count or redrive)")
    text = request.header("ids")
    ids = None if not text else [i.strip() for i in text.split(",") if i.strip()]
    try:
        result = redrive(cores, group, ids, dry_run=request.header_bool("dryRun"))
    except DeadLetterError as exc:
        raise RequestRefused(str(exc)) from None
    return request.response(RC.SUCCESS, body=json.dumps(result.to_dict()).encode())

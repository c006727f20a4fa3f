"""EMULATOR_FAULTS: a broker's fault rules over the wire (``rocketmq-emulator fault``,
RemoteBroker.faults). Header ``action``: add (the rule as a JSON body: operation,
action and the optional fields of broker/faults/rules.rule_from; ``window`` as two durations
from now on the broker's clock, ``delay`` a duration), list, remove (header ``id``),
clear. The reply's body is JSON. In a cluster every broker gets the rule, so a rule has
one id everywhere (its ``broker`` matcher decides where it fires): broker/faults/placement.py,
which the HTTP API's /api/faults shares."""
from __future__ import annotations

import json

from ....faults.placement import add_everywhere, clear_everywhere, listed, members, remove_everywhere
from ....faults.rules import FaultError
from ..protocol import RequestRefused, ResponseCode as RC

__all__ = ["fault_rules_request"]


def fault_rules_request(front, request, channel):
    cores = members(front.core)
    action = request.header("action")
    try:
        if action == "add":
            try:
                doc = json.loads(request.body or b"null")
            except ValueError as exc:
                raise FaultError(f"the rule is not JSON ({exc})") from None
            body = add_everywhere(cores, doc)
        elif action == "list":
            body = listed(cores)
        elif action == "remove":
            body = {"removed": remove_everywhere(cores, request.header_int("id"))}
        elif action == "clear":
            body = {"cleared": clear_everywhere(cores)}
        else:
            raise RequestRefused(f"unknown fault action {action!r} (add, list, remove or clear)")
    except FaultError as exc:
        raise RequestRefused(str(exc)) from None
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())

"""EMULATOR_FAULTS: a broker's fault rules over the wire (``rocketmq-emulator fault``,
RemoteBroker.faults). Header ``action``: add (the rule as a JSON body: operation,
action and the optional fields of broker/faults/rules.rule_from; ``window`` as two durations
from now on the broker's clock, ``delay`` a duration), list, remove (header ``id``),
clear. The reply's body is JSON. In a cluster every broker gets the rule, so a rule has
one id everywhere (its ``broker`` matcher decides where it fires): the door's placement
(broker/facade/across.py), which the HTTP API's /api/faults shares."""
from __future__ import annotations

import json

from ....facade.across import (add_fault_rule_document, clear_fault_rules, cluster_members, fault_rules,
                               remove_fault_rule)
from ....faults.rules import FaultError
from ..protocol import RequestRefused, ResponseCode as RC

__all__ = ["fault_rules_request"]


def fault_rules_request(front, request, channel):
    cores = cluster_members(front.core)
    action = request.header("action")
    try:
        if action == "add":
            try:
                doc = json.loads(request.body or b"null")
            except ValueError as exc:
                raise FaultError(f"the rule is not JSON ({exc})") from None
            body = add_fault_rule_document(cores, doc)
        elif action == "list":
            body = fault_rules(cores)
        elif action == "remove":
            body = {"removed": remove_fault_rule(cores, request.header_int("id"))}
        elif action == "clear":
            body = {"cleared": clear_fault_rules(cores)}
        else:
            raise RequestRefused(f"unknown fault action {action!r} (add, list, remove or clear)")
    except FaultError as exc:
        raise RequestRefused(str(exc)) from None
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())

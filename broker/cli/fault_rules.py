"""``rocketmq-emulator fault add|list|remove|clear``: a broker's fault rules over the wire
(EMULATOR_FAULTS; broker/faults/rules.py), so a test run against `serve` — with any client,
in any language — can make the broker refuse, drop, delay or duplicate on purpose."""
from __future__ import annotations

import json

from .common import LONG_MAX, CommandParser, UsageError, int_in_range, shown

__all__ = ["fault_main"]

OPERATIONS = ("send", "pull", "send_back", "ack", "heartbeat", "route")
ACTIONS = ("refuse", "drop", "delay", "duplicate", "hold")


def fault_main(argv: list[str]) -> int:
    from .common import usage_error
    from .remote import add_server_options, call_server
    from ..fronts.remoting.protocol import EMULATOR_FAULTS, RemotingCommand

    p = CommandParser(prog="rocketmq-emulator fault",
                      description="Make the broker misbehave on purpose: refuse, drop, delay or duplicate what "
                                  "matches a rule (every dialect's clients), and see how often it did.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{add,list,remove,clear}")
    add = sub.add_parser("add", help="install a rule: fault add OPERATION ACTION [matchers] [how often]")
    add.add_argument("operation", choices=OPERATIONS, help="what the rule is about")
    add.add_argument("what", choices=ACTIONS, metavar="ACTION",
                     help="refuse (the dialect's error), drop (no answer), delay (answer later), duplicate "
                          "(deliver twice), hold (no deliveries while it lasts)")
    add.add_argument("--topic", help="only this topic (default: any)")
    add.add_argument("--group", help="only this consumer or producer group / subscription (default: any)")
    add.add_argument("--client", help="only this client id (default: any)")
    add.add_argument("--dialect", choices=("4.x", "5.x", "pulsar"), help="only this dialect's clients (default: any)")
    add.add_argument("--broker", help="only on this broker of a cluster (default: every broker)")
    add.add_argument("--times", type=int_in_range(1, LONG_MAX),
                     help="the next N matches, then the rule is spent (default: every match)")
    add.add_argument("--probability", type=float, help="fire on a match with this chance, 0 to 1 (default: 1)")
    add.add_argument("--window", nargs=2, metavar=("START", "END"),
                     help="only between these durations from now on the broker's clock, e.g. 10s 1m")
    add.add_argument("--delay", help="for delay: how much later, e.g. 5s")
    add.add_argument("--error", help="for refuse: the dialect's code to answer with (default: one per operation)")
    add.add_argument("--stored", action="store_true", help="for a dropped send: store it first (a lost ack)")
    ls = sub.add_parser("list", help="the rules, with how often each matched and fired, and whether it is spent")
    rm = sub.add_parser("remove", help="remove a rule by its id (one already gone is not an error)")
    rm.add_argument("id", type=int_in_range(0, LONG_MAX), help="the rule's id, from `fault add` or `fault list`")
    clear = sub.add_parser("clear", help="remove every rule")
    for q in (add, ls, rm, clear):
        q.add_argument("--json", action="store_true", help="one JSON document instead of lines")
        add_server_options(q, 10.0)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    fields, body = {"action": args.action}, b""
    if args.action == "add":
        rule = {"operation": args.operation, "action": args.what}
        for name in ("topic", "group", "client", "dialect", "broker", "times", "probability", "window", "delay",
                     "error"):
            if getattr(args, name) is not None:
                rule[name] = getattr(args, name)
        if args.stored:
            rule["stored"] = True
        body = json.dumps(rule).encode()
    elif args.action == "remove":
        fields["id"] = args.id
    reply = call_server(f"fault {args.action}", args.server, RemotingCommand.request(EMULATOR_FAULTS, fields, body),
                        args.timeout, refused_exit=2)
    if isinstance(reply, int):
        return reply
    doc = json.loads(reply.body or b"null")
    if args.json:
        print(json.dumps(doc, indent=2))
    elif args.action == "add":
        print(f"rule {doc['id']}: {_describe(doc)}")
    elif args.action == "list":
        if not doc:
            print("no fault rules")
        for r in doc:
            print(f"rule {r['id']} on {shown(', '.join(r['brokers']))}: {_describe(r)}; matched {r['matched']}, "
                  f"fired {r['hits']}; {r.get('state', 'active')}")
    elif args.action == "remove":
        print(f"rule {args.id} removed" if doc["removed"] else f"rule {args.id} was already gone")
    else:
        print(f"{doc['cleared']} rule(s) removed")
    return 0


def _describe(r: dict) -> str:
    text = f"{r['action']} {r['operation']}"
    if r.get("delay_ms"):
        text += f" by {r['delay_ms']} ms"
    where = [f"{k} {shown(r[k])}" for k in ("topic", "group", "client", "dialect", "broker") if r.get(k)]
    if where:
        text += " (" + ", ".join(where) + ")"
    if r.get("state") == "spent":
        text += f", its {r['times']} time(s) used up"
    elif r.get("left") is not None:
        text += f", {r['left']} more time(s)"
    if r.get("probability") is not None:
        text += f", with probability {r['probability']}"
    if r.get("window_ms"):
        text += f", from {r['window_ms'][0]} to {r['window_ms'][1]} ms on the broker's clock"
    if r.get("stored"):
        text += ", stored first"
    return text

"""``rocketmq-emulator dlq list|redrive GROUP``: a group's dead letters over the wire
(EMULATOR_DLQ), and re-driving them to their topic (broker/rocketmq_model/dead_letters.py's rule)."""
from __future__ import annotations

import json

from .common import CommandParser, UsageError, iso_utc, shown

__all__ = ["dlq_main"]


def dlq_main(argv: list[str]) -> int:
    from .common import usage_error
    from .remote import add_server_options, call_server
    from ..fronts.remoting.protocol import EMULATOR_DLQ, RemotingCommand

    p = CommandParser(prog="rocketmq-emulator dlq",
                      description="A consumer group's dead letters (%DLQ%<group>): list them, or re-drive them to "
                                  "their original topic as new messages (each once: re-driven entries are marked).")
    sub = p.add_subparsers(dest="action", required=True, metavar="{list,redrive}")
    ls = sub.add_parser("list", help="every dead letter of GROUP: message id, offset id, topic, tags, keys, attempts, "
                                     "when it died")
    ls.add_argument("group", help="the consumer group (or Pulsar subscription) whose dead letters to list")
    ls.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    rd = sub.add_parser("redrive", help="send dead letters of GROUP back to their topic")
    rd.add_argument("group", help="the consumer group (or Pulsar subscription) whose dead letters to re-drive")
    which = rd.add_mutually_exclusive_group(required=True)
    which.add_argument("--ids", nargs="+", metavar="ID",
                       help="the dead letters to re-drive: message ids or offsetMsgIds (from `dlq list`)")
    which.add_argument("--all", action="store_true", help="every dead letter not re-driven yet")
    rd.add_argument("--dry-run", action="store_true", help="say what would be sent, send nothing")
    rd.add_argument("--json", action="store_true", help="one JSON document instead of lines")
    for q in (ls, rd):
        add_server_options(q, 30.0)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    from .names import check_group

    missing = check_group(f"dlq {args.action}", args.server, args.timeout, args.group)
    if missing is not None:
        return missing
    fields = {"action": args.action, "consumerGroup": args.group}
    if args.action == "redrive":
        if args.ids:
            fields["ids"] = ",".join(i for part in args.ids for i in part.split(",") if i)
        fields["dryRun"] = "true" if args.dry_run else "false"
    reply = call_server(f"dlq {args.action}", args.server, RemotingCommand.request(EMULATOR_DLQ, fields),
                         args.timeout, refused_exit=2)
    if isinstance(reply, int):
        return reply
    doc = json.loads(reply.body or b"null")
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    if args.action == "list":
        if not doc:
            print(f"no dead letters for {shown(args.group)}")
            return 0
        # the message id first (what producers, consumers and `message send` show), then its
        # DLQ record's offsetMsgId; a re-drive takes either. Columns as wide as their values.
        iw, ow = (max([9] + [len(d[k]) for d in doc]) for k in ("msg_id", "offset_msg_id"))
        tw = max([20] + [len(d["original_topic"] or "?") for d in doc])
        print(f"{'ID':<{iw}} {'OFFSET ID':<{ow}} {'TOPIC':<{tw}} {'TAGS':<10} {'KEYS':<16} {'ATTEMPTS':>8} "
              f"{'DIED (UTC)':<24} STATE")
        for d in doc:
            state = f"re-driven as {d['redriven_as']}" if d["redriven_as"] else "dead"
            print(shown(f"{d['msg_id']:<{iw}} {d['offset_msg_id']:<{ow}} {(d['original_topic'] or '?'):<{tw}} "
                        f"{(d['tags'] or ''):<10} {(d['keys'] or ''):<16} {d['attempts']:>8} "
                        f"{iso_utc(d['died_at_ms']):<24} {state}", None))
        return 0
    verb = "would re-drive" if doc["dry_run"] else "re-drove"

    def named(d: dict) -> str:                  # the message id first, as `dlq list` shows them
        return d["id"] if d["msg_id"] == d["id"] else f"{d['msg_id']} (offset id {d['id']})"
    for s in doc["sent"]:
        print(f"{verb} {named(s)}" + (f" as offset id {s['new_id']}" if s["new_id"] else ""))
    for a in doc["already"]:
        print(f"skipped {named(a)}: re-driven before")
    print(f"{len(doc['sent'])} {'to send' if doc['dry_run'] else 'sent'}, {len(doc['already'])} re-driven before")
    return 0

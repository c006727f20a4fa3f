"""``rocketmq-emulator clock now|advance``: read or move a server's clock."""
from __future__ import annotations

import argparse
import json
import re

from .common import CommandParser, UsageError, fail, iso_utc, usage_error
from .remote import add_server_options, call_server

__all__ = ["clock_main"]


def _duration(text: str) -> str:
    """An argparse type: a duration > 0 like 500ms, 10s, 2h or 1h30m, or ``next``."""
    from rocketmq_emulator.delay_scheduler import DelayLevelError, parse_duration

    if text == "next":
        return text
    try:
        ms = parse_duration(text)
    except DelayLevelError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if ms <= 0:
        raise argparse.ArgumentTypeError(f"durations are positive (the clock only moves forward), got {text!r}")
    return text


def clock_main(argv: list[str]) -> int:
    p = CommandParser(prog="rocketmq-emulator clock", description="Read or move a server's clock.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{advance,now}")
    adv = sub.add_parser("advance", help="advance a virtual clock by DURATION (500ms, 10s, 2h) or to the next due "
                                         "message",
                         description="Advance a `serve --clock virtual` server's clock by DURATION; the reply "
                                     "comes once everything due by then has been delivered.")
    adv.add_argument("duration", type=_duration, help="how far: 500ms, 10s, 5m, 2h, 1d or 1h30m; or next: to when "
                                                      "the next delayed message or retry is due")
    adv.add_argument("--json", action="store_true", help="one JSON object: now_ms, time, clock, advanced_ms")
    add_server_options(adv, 60.0)
    now = sub.add_parser("now", help="print a server's clock", description="Print a server's clock (either kind).")
    now.add_argument("--json", action="store_true", help="one JSON object: now_ms, time, clock")
    add_server_options(now, 10.0)
    if len(argv) > 1 and argv[0] == "advance" and re.match(r"-\d", argv[1]):
        # argparse would take "-5s" for an option and say a duration is missing
        return fail("clock advance", f"durations are positive (the clock only moves forward), got {argv[1]!r}")
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    from ..fronts.remoting.protocol import EMULATOR_CLOCK_ADVANCE, RemotingCommand

    # `now` is an advance of nothing: the one clock request, answered by either clock.
    header = {"duration": args.duration} if args.action == "advance" else {"millis": 0}
    reply = call_server(f"clock {args.action}", args.server, RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, header),
                         args.timeout, refused_exit=2)
    if isinstance(reply, int):
        return reply
    ms = int(reply.header("nowMillis"))
    doc = {"now_ms": ms, "time": iso_utc(ms), "clock": reply.header("clock")}
    if args.action == "advance":
        doc["advanced_ms"] = reply.header_int("advancedMillis", 0)
    if args.json:
        print(json.dumps(doc))
        return 0
    kind = ", real clock" if doc["clock"] == "real" else ""
    print(f"clock now {ms} ms ({doc['time']}){kind}")
    return 0

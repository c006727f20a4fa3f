"""``rocketmq-emulator broker list|perm|stop|start``: a cluster's brokers over the wire
(EMULATOR_BROKER_CONTROL to the name server), and the broker addresses ``topic create``
sends to (GET_BROKER_CLUSTER_INFO, as mqadmin updateTopic -c does)."""
from __future__ import annotations

import json

from .common import CommandParser, UsageError, fail, shown, snake_case

__all__ = ["broker_main", "broker_addresses"]


def broker_main(argv: list[str]) -> int:
    from .common import usage_error
    from .remote import add_server_options, call_server
    from ..fronts.remoting.protocol import EMULATOR_BROKER_CONTROL, RemotingCommand

    p = CommandParser(prog="rocketmq-emulator broker",
                      description="The brokers of a `serve --brokers N`: list them, switch one's write permission "
                                  "(routes change as when a broker re-registers), stop or start one.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{list,perm,stop,start}")
    ls = sub.add_parser("list", help="every broker: address, up or stopped, permission, topics")
    ls.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    perm = sub.add_parser("perm", help="switch a broker's write permission: perm broker-a --write off")
    perm.add_argument("name", help="the broker (broker-a, broker-b, ...)")
    perm.add_argument("--write", choices=("on", "off"), required=True, help="on: read+write (6); off: read only (4)")
    stop = sub.add_parser("stop", help="stop a broker: out of the routes, its connections refused")
    stop.add_argument("name", help="the broker to stop")
    start = sub.add_parser("start", help="start a stopped broker again, from its store")
    start.add_argument("name", help="the stopped broker to start")
    for q in (ls, perm, stop, start):
        add_server_options(q, 10.0)
    try:
        args = p.parse_args(argv)
    except UsageError as exc:
        return usage_error(exc)
    fields = {"action": "write" if args.action == "perm" else args.action}
    if args.action != "list":
        fields["brokerName"] = args.name
    if args.action == "perm":
        fields["value"] = args.write
    reply = call_server(f"broker {args.action}", args.server, RemotingCommand.request(EMULATOR_BROKER_CONTROL, fields),
                         args.timeout, refused_exit=2)      # a refusal names the user's mistake
    if isinstance(reply, int):
        return reply
    states = json.loads(reply.body or b"[]")
    if args.action == "list":
        # named as every --json document of the CLI names its fields (the broker's name is "broker")
        rows = [{("broker" if k == "brokerName" else snake_case(k)): v for k, v in b.items()} for b in states]
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            print(f"{'BROKER':<10} {'ADDRESS':<22} {'STATE':<8} {'PERM':<11} TOPICS")
            for b in rows:
                print(f"{shown(b['broker']):<10} {shown(b['address']):<22} {'up' if b['up'] else 'stopped':<8} "
                      f"{_perm_text(b['broker_permission']):<11} {b['topics']}")
        return 0
    done = {"perm": f"write {args.write}" if args.action == "perm" else "", "stop": "stopped", "start": "started"}
    print(f"{shown(args.name)} {done[args.action]}")
    return 0


def _perm_text(perm: int) -> str:
    return {6: "read+write", 4: "read only", 2: "write only"}.get(perm & 6, "none")


def broker_addresses(command: str, server: str, timeout: float, only: str | None = None) -> dict[str, str] | int:
    """{broker name: address} of the brokers up behind ``server``'s name server (``only``:
    that one), or the exit code after one error line."""
    from .remote import call_server
    from ..fronts.remoting.protocol import RemotingCommand, RequestCode

    reply = call_server(command, server, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, {}),
                         timeout)
    if isinstance(reply, int):
        return reply
    table = json.loads(reply.body)["brokerAddrTable"]
    addresses = {name: data["brokerAddrs"]["0"] for name, data in sorted(table.items())}
    if only is None:
        return addresses
    if only not in addresses:
        return fail(command, f"no broker named {only!r} is up; the brokers are {', '.join(addresses)}")
    return {only: addresses[only]}

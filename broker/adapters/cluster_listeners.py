"""The listeners of a cluster's brokers in one `serve` (broker/cluster.py's ``control``).

broker-a shares its port with the name server, so stopping it keeps that port open:
its core answers broker requests with SYSTEM_ERROR "broker-a is stopped" while route
requests go on being answered. Every other broker has a port of its own, closed on
stop (connections refused, open ones dropped) and bound again on start before the
start is answered, so a port someone else took is an error in the reply.
"""
from __future__ import annotations

import asyncio
import logging
import socket

__all__ = ["ClusterListeners"]

log = logging.getLogger("broker.cluster")


class ClusterListeners:
    def __init__(self, servers: dict, name_server_broker: str, supervisor) -> None:
        self.servers = servers                  # broker name -> RemotingServer
        self.name_server_broker = name_server_broker
        self.supervisor = supervisor

    async def start_listening(self, name: str, sock=None) -> None:
        """Start ``name``'s server; its background tasks are watched until it stops."""
        server = self.servers[name]
        await server.start(sock)
        for task in server.background_tasks():
            self.supervisor.watch(task, f"{name}'s remoting server")

    def write_outgoing(self) -> None:
        """After a change any broker may have answered held pulls for (a clock advance)."""
        for server in self.servers.values():
            if server.core is not None and not server.core.stopped:
                server.after_activity()

    def stop(self, name: str) -> None:
        server = self.servers[name]
        if name == self.name_server_broker:
            log.warning("%s stopped: its port stays open for the name server; broker requests are refused", name)
            return
        for task in server.background_tasks():
            self.supervisor.release(task)
        server.close_now()
        log.warning("%s stopped: %s refuses connections", name, server.address)

    def start(self, name: str) -> None:
        server = self.servers[name]
        if name == self.name_server_broker:
            log.warning("%s started again", name)
            return
        sock = socket.socket(socket.AF_INET6 if ":" in server.host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((server.host, server.port))
            sock.listen(100)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self.supervisor.watch_start(asyncio.get_running_loop().create_task(self.start_listening(name, sock)),
                                    f"starting {name}")
        log.warning("%s started again on %s", name, server.address)

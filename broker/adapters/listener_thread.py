"""A listener (each front's listener module makes its own: grpc5's GrpcListenerThread,
pulsar's PulsarListenerThread) on its own thread, beside a core that
this process drives from another thread: what the pytest fixtures ``rocketmq5_endpoint``
and ``pulsar_endpoint`` give a test — a real endpoint on 127.0.0.1, whose clock is the
test's virtual clock.

The listener runs its own asyncio loop; every core call it makes holds ``lock``, which
the other thread's driver holds around its own core calls too (InProcessBroker.share).
"""
from __future__ import annotations

import asyncio
import threading

__all__ = ["ListenerThread"]


class ListenerThread:
    """``make_server(core, host, port, lock)`` builds the listener (``start``/``stop``
    coroutines, ``port`` after start); ``start()`` runs it on a thread of its own."""

    name = "listener"

    def __init__(self, core, lock, host: str = "127.0.0.1", port: int = 0) -> None:
        self.core = core
        self.lock = lock
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server = None
        self._failure: BaseException | None = None

    def make_server(self):
        raise NotImplementedError

    @property
    def endpoint(self) -> str:
        """"HOST:PORT", what a 5.x client's ClientConfiguration takes."""
        return f"{self.host}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> "ListenerThread":
        ready = threading.Event()

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._server = self.make_server()
            try:
                loop.run_until_complete(self._server.start())
            except BaseException as exc:        # handed to start()'s caller, not lost in the thread
                self._failure = exc
                ready.set()
                loop.close()
                return
            self.port = self._server.port
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._server.stop())
            # calls still open (a client's held receive) end here, not as "Task was
            # destroyed but it is pending" when the loop is gone
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        if not ready.wait(timeout_s):
            raise RuntimeError(f"the {self.name} listener did not start within {timeout_s} s")
        if self._failure is not None:
            raise self._failure
        return self

    def close(self) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

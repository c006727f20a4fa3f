"""The lifecycle every client of the SDK shares (RocketMQ's ServiceState): start once,
shut down once, a with-block, and the TCP connection a client owns when it was given
``namesrv_addr`` (its loop runs in the background while the client runs).

A client says what its own start and shutdown do (``_start``, ``_start_failed``,
``_shutdown``); the order around them — the state, the owned connection — lives here.
"""
from __future__ import annotations

import enum

from .errors import MQClientError

__all__ = ["ServiceState", "ClientService"]


class ServiceState(enum.Enum):
    CREATE_JUST = "CREATE_JUST"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"
    START_FAILED = "START_FAILED"


class ClientService:
    """Base of Producer and PushConsumer. Subclasses set ``state`` to CREATE_JUST and
    ``_remote`` (the RemoteBroker the client owns, or None) in their constructor."""

    state: ServiceState
    _remote = None
    _kind = "client"                 # the name a state error uses ("producer", "PushConsumer")
    _start_errors: tuple[type[BaseException], ...] = (Exception,)   # what makes a start fail

    def start(self):
        if self.state is not ServiceState.CREATE_JUST:
            raise MQClientError(f"The {self._kind} service state is {self.state.value}, not CREATE_JUST; "
                                f"a {self._kind} starts once")
        self._check_startable()
        try:
            self._start()
        except self._start_errors:
            self.state = ServiceState.START_FAILED
            self._start_failed()
            if self._remote is not None:
                self._remote.close()
            raise
        self.state = ServiceState.RUNNING
        if self._remote is not None:
            self._remote.run_in_background()
        return self

    def shutdown(self) -> None:
        if self.state is not ServiceState.RUNNING:
            self.state = ServiceState.SHUTDOWN_ALREADY
            return
        self.state = ServiceState.SHUTDOWN_ALREADY
        if self._remote is not None:
            self._remote.stop()
        self._shutdown()
        if self._remote is not None:
            self._remote.close()

    def close(self) -> None:
        self.shutdown()

    def __enter__(self):
        if self.state is ServiceState.CREATE_JUST:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # -- what a client does itself ------------------------------------------------------
    def _check_startable(self) -> None:
        """Refuse a start that cannot work (MQClientError), before anything is made."""

    def _start(self) -> None:
        raise NotImplementedError

    def _start_failed(self) -> None:
        """Undo what a failed ``_start`` made (the owned connection is closed after)."""

    def _shutdown(self) -> None:
        raise NotImplementedError

"""What renews a lease holder in the background (docs/leases.md), written once for a
holder of one rule and a holder of a keyed rule's hot keys: a daemon thread over a sync
redis-py client, or a task on the running event loop over an asyncio one. Each renews
every renewal interval, lets a renewal fail (counted and logged by the holder, retried at
the next), and on closing stops before the holder hands its shares back.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from typing import Any, Generic, TypeVar

from ._errors import RedisError
from ._lease import LeaseRule
from ._limiter import _CLOSED
from .redis import Conversation, _block, _pause

#: What a renewal returns: a holder's state, or the keys a round renewed.
R = TypeVar("R")


class _Renewed(Generic[R]):
    """What a holder gives its renewer: the conversations of a renewal and of the
    hand-back, where failures go, and whether this process renews now."""

    _rule: LeaseRule
    _handle: Any

    def _start(self, background: bool) -> None:
        """Readies the renewals, and starts renewing in the background if asked to."""
        raise NotImplementedError

    def _renewing(self, now_ns: int | None) -> Conversation[R]:
        raise NotImplementedError

    def _handing_back(self) -> Conversation[None]:
        raise NotImplementedError

    def _failed(self, error: RedisError) -> None:
        raise NotImplementedError

    def _due(self) -> bool:
        """Whether the renewer renews now (a host's holder: only while it leads)."""
        return True

    def _closing(self) -> None:
        """Frees what the holder owns, its shares handed back."""
        self._handle = _CLOSED


class Threaded(_Renewed[R]):
    """Renewed by a daemon thread of its own; renewals taken one at a time."""

    def _start(self, background: bool) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if background:
            # The thread holds the holder weakly, so an unreferenced one is collected
            # and its finalizer stops the thread.
            self._thread = threading.Thread(
                target=_renew_until_stopped,
                args=(weakref.ref(self), self._stop, self._rule.renew_every),
                name="librate-lease",
                daemon=True,
            )
            weakref.finalize(self, self._stop.set)
            self._thread.start()

    def _renew(self, now_ns: int | None) -> R:
        with self._lock:
            try:
                return _block(self._renewing(now_ns))
            except RedisError as error:
                self._failed(error)
                raise

    def _close(self) -> None:
        """Stops the thread, hands back (a failure counted, never raised) and frees."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._handle is _CLOSED:
                return
            try:
                _block(self._handing_back())
            except RedisError as error:
                self._failed(error)
            self._closing()


def _renew_until_stopped(
    holder: weakref.ref[Threaded[Any]], stop: threading.Event, every: float
) -> None:
    """The renewer thread: a renewal every ``every`` seconds while it is due, until
    ``stop`` is set or the holder is gone. A failure was counted and logged; the next
    renewal is the retry."""
    while not stop.is_set():
        held = holder()
        if held is None:
            return
        if held._due():
            with contextlib.suppress(RedisError):
                held._renew(None)
        del held
        stop.wait(every)


class Tasked(_Renewed[R]):
    """Renewed by a task on the running event loop; renewals taken one at a time."""

    def _start(self, background: bool) -> None:
        try:
            loop = asyncio.get_running_loop() if background else None
        except RuntimeError:
            raise RuntimeError(
                f"{type(self).__name__} renews on a task of the running event loop: make it "
                "inside one (or pass background=False)"
            ) from None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        if loop is not None:
            self._task = loop.create_task(
                _renew_until_cancelled(weakref.ref(self), self._rule.renew_every)
            )
            weakref.finalize(self, self._task.cancel)

    async def _renew(self, now_ns: int | None) -> R:
        async with self._lock:
            try:
                return await _pause(self._renewing(now_ns))
            except RedisError as error:
                self._failed(error)
                raise

    async def _close(self) -> None:
        """Cancels the task, hands back (a failure counted, never raised) and frees."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        async with self._lock:
            if self._handle is _CLOSED:
                return
            try:
                await _pause(self._handing_back())
            except RedisError as error:
                self._failed(error)
            self._closing()


async def _renew_until_cancelled(holder: weakref.ref[Tasked[Any]], every: float) -> None:
    """The renewer task: ``_renew_until_stopped`` on the event loop."""
    while True:
        held = holder()
        if held is None:
            return
        if held._due():
            with contextlib.suppress(RedisError):
                await held._renew(None)
        del held
        await asyncio.sleep(every)

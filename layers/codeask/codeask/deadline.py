"""Running a piece of work in its own thread with a deadline: it is abandoned, never waited for, when it overruns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


class Aborted(Exception):
    """The work ended with a BaseException (SystemExit, a KeyboardInterrupt aimed at its thread):
    carried as an ordinary exception, so a caller can catch it without also swallowing a
    KeyboardInterrupt aimed at itself."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(type(exc).__name__)
        self.type_name = type(exc).__name__


def _run(work: Callable[[], T], future: Future[T]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(work())
    except Exception as exc:  # noqa: BLE001 - handed to the caller, which decides
        future.set_exception(exc)
    except BaseException as exc:  # noqa: BLE001 - the future is settled however the work ended
        future.set_exception(Aborted(exc))


def within(work: Callable[[], T], timeout_s: float, name: str) -> T:
    """`work()`'s result, or its exception; TimeoutError once `timeout_s` has passed.

    A fresh daemon thread per call: work stuck past its deadline is abandoned without blocking
    later calls or the interpreter's exit, which a shared pool's worker would do. Work that
    holds the GIL (a regex in C) can only be noticed afterwards, so what must never run long
    has to be bounded by itself too (the glob matcher, streamed reads)."""
    future: Future[T] = Future()
    threading.Thread(target=_run, args=(work, future), name=name, daemon=True).start()
    return future.result(timeout=timeout_s)

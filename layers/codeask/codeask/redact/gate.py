"""The gate: every result scanned in a thread with a deadline, withheld whenever scanning fails."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from codeask.redact.kinds import count_markers
from codeask.redact.scanner import scan

Scanner = Callable[[str], tuple[str, dict[str, int]]]


@dataclass
class Redaction:
    text: str  # safe text to hand to the model
    counts: dict[str, int]  # redactions by kind in this result
    withheld: bool = False  # True when the scanner failed/timed out and the result was withheld


class _ScannerAborted(Exception):
    """A scanner raised a BaseException; carried as an ordinary one so apply() can catch it
    without also swallowing a KeyboardInterrupt aimed at the calling thread."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(type(exc).__name__)
        self.type_name = type(exc).__name__


def _run(scanner: Scanner, text: str, future: Future[tuple[str, dict[str, int]]]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(scanner(text))
    except Exception as exc:  # noqa: BLE001 - handed to the caller, which withholds the text
        future.set_exception(exc)
    except BaseException as exc:  # noqa: BLE001 - the future is settled however the scan ended
        future.set_exception(_ScannerAborted(exc))


class RedactionGate:
    """The one gate. Fails closed: any exception or timeout in scanning => result withheld."""

    def __init__(self, timeout_s: float = 2.0, scanner: Scanner = scan) -> None:
        self.timeout_s = timeout_s
        self.scanner = scanner
        self.totals: Counter[str] = Counter()
        self.withheld = 0
        # Tool calls may run concurrently; the counters are the only shared state.
        self._lock = threading.Lock()

    def apply(self, text: str) -> Redaction:
        try:
            safe, counts = self._scan(text)
        except FutureTimeout:
            return self._withhold(f"the secret scanner timed out after {self.timeout_s:g}s")
        except _ScannerAborted as exc:
            return self._withhold(f"the secret scanner failed ({exc.type_name})")
        except Exception as exc:  # noqa: BLE001 - a scanner that fails withholds, never leaks
            return self._withhold(f"the secret scanner failed ({type(exc).__name__})")
        # Lines masked before the result was built (Toolbox.lines masks whole files) arrive as
        # markers: they were kept from the model all the same, so they count here.
        counts = dict(Counter(counts) + count_markers(text))
        with self._lock:
            self.totals.update(counts)
        return Redaction(safe, counts)

    def _scan(self, text: str) -> tuple[str, dict[str, int]]:
        future: Future[tuple[str, dict[str, int]]] = Future()
        # A fresh daemon thread per call: a scanner stuck in a runaway regex is abandoned without
        # blocking later calls or interpreter exit, which a shared pool worker would do.
        worker = threading.Thread(
            target=_run, args=(self.scanner, text, future), name="codeask-redact", daemon=True
        )
        started = time.monotonic()
        worker.start()
        safe, counts = future.result(timeout=self.timeout_s)
        # A scanner stuck in C code (a regex) holds the GIL, so the wait above can only notice
        # the overrun afterwards; the deadline is enforced here so slow always means withheld.
        if time.monotonic() - started > self.timeout_s:
            raise FutureTimeout
        # A scanner returning anything but (str, {str: int}) is treated as failed, never trusted.
        if not isinstance(safe, str) or not isinstance(counts, dict):
            raise TypeError("scanner returned a malformed result")
        return safe, {str(k): int(v) for k, v in counts.items()}

    def _withhold(self, reason: str) -> Redaction:
        with self._lock:
            self.withheld += 1
        return Redaction(f"[result withheld: {reason}; try a narrower request]", {}, withheld=True)

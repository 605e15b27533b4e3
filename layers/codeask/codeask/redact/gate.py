"""The gate: every result scanned in a thread with a deadline, withheld whenever scanning fails."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from codeask.deadline import Aborted, within
from codeask.redact.kinds import count_markers
from codeask.redact.scanner import scan

Scanner = Callable[[str], tuple[str, dict[str, int]]]


@dataclass
class Redaction:
    text: str  # safe text to hand to the model
    counts: dict[str, int]  # redactions by kind in this result
    withheld: bool = False  # True when the scanner failed/timed out and the result was withheld


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
        except TimeoutError:
            return self._withhold(f"the secret scanner timed out after {self.timeout_s:g}s")
        except Aborted as exc:
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
        started = time.monotonic()
        safe, counts = within(lambda: self.scanner(text), self.timeout_s, "codeask-redact")
        # A scanner stuck in C code (a regex) holds the GIL, so the wait above can only notice
        # the overrun afterwards; the deadline is enforced here so slow always means withheld.
        if time.monotonic() - started > self.timeout_s:
            raise TimeoutError
        # A scanner returning anything but (str, {str: int}) is treated as failed, never trusted.
        if not isinstance(safe, str) or not isinstance(counts, dict):
            raise TypeError("scanner returned a malformed result")
        return safe, {str(k): int(v) for k, v in counts.items()}

    def _withhold(self, reason: str) -> Redaction:
        with self._lock:
            self.withheld += 1
        return Redaction(f"[result withheld: {reason}; try a narrower request]", {}, withheld=True)

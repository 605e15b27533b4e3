"""The lifecycle the fake servers share: an HTTP server on 127.0.0.1, a free port, a daemon thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class QuietServer(ThreadingHTTPServer):
    """Serves on 127.0.0.1 at a free port; knows the fake it serves for."""

    daemon_threads = True

    def __init__(self, fake: Any, handler: type[BaseHTTPRequestHandler]) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that times out and hangs up mid-answer is a test scenario, not a fake's bug.
        pass


class LoopbackServer:
    """start()/stop() and `with`; subclasses give the handler and what stopping must also do."""

    handler: type[BaseHTTPRequestHandler]
    thread_name = "fake-server"

    def __init__(self) -> None:
        self._server: QuietServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        if self._server is not None:
            return self
        self._before_start()
        self._server = QuietServer(self, self.handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._before_stop()
        server.shutdown()
        server.server_close()
        self._after_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _before_start(self) -> None:
        """Hook: reset per-run state."""

    def _before_stop(self) -> None:
        """Hook: wake anything that would keep a handler thread busy."""

    def _after_close(self) -> None:
        """Hook: release what the closed server left open."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _origin(self) -> str:
        if self._server is None:
            raise RuntimeError(
                f"{type(self).__name__} is not running; call start() or use it as a context manager"
            )
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

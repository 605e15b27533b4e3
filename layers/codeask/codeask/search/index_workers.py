"""Parsing a snapshot's files for its definitions index in worker processes, one per CPU, fed over pipes."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, wait

from codeask.search import languages
from codeask.search.filekinds import language_of
from codeask.search.index_rows import FileRows, Row, Task

# Below this many bytes to parse a build stays in its own process: starting workers costs more.
MIN_BYTES = 2_000_000
MAX_WORKERS = 8
# Files sent to a worker at a time: small enough that the work stays even and a time budget is
# checked often, big enough that the pipe's cost is small beside the parsing.
CHUNK_BYTES = 256_000
CHUNK_FILES = 200
IN_FLIGHT = 2  # pieces sent to a worker ahead of its results


def cpus() -> int:
    """The CPUs this process may run on (Lambda gives 2 or more at higher memory sizes)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def workers_for(todo_bytes: int) -> int:
    """How many worker processes a build of this many bytes uses (1: none, it parses itself)."""
    if todo_bytes < MIN_BYTES or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(cpus(), MAX_WORKERS))


def chunks(todo: list[tuple[Task, int]]) -> list[list[Task]]:
    """The files in listing order, cut into pieces of about CHUNK_BYTES."""
    out: list[list[Task]] = []
    piece: list[Task] = []
    size = 0
    for task, n in todo:
        piece.append(task)
        size += n
        if size >= CHUNK_BYTES or len(piece) >= CHUNK_FILES:
            out.append(piece)
            piece, size = [], 0
    if piece:
        out.append(piece)
    return out


def parse_in_workers(
    root: str, pieces: list[list[Task]], workers: int, stop: Callable[[], bool]
) -> Iterator[tuple[list[Task], list[Row], list[Row]]]:
    """Each piece parsed by one of `workers` forked processes, yielded as (piece, files, defs) in
    the order they finish. `stop()` is asked after each piece arrives: when it says so, the pieces
    still out are abandoned. A worker that dies raises ChildProcessError (an OSError)."""
    # Grammars and their wheels are loaded before the fork: each worker inherits them, and no
    # worker ever takes the import or grammar lock that another thread of this process held.
    for name in {language_of(task.rel) for piece in pieces for task in piece}:
        if languages.has_grammar(name) and name is not None:
            languages.load(name)
    ctx = multiprocessing.get_context("fork")  # Lambda has no /dev/shm: pipes, not a Pool's queues
    # Each worker has a piece waiting in its pipe while it parses another, so that it never idles
    # while this process writes the rows it sent.
    out: dict[Connection, deque[list[Task]]] = {}
    procs = []
    todo = iter(pieces)
    try:
        for _ in range(min(workers, len(pieces))):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_work, args=(theirs, root), daemon=True)
            proc.start()
            theirs.close()  # so that a worker's death is seen as the end of its pipe
            procs.append(proc)
            out[mine] = deque()
            for _ in range(IN_FLIGHT):
                _send(mine, next(todo, None), out)
        while any(out.values()):
            for conn in wait([c for c, flying in out.items() if flying]):
                assert isinstance(conn, Connection)
                try:
                    files, defs = conn.recv()
                except (EOFError, OSError) as e:
                    raise ChildProcessError(f"a parsing worker died: {e!r}") from e
                piece = out[conn].popleft()
                _send(conn, next(todo, None), out)
                yield piece, files, defs
                if stop():
                    return
    finally:
        abandoned = any(out.values())  # stopped early or failed: what the workers do is not wanted
        for conn in out:
            if not abandoned:
                with contextlib.suppress(OSError, ValueError):
                    conn.send(None)
            conn.close()
        for proc in procs:
            if not abandoned:
                proc.join(timeout=1.0)
            if proc.is_alive():
                proc.kill()
            proc.join()


def _send(
    conn: Connection, piece: list[Task] | None, out: dict[Connection, deque[list[Task]]]
) -> None:
    if piece is not None:
        conn.send(piece)
        out[conn].append(piece)


def _work(conn: Connection, root: str) -> None:
    """A worker: parse each piece the pipe brings, send its rows back, until it brings None."""
    rows = FileRows(root)
    while True:
        try:
            piece = conn.recv()
        except EOFError:
            return
        if piece is None:
            return
        files: list[Row] = []
        defs: list[Row] = []
        for task in piece:
            rows.add(task, files, defs)
        try:
            conn.send((files, defs))
        except OSError:  # the build stopped and closed its end: these rows are not wanted
            return

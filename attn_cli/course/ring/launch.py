"""Starting the ring's P processes on this machine, watching them, and stopping them.

`attn ring` returns, fails or is interrupted only once every process it started has ended: when
one ends early (killed, or failing) the others are killed at once, and Ctrl-C kills them before
the command stops. The processes are forked where the system can (Linux, for gloo and pipes):
each starts in milliseconds with what the command already imported (torch among it); for nccl,
whose CUDA cannot be used in a process forked from one that may have touched it, and where
there is no fork, they are spawned (a fresh interpreter each).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import replace
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from typing import Any

import numpy as np

from attn_cli.core.errors import UserError
from attn_cli.course.ring import rank as ranks
from attn_cli.course.ring.rank import Job, PipeEnds, Ring

Record = dict[str, np.ndarray]


def start_method(transport: str) -> str:
    """fork for gloo and pipes on Linux; spawn for nccl, and where fork is unsafe or missing."""
    forking = sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
    return "fork" if forking and transport != "nccl" else "spawn"


def run(
    ring: Ring, q: np.ndarray, k: np.ndarray, v: np.ndarray, program: Any = None
) -> list[Record]:
    """Run the ring on Q, K, V (float64, n rows each): each process's record, in rank order.
    ``program``: what each process runs instead of the ring (attn ulysses's), a module-level
    function of its :class:`Job`."""
    with tempfile.TemporaryDirectory(prefix="attn-ring-") as folder:
        listener = None if ring.transport == "pipes" else _loopback_listener()
        try:
            ring = replace(ring, folder=folder, listener=listener)
            jobs = _jobs(ring, q, k, v, program)
            _run_jobs(ring, jobs)
        finally:
            if listener is not None:
                listener.close()
        return [
            dict(np.load(ranks.record_path(folder, job.rank), allow_pickle=False)) for job in jobs
        ]


def _loopback_listener() -> socket.socket:
    """A socket on 127.0.0.1 and a free port, listening: process 0 serves the store on it (bound
    before any process starts, so no other program can take the port in between)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((ranks.LOOPBACK, 0))
    listener.listen(128)
    return listener


def _jobs(ring: Ring, q: np.ndarray, k: np.ndarray, v: np.ndarray, program: Any) -> list[Job]:
    jobs = []
    pipes = None
    if ring.transport == "pipes":
        pipes = _mesh(ring.processes) if ring.method == "ulysses" else _pipes(ring.processes)
    every = [] if pipes is None else [c for ends in pipes for c in _connections(ends)]
    for rank, shard in enumerate(ring.shards):
        rows = shard.positions
        ends = None if pipes is None else pipes[rank]
        own = [] if ends is None else _connections(ends)
        unused = [c for c in every if all(c is not mine for mine in own)]
        jobs.append(Job(ring, rank, q[rows], k[rows], v[rows], ends, unused, program))
    return jobs


def _pipes(processes: int) -> list[PipeEnds]:
    """The ring's pipes (process r to r + 1) and the gather's (each process to process 0)."""
    ring = [multiprocessing.Pipe(duplex=False) for _ in range(processes)]  # (read, write) ends
    gather = [multiprocessing.Pipe(duplex=False) for _ in range(1, processes)]
    return [
        PipeEnds(
            right=ring[rank][1],
            left=ring[(rank - 1) % processes][0],
            to_first=gather[rank - 1][1] if rank else None,
            from_others=tuple(read for read, _write in gather) if rank == 0 else (),
        )
        for rank in range(processes)
    ]


def _mesh(processes: int) -> list[PipeEnds]:
    """attn ulysses's pipes: one from every process to every other (the all-to-all), the ring's
    and the gather's among them (process r to r + 1, and each to process 0)."""
    pipe = {
        (i, j): multiprocessing.Pipe(duplex=False)  # (read, write) ends
        for i in range(processes)
        for j in range(processes)
        if i != j
    }
    ends = []
    for rank in range(processes):
        to_each = tuple(None if j == rank else pipe[rank, j][1] for j in range(processes))
        from_each = tuple(None if i == rank else pipe[i, rank][0] for i in range(processes))
        if processes == 1:
            ends.append(PipeEnds(None, None, to_each=to_each, from_each=from_each))
            continue
        ends.append(
            PipeEnds(
                right=to_each[(rank + 1) % processes],
                left=from_each[(rank - 1) % processes],
                to_first=to_each[0] if rank else None,
                from_others=from_each[1:] if rank == 0 else (),
                to_each=to_each,
                from_each=from_each,
            )
        )
    return ends


def _connections(ends: PipeEnds) -> list[Any]:
    if ends.to_each:
        return [c for c in (*ends.to_each, *ends.from_each) if c is not None]
    found = [ends.right, ends.left, *ends.from_others]
    return found if ends.to_first is None else [*found, ends.to_first]


def _run_jobs(ring: Ring, jobs: list[Job]) -> None:
    """Start a process per job and wait for all of them; whatever happens, none is left."""
    method = start_method(ring.transport)
    if method == "fork":
        context: Any = multiprocessing.get_context("fork")
    else:
        context = multiprocessing.get_context("spawn")
    if method == "fork" and ring.transport != "pipes":
        import torch.distributed  # noqa: F401  (imported once here, not once per process)
    for stream in (sys.stdout, sys.stderr):  # a forked process must not write them again
        if stream is not None:  # None: closed before Python started (>&-), nothing to write
            stream.flush()
    processes: list[BaseProcess] = []
    try:
        with _ctrl_c_held():
            for job in jobs:
                process = context.Process(
                    target=ranks.main, args=(job,), name=f"attn ring rank {job.rank}", daemon=True
                )
                process.start()
                processes.append(process)
        if jobs[0].pipes is not None:  # the processes hold their ends; the command none
            for connection in jobs[0].unused + _connections(jobs[0].pipes):
                connection.close()
        failed = _first_failure(ring, processes)
    finally:  # an error, Ctrl-C (KeyboardInterrupt) or the end: stop every process still there
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join()
    if failed is not None:
        raise _failure(ring, *failed)


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Ctrl-C held back while the processes start, and raised once they have (then every one is
    stopped). One that arrived during a fork would be raised inside the fork's own handlers
    (logging's), which print it and carry on: the command would not stop, and would wait for ever
    on a process that had already been told to.

    Two holds, as neither is enough alone. A signal mask holds only the thread that sets it:
    numpy's BLAS has threads of its own, and the kernel hands a signal the main thread blocks to
    one of them, whose handler has Python raise it in the main thread at once, in a fork's
    handler as likely as not (the suite on a loaded machine saw the command exit 0 after a
    Ctrl-C). So the Python handler, which always runs in the main thread, only notes a Ctrl-C
    meanwhile. The mask stays too: the processes inherit it, and unblock it once they ignore
    Ctrl-C (rank.main)."""
    masks = hasattr(signal, "pthread_sigmask")  # Windows: no signal masks (and no fork)
    main = threading.current_thread() is threading.main_thread()  # signal.signal's only thread
    pressed: list[int] = []
    before = (
        signal.signal(signal.SIGINT, lambda number, _frame: pressed.append(number))
        if main
        else None
    )
    if masks:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if masks:  # a Ctrl-C held back by the mask is delivered here, to the handler above
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        if main:
            signal.signal(signal.SIGINT, signal.SIG_DFL if before is None else before)
    if pressed:
        raise KeyboardInterrupt


def _first_failure(ring: Ring, processes: list[BaseProcess]) -> tuple[int, int | None] | None:
    """Wait until every process has ended, or one has ended in failure; then the rank to blame
    and its exit code (None: still ending), or None when all ended well.

    Of the processes that failed, the one killed by a signal (its neighbours fail because it
    died), else the one whose error came first, as a neighbour's error follows from it. That one
    may not have ended yet: a process writes its error, then exits, and its neighbours, which
    see its connections close as it exits, can end before it does. So the processes still
    running that have written an error are among those weighed."""
    waiting: dict[Any, BaseProcess] = {process.sentinel: process for process in processes}
    while waiting:
        ended = [waiting.pop(sentinel) for sentinel in wait_or_signal(list(waiting))]
        failed = _failed(ring, processes, waiting, ended)
        if failed is not None:
            return failed
    return None


def wait_or_signal(objects: list[Any]) -> list[Any]:
    """multiprocessing's wait for ``objects``, woken by a signal too (its Python handler, a
    Ctrl-C's KeyboardInterrupt, runs as this returns): the objects ready, none if a signal."""
    with _woken_by_signals() as woken:
        ready = wait([*objects, *woken])
        for wakeup in woken:
            if wakeup in ready:  # read what the signal wrote
                with contextlib.suppress(BlockingIOError):
                    wakeup.recv(4096)
    return [each for each in ready if each not in woken]


def _failed(
    ring: Ring, processes: list[BaseProcess], waiting: dict[Any, BaseProcess], ended: list[Any]
) -> tuple[int, int | None] | None:
    """Of the processes just ``ended`` (the others still ``waiting``), the one to blame if any
    failed (:func:`_first_failure`), else None."""
    if ended:  # else: woken by a signal, or nothing ended yet
        for process in ended:
            process.join()
        failed = [(processes.index(p), p.exitcode) for p in ended if p.exitcode != 0]
        if failed:
            ending = [
                (rank, None)
                for rank in (processes.index(p) for p in waiting.values())
                if ranks.error_time_path(ring.folder, rank).exists()
            ]
            return min([*failed, *ending], key=lambda found: _blame(ring, *found))
    return None


@contextlib.contextmanager
def _woken_by_signals() -> Iterator[tuple[socket.socket, ...]]:
    """A socket that wakes the wait for the processes when a signal comes (signal's wakeup
    fd), whichever thread the kernel hands the signal to. Python runs a handler in the main
    thread only, at its next instruction: a Ctrl-C handed to another thread (numpy's BLAS has
    threads of its own) found the main thread asleep in the wait, which nothing else woke, and
    the command waited for ever. (The hangs of the suite beside six busy processes were another
    cause: a SIGINT its launcher ignored, tests/conftest.py.)
    None where this is not the main thread (only it may set the wakeup fd)."""
    if threading.current_thread() is not threading.main_thread():
        yield ()
        return
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    before = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        yield (reader,)
    finally:
        signal.set_wakeup_fd(before)
        reader.close()
        writer.close()


def _blame(ring: Ring, rank: int, exitcode: int | None) -> tuple[bool, int, int]:
    """The order in which to blame a failed process: killed by a signal first, then by when it
    wrote its error (none written: last), then by rank."""
    when = ranks.error_time_path(ring.folder, rank)
    said = when.read_text(encoding="utf-8") if when.exists() else ""
    written = int(said) if said.isdigit() else sys.maxsize  # none (or cut short): last
    return ((exitcode or 0) >= 0, written, rank)


def _failure(ring: Ring, rank: int, exitcode: int | None) -> Exception:
    """What to report of process ``rank``'s early end: killed by a signal, one line; an error
    in it, its traceback (a bug); the others, now stopped, are not left running."""
    others = ring.processes - 1
    stopped = (
        f"the other {others} process{'' if others == 1 else 'es'} {'was' if others == 1 else 'were'} "
        "stopped and none is left running"
        if others
        else "none is left running"
    )
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        return UserError(
            f"process {rank} of {_whose(ring)} ({ring.processes} processes) was killed ({name}) before "
            f"the lesson ended; {stopped}; run the lesson again."
        )
    error = ranks.error_path(ring.folder, rank)
    log = ranks.log_path(ring.folder, rank)
    said = error.read_text(encoding="utf-8") if error.exists() else f"exit code {exitcode}"
    details = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return RuntimeError(f"process {rank} of {_whose(ring)} failed ({said}); {stopped}.\n{details}")


def _whose(ring: Ring) -> str:
    """What the processes were running, as a failure names it: the ring, or attn ulysses's."""
    return "the ring" if ring.method == "ring" else "Ulysses"

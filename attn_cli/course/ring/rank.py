"""One process of the ring: what each of the P processes `attn ring` starts runs, start to end.

A process holds its shard's queries and, in turn, every block of keys and values: in each round
it starts passing the block it holds to the next process and receiving the next one from the
previous process, folds the block it holds into its running max, running sum and accumulator
(attn_cli.mechanisms.ring.merge: the flash lesson's update), then waits for the exchange to
finish. After P rounds it divides acc by ℓ, sends its rows to process 0, which puts every row
back in its place in the sequence, and writes what it did (every round's values, its work and
the bytes it sent) to a file that the command reads once every process is done.

The blocks move through torch.distributed (gloo between CPU processes, nccl between GPUs) over
the loopback address, or through OS pipes (no PyTorch needed). Nothing here prints: a process's
standard output and error go to a log file, so that a library's warning never reaches the
terminal, and an error is written for the command to report.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from attn_cli.core.backend import Array, Backend
from attn_cli.core.backend_choice import get_backend
from attn_cli.mechanisms import tiled
from attn_cli.mechanisms.ring import Shard, merge, source

# How long a process waits for another (the store, a block) before it gives up: the command
# stops every process as soon as one ends early, so this only bounds a process whose command
# was itself killed at once (kill -9) and could not stop it.
TIMEOUT = timedelta(seconds=60)
LOOPBACK = "127.0.0.1"
# The variable each torch.distributed backend reads for the interface its connections use.
SOCKET_VARIABLES = {"gloo": "GLOO_SOCKET_IFNAME", "nccl": "NCCL_SOCKET_IFNAME"}


@dataclass(frozen=True)
class Ring:
    """What every process of one run shares."""

    shards: tuple[Shard, ...]  # the positions each process holds, in rank order
    causal: bool
    use_scale: bool
    backend: str  # numpy or torch: the array library of each process's arithmetic
    dtype: str
    transport: str  # gloo, nccl or pipes
    folder: str  # where each process writes its record and its log
    listener: socket.socket | None = None  # the store's socket, bound to LOOPBACK (gloo, nccl)
    keep: bool = True  # keep every merge's values (the lesson shows them; a benchmark need not)
    # What the processes run: the ring (rank.run), or attn ulysses's all-to-alls, whose pipes are
    # a mesh (every process to every other) and whose Q and V hold H and G heads side by side.
    method: str = "ring"
    heads: int = 1
    kv_heads: int = 1

    @property
    def processes(self) -> int:
        return len(self.shards)


@dataclass(frozen=True)
class PipeEnds:
    """A process's ends of the pipes (pipes only): to the next process, from the previous one,
    and the gather's: to process 0, or on process 0 from each of the others."""

    right: Any
    left: Any
    to_first: Any = None
    from_others: tuple[Any, ...] = ()
    # attn ulysses's all-to-all: a pipe to and from every process, by rank (None: this one).
    to_each: tuple[Any, ...] = ()
    from_each: tuple[Any, ...] = ()


@dataclass
class Job:
    """One process's part: its rank, its inputs (float64, its shard's rows) and its links."""

    ring: Ring
    rank: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    pipes: PipeEnds | None = None
    # Every other connection this process inherits (the other processes' ends): closed at its
    # start, so that a process that dies leaves its neighbours an end of file, not a wait.
    unused: list[Any] = field(default_factory=list)
    # What the process runs (a module-level function, so that a spawned process can be handed
    # it): the ring, unless another lesson's processes (attn ulysses) run on the same machinery.
    program: Any = None


def record_path(folder: str, rank: int) -> Path:
    return Path(folder) / f"rank{rank}.npz"


def log_path(folder: str, rank: int) -> Path:
    return Path(folder) / f"rank{rank}.log"


def error_path(folder: str, rank: int) -> Path:
    return Path(folder) / f"rank{rank}.error"


def error_time_path(folder: str, rank: int) -> Path:
    """When the process caught its error (time.monotonic_ns, one clock for every process)."""
    return Path(folder) / f"rank{rank}.error-time"


def main(job: Job) -> None:
    """The process's entry point. It exits 0 once its record is written; on an error it writes
    the error (one line, then the traceback in its log) and exits 1."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the command stops every process
    if hasattr(signal, "pthread_sigmask"):  # held back in the command as it started this one
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with_parent()
    folder, rank = job.ring.folder, job.rank
    torch = sys.modules.get("torch")
    if torch is not None:  # one thread each, as torchrun sets: P processes share the cores (and
        torch.set_num_threads(1)  # a forked process must not enter the parent's thread pool)
    try:
        log = open(log_path(folder, rank), "w", encoding="utf-8")  # noqa: SIM115 (until exit)
    except OSError:  # the command has stopped and removed its folder (Ctrl-C as this started):
        os._exit(1)  # nothing to report, and no traceback on the user's terminal
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    try:
        arrays: dict[str, Any] = (job.program or run)(job)
        np.savez(record_path(folder, rank), **arrays)
    except BaseException as error:  # anything: reported by the command, which stops the rest
        error_time_path(folder, rank).write_text(str(time.monotonic_ns()), encoding="utf-8")
        error_path(folder, rank).write_text(
            f"{type(error).__name__}: {error}".splitlines()[0], encoding="utf-8"
        )
        traceback.print_exc(file=log)
        log.flush()
        raise SystemExit(1) from None
    log.flush()


def _die_with_parent() -> None:
    """Linux: ask the kernel to kill this process when the command that started it dies (even
    by kill -9, which leaves it no time to stop its processes); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        parent = multiprocessing.parent_process()
        # The command already died before the request took effect: this process now has another
        # parent (init, or a subreaper such as a container's first process).
        if parent is not None and os.getppid() != parent.pid:
            os._exit(1)


def run(job: Job) -> dict[str, np.ndarray]:
    """The ring, for process ``job.rank``: every round's merge, then the gather. Beside what the
    lesson shows, each round's seconds: merging, and then waiting for the exchange to end (the
    benchmark reads them; the lesson shows no time)."""
    started = time.perf_counter()
    ring, rank = job.ring, job.rank
    processes = ring.processes
    backend = backend_of(ring, rank)
    q, k, v = (backend.asarray(array) for array in (job.q, job.k, job.v))
    d_k = job.q.shape[1]
    arrays: dict[str, np.ndarray] = {"queries": ring.shards[rank].positions}
    if ring.transport == "nccl":  # the GPU's name, for its figures (the traffic step)
        import torch

        arrays["device"] = np.asarray(torch.cuda.get_device_name(rank))
    with link_of(job, backend) as link:
        arrays["set_up_seconds"] = np.asarray(time.perf_counter() - started)
        if isinstance(link, DistributedLink) and link.interface:  # the interface it set
            arrays["interface"] = np.asarray(link.interface)
        state = tiled.initial_state(q, v)
        block = joined(backend, k, v)  # the block this process holds: its keys, then values
        for t in range(processes):
            held = source(rank, t, processes)
            keys = ring.shards[held]
            last = t == processes - 1
            clock = time.perf_counter()
            sent_before = link.bytes_sent
            if not last:  # start passing this block on while it is merged (the overlap)
                link.start(block, ring.shards[source(rank, t + 1, processes)].size)
            k_block, v_block = block[:, :d_k], block[:, d_k:]
            merged = merge(
                state,
                q,
                k_block,
                v_block,
                ring.shards[rank],
                keys,
                causal=ring.causal,
                use_scale=ring.use_scale,
            )
            backend.synchronize()
            merged_at = time.perf_counter()
            prefix = f"round{t + 1}."
            arrays[prefix + "source"] = np.asarray(held)
            arrays[prefix + "computed"] = np.asarray(merged.work.computed)
            arrays[prefix + "kept"] = np.asarray(merged.work.kept)
            # what the link counted of the block handed to it (none in the last round)
            arrays[prefix + "sent"] = np.asarray(link.bytes_sent - sent_before)
            if merged.update is not None:
                if ring.keep:
                    arrays.update(_round_values(backend, prefix, merged.update))
                state = merged.update.state
            if not last:
                block = link.finish()
            arrays[prefix + "merge_seconds"] = np.asarray(merged_at - clock)
            arrays[prefix + "wait_seconds"] = np.asarray(time.perf_counter() - merged_at)
        output = tiled.finish(state)
        arrays["output"] = backend.to_numpy(output)
        gathered = link.gather(output, ring.shards)
        if gathered is not None:
            arrays["gathered"] = gathered
    arrays["seconds"] = np.asarray(time.perf_counter() - started)
    return arrays


def _round_values(backend: Backend, prefix: str, update: tiled.BlockUpdate) -> dict[str, Any]:
    """What the command shows of a merge: the block's scores, its exponentials and their sums,
    and the state after it."""
    values = {
        "scores": update.scores,
        "block_max": update.block_max,
        "rescale": update.rescale,
        "p": update.p,
        "block_sum": update.block_sum,
        "pv": update.pv,
        "row_max": update.state.row_max,
        "row_sum": update.state.row_sum,
        "acc": update.state.acc,
    }
    return {prefix + name: backend.to_numpy(value) for name, value in values.items()}


def backend_of(ring: Ring, rank: int) -> Backend:
    """This process's arithmetic: numpy, or torch on the CPU, or torch on GPU ``rank`` (nccl)."""
    if ring.transport != "nccl":
        return get_backend(ring.backend, "cpu", ring.dtype)
    import torch

    from attn_cli.core.torch_backend import TorchBackend

    torch.cuda.set_device(rank)
    return TorchBackend("torch", f"cuda:{rank}", ring.dtype)


def joined(backend: Backend, k: Array, v: Array) -> Array:
    """One buffer for a block: its keys and values side by side, sent as one message."""
    if backend.name == "numpy":
        return np.ascontiguousarray(np.concatenate([k, v], axis=1))
    import torch

    return torch.cat([k, v], dim=1).contiguous()


class Link:
    """How a process passes blocks round the ring, exchanges parts with every other process (an
    all-to-all) and sends its rows to process 0. ``bytes_sent`` and ``bytes_received`` count the bytes of
    the arrays it handed to the transport for another process and got from one (the gather to
    process 0 aside: it is the lesson's display, not the algorithm's)."""

    bytes_sent = 0
    bytes_received = 0

    def start(self, block: Array, incoming_rows: int) -> None:
        """Begin sending ``block`` to the next process and receiving the next block (of
        ``incoming_rows`` rows) from the previous one."""
        raise NotImplementedError

    def finish(self) -> Array:
        """Wait for both; the block received."""
        raise NotImplementedError

    def all_to_all(self, parts: list[Array]) -> list[Array]:
        """Send ``parts[j]`` to process j and receive one part from each: the parts received, by
        sender (this process's own part kept as it is, not sent). Every part sent to a process
        has the shape of the one it sends back (the lesson's shards are of equal size)."""
        raise NotImplementedError

    def gather(self, rows: Array, shards: tuple[Shard, ...]) -> np.ndarray | None:
        """Process 0: every process's output rows, each put back at its positions (n × d_v);
        the other processes: None, once theirs are sent."""
        raise NotImplementedError


@contextlib.contextmanager
def link_of(job: Job, backend: Backend) -> Iterator[Link]:
    if job.ring.transport == "pipes":
        yield PipeLink(job, backend)
        return
    link = DistributedLink(job, backend)
    yield link
    # Closed only after a run that went well: after an error the group stays as it is until the
    # process exits, so that its error is written before its neighbours see it gone (and fail).
    link.close()


class PipeLink(Link):
    """OS pipes (multiprocessing connections): one from each process to the next, one from each
    to process 0. A block is sent from a thread, so that a block larger than the pipe's buffer
    cannot leave every process waiting for its neighbour to read."""

    def __init__(self, job: Job, backend: Backend) -> None:
        if backend.name != "numpy" or job.pipes is None:
            raise TypeError("pipes carry numpy arrays, between the ends the command made")
        for connection in job.unused:
            connection.close()
        self.rank, self.ends = job.rank, job.pipes
        self.sender: threading.Thread | None = None
        self.shape: tuple[int, int] = (0, 0)
        self.dtype = np.dtype(np.float64)

    def start(self, block: Array, incoming_rows: int) -> None:
        self.dtype = block.dtype
        self.shape = (incoming_rows, block.shape[1])
        data = block.tobytes()
        self.bytes_sent += len(data)
        self.sender = threading.Thread(target=self.ends.right.send_bytes, args=(data,))
        self.sender.start()

    def finish(self) -> Array:
        received = self.ends.left.recv_bytes()
        self.bytes_received += len(received)
        assert self.sender is not None
        self.sender.join()
        return np.frombuffer(received, dtype=self.dtype).reshape(self.shape).copy()

    def all_to_all(self, parts: list[Array]) -> list[Array]:
        """Every part sent from a thread of its own (a part larger than a pipe's buffer cannot
        leave two processes each waiting for the other to read), then one read from each."""
        senders = []
        for rank, part in enumerate(parts):
            if rank != self.rank:
                data = np.ascontiguousarray(part).tobytes()
                self.bytes_sent += len(data)
                sender = threading.Thread(target=self.ends.to_each[rank].send_bytes, args=(data,))
                sender.start()
                senders.append(sender)
        received = []
        for rank, part in enumerate(parts):
            if rank == self.rank:
                received.append(part)
                continue
            data = self.ends.from_each[rank].recv_bytes()
            self.bytes_received += len(data)
            received.append(np.frombuffer(data, dtype=part.dtype).reshape(part.shape).copy())
        for sender in senders:
            sender.join()
        return received

    def gather(self, rows: Array, shards: tuple[Shard, ...]) -> np.ndarray | None:
        if self.rank != 0:
            self.ends.to_first.send_bytes(np.ascontiguousarray(rows).tobytes())
            return None
        gathered = np.zeros((sum(shard.size for shard in shards), rows.shape[1]), rows.dtype)
        gathered[shards[0].positions] = rows
        for rank, connection in enumerate(self.ends.from_others, start=1):
            shape = (shards[rank].size, rows.shape[1])
            gathered[shards[rank].positions] = np.frombuffer(
                connection.recv_bytes(), rows.dtype
            ).reshape(shape)
        return gathered


class DistributedLink(Link):
    """torch.distributed: a process group over the loopback address (the store on process 0's
    socket, which the command bound to 127.0.0.1 and a free port), each exchange one
    batch_isend_irecv of a send to the next process and a receive from the previous one, and
    the gather dist.gather (each process's rows padded to the longest shard)."""

    def __init__(self, job: Job, backend: Backend) -> None:
        import torch
        import torch.distributed as dist

        ring = job.ring
        self.torch, self.dist, self.backend = torch, dist, backend
        self.rank, self.processes = job.rank, ring.processes
        self.device = torch.device(backend.device)
        self.interface = _loopback_interface()
        if self.interface:  # gloo's and nccl's own connections: over the loopback interface
            # too, whatever the user's environment names (GLOO_SOCKET_IFNAME=eth0 would send
            # the blocks out through the machine's external address; a name of no interface
            # would fail): the lesson says they stay on this machine (build notes the change).
            for variable in SOCKET_VARIABLES.values():
                os.environ[variable] = self.interface
        assert ring.listener is not None
        port = ring.listener.getsockname()[1]
        if job.rank == 0:
            store = dist.TCPStore(
                LOOPBACK,
                port,
                ring.processes,
                True,
                timeout=TIMEOUT,
                master_listen_fd=ring.listener.fileno(),
                use_libuv=False,
            )
        else:
            ring.listener.close()
            store = dist.TCPStore(LOOPBACK, port, ring.processes, False, timeout=TIMEOUT)
        options: dict[str, Any] = {}
        if ring.transport == "nccl":
            options["device_id"] = self.device
        dist.init_process_group(
            ring.transport,
            store=store,
            rank=job.rank,
            world_size=ring.processes,
            timeout=TIMEOUT,
            **options,
        )
        self.works: list[Any] = []
        self.received: Any = None

    def _tensor(self, block: Array) -> Any:
        if self.backend.name == "numpy":
            return self.torch.from_numpy(np.ascontiguousarray(block))
        return block

    def start(self, block: Array, incoming_rows: int) -> None:
        dist = self.dist
        outgoing = self._tensor(block)
        self.received = self.torch.empty(
            (incoming_rows, outgoing.shape[1]), dtype=outgoing.dtype, device=outgoing.device
        )
        self.works = dist.batch_isend_irecv(
            [
                dist.P2POp(dist.isend, outgoing, (self.rank + 1) % self.processes),
                dist.P2POp(dist.irecv, self.received, (self.rank - 1) % self.processes),
            ]
        )
        self.outgoing = outgoing  # kept alive until the send is done
        self.bytes_sent += outgoing.numel() * outgoing.element_size()

    def finish(self) -> Array:
        for work in self.works:
            work.wait()
        received = self.received
        self.count_received(received)
        return received.numpy() if self.backend.name == "numpy" else received

    def count_received(self, tensor: Any) -> None:
        self.bytes_received += tensor.numel() * tensor.element_size()

    def all_to_all(self, parts: list[Array]) -> list[Array]:
        """dist.all_to_all, each part as a contiguous tensor; the bytes counted are those of
        the parts for other processes (the own part is copied in place)."""
        outgoing = [self._tensor(part).contiguous() for part in parts]
        incoming = [self.torch.empty_like(part) for part in outgoing]
        self.dist.all_to_all(incoming, outgoing)
        for rank, (out, came) in enumerate(zip(outgoing, incoming, strict=True)):
            if rank != self.rank:
                self.bytes_sent += out.numel() * out.element_size()
                self.count_received(came)
        if self.backend.name == "numpy":
            return [part.numpy() for part in incoming]
        return incoming

    def gather(self, rows: Array, shards: tuple[Shard, ...]) -> np.ndarray | None:
        torch = self.torch
        tensor = self._tensor(rows)
        longest = max(shard.size for shard in shards)
        padded = torch.zeros((longest, tensor.shape[1]), dtype=tensor.dtype, device=tensor.device)
        padded[: tensor.shape[0]] = tensor
        gathered = [torch.empty_like(padded) for _ in shards] if self.rank == 0 else None
        self.dist.gather(padded, gathered, dst=0)
        if gathered is None:
            return None
        parts = [self.backend.to_numpy(part) for part in gathered]
        whole = np.zeros((sum(shard.size for shard in shards), tensor.shape[1]), parts[0].dtype)
        for shard, part in zip(shards, parts, strict=True):
            whole[shard.positions] = part[: shard.size]  # the padding left out
        return whole

    def close(self) -> None:
        if self.dist.is_initialized():
            self.dist.destroy_process_group()


def _loopback_interface() -> str | None:
    """The name of the loopback interface ("lo" on Linux, "lo0" on macOS), if there is one."""
    with contextlib.suppress(OSError, AttributeError):
        for _index, name in socket.if_nameindex():
            if name.startswith("lo"):
                return name
    return None

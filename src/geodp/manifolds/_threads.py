"""Large batches evaluated in blocks, in parallel over threads.

A large batch is cut into blocks of about ``BLOCK_BYTES`` per input, so that the temporaries of
a vectorised formula stay in cache and in memory the allocator reuses (fresh megabyte-sized
temporaries cost a page fault per 4 KiB). The blocks run on a thread pool: NumPy's ufunc loops
and LAPACK release the GIL. ``GEODP_NUM_THREADS`` sets the number of threads; by default it is
the CPUs this process may use, however busy the machine: the scheduler shares the CPUs per
thread and pool threads do not spin between tasks, so the pool gains beside other work too
(two cores, SPD(8) log map of 10^4 matrices, median: one CPU-bound competitor, 51-57 ms with two
threads against 58 ms when the pool fell to one thread whenever the load looked full; two
competitors, 58 ms against 87; idle, 33 ms). While the pool works, BLAS is held to one thread
(threadpoolctl), so its own threads never multiply ours; outside it, BLAS keeps to the CPUs
other runnable tasks (Linux ``/proc/loadavg``) leave, since OpenBLAS threads spin after a call.
1 thread keeps the blocking but runs it in the calling thread. Calls made from inside a worker
run serially (whole, or ``map_parts`` / ``map_blocks`` block by block), so nested batched calls
never wait on their own pool.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import lru_cache, wraps

import numpy as np

Array = np.ndarray

MIN_BATCH = 20_000
"""Smallest batch that is cut into blocks: below it, the bookkeeping costs more than it saves."""

MIN_BYTES = 10_000 * 16
"""Smallest input of heavy rows cut into blocks whatever its count: a few hundred large
matrices are as much work as tens of thousands of small points. An SPD(n) log map or distance
costs about 0.1 n^2 us per matrix for n = 4..32 (LAPACK's per-call overhead dominates), so bytes
measure the work: 160 KB is about 2 ms on one thread, where a second one starts to gain (the
pool's dispatch costs about 80 us)."""

BLOCK_BYTES = 3 * 2**19
"""Target size of one block of the largest input (1.5 MiB: a few temporaries fit in cache)."""

HEAVY_ROW_BYTES = 128
"""Rows of at least this size (SPD(4) and up) cost an eigendecomposition each: worth splitting
from ``MIN_BYTES`` on, a thread per share even below two blocks; lighter rows are split from
``MIN_BATCH`` rows and two blocks on."""

_state = threading.local()


def thread_count() -> int:
    """Most threads used for large batches: ``GEODP_NUM_THREADS`` or the CPUs available to the
    process."""
    env = os.environ.get("GEODP_NUM_THREADS")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"GEODP_NUM_THREADS must be a positive integer, got {env!r}")
        return int(env)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _runnable_here() -> int:
    """Runnable threads of this process (state R in /proc/self/task/*/stat): this thread, and
    BLAS or pool threads still spinning after their last task."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as f:
                count += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return max(count, 1)


#: Seconds for which a look at the load stands (reading it costs 10-100 us, a large share of a
#: batch of a few hundred matrices).
LOAD_TTL = 0.02
_last_look = [-1.0, 0]


def _busy_elsewhere() -> int:
    """Runnable tasks of other processes: the 4th field of /proc/loadavg counts every runnable
    scheduling entity, less this process's own (only counted when the total exceeds this
    thread); 0 where /proc cannot be read. One look stands for ``LOAD_TTL`` seconds."""
    now = time.monotonic()
    when, busy = _last_look
    if now - when < LOAD_TTL:
        return busy
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        busy = max(running - _runnable_here(), 0) if running > 1 else 0
    except (OSError, ValueError, IndexError):
        busy = 0
    _last_look[:] = [now, busy]
    return busy


def _budget() -> tuple[int, int]:
    """(threads for a large batch, BLAS threads outside the pool) now: inside ``serial`` one and
    one; ``GEODP_NUM_THREADS`` when set, BLAS unlimited; otherwise every CPU of the process, and
    BLAS kept to the CPUs other runnable tasks leave (at least one; one look at the load)."""
    count = thread_count()
    if getattr(_state, "single", False):
        return 1, 1
    if os.environ.get("GEODP_NUM_THREADS"):
        return count, count
    return count, max(1, count - _busy_elsewhere())


@lru_cache(maxsize=1)
def _blas_controller():
    """threadpoolctl's view of the BLAS libraries loaded (built once: a fresh scan costs ~1 ms;
    NumPy's BLAS, the one the batched kernels call, is loaded with NumPy)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _blas_limited(threads: int):
    """A context holding the BLAS libraries to ``threads`` threads."""
    return _blas_controller().limit(limits=threads, user_api="blas")


@lru_cache(maxsize=4)
def _pool(workers: int, pid: int) -> ThreadPoolExecutor:
    """One pool per thread count and process (a forked child must not reuse its parent's pool,
    whose threads it does not have)."""
    return ThreadPoolExecutor(workers, thread_name_prefix="geodp")


def block_count(size: int, per_block: int) -> int:
    """How many equal blocks ``size`` items are cut into, at most about ``per_block`` each: as
    many as a multiple of the process's CPUs, so that every thread gets the same share."""
    cpus = thread_count()
    blocks = -(-size // max(1, per_block))
    return -(-blocks // cpus) * cpus


def _run_blocks(task: Callable[[int, int], object], size: int, row_bytes: int) -> list:
    """task(lo, hi) over consecutive blocks covering range(size), in order: equal blocks of at
    most about BLOCK_BYTES, as many as a multiple of the process's CPUs, so that every thread
    gets the same share (three blocks on two threads would leave one thread idle for a third of
    the call: the SPD(5) log map of 20,000 matrices scaled 1.63x on two threads, 1.9x with four
    equal blocks). The blocks do not depend on the load, only the number of threads running them
    does: a sum over blocks adds in the same order on a busy machine and an idle one, so a seeded
    release is reproducible to the last bit."""
    rows = -(-size // block_count(size, BLOCK_BYTES // max(row_bytes, 1)))
    bounds = list(range(0, size, rows)) + [size]
    if getattr(_state, "inside", False):  # nested in a worker (BLAS already held to one thread):
        # the pool's threads may all be busy with the enclosing call, so wait on none of them
        return [task(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
    threads, blas = _budget()
    workers = min(threads, len(bounds) - 1)
    if workers < 2:
        with _blas_limited(blas) if blas < thread_count() else nullcontext():
            return [task(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]

    def run(lo: int, hi: int) -> object:
        before = getattr(_state, "inside", False)
        _state.inside = True
        try:
            return task(lo, hi)
        finally:
            _state.inside = before

    with _blas_limited(1):
        return _share_with_caller(run, list(zip(bounds[:-1], bounds[1:])), workers)


def _share_with_caller(run: Callable[[int, int], object], blocks: list[tuple[int, int]],
                       workers: int) -> list:
    """run(lo, hi) for every block, results in block order, on ``workers`` threads of which the
    calling thread is one: it and a pool of workers - 1 threads take the blocks one at a time
    from a shared counter until none is left. A pool thread slow to wake (an idle virtual CPU
    can take milliseconds) then finds the blocks done, and the call costs no more than a serial
    one: the SPD(5) kernels on 2000 matrices, 3-6 ms of work, had gained 0.8-1.35x on two
    threads when every block waited for a pool thread."""
    results: list = [None] * len(blocks)
    counter = itertools.count()

    def drain() -> None:
        for i in iter(lambda: next(counter), None):
            if i >= len(blocks):
                return
            results[i] = run(*blocks[i])

    pool = _pool(workers - 1, os.getpid())
    futures = [pool.submit(drain) for _ in range(workers - 1)]
    try:
        drain()
    finally:
        for future in futures:
            future.result()
    return results


def map_parts(fn: Callable[[int], object], indices: list[int]) -> list:
    """fn(i) for each index, in order, each a block's worth of work (such as the blocks of a sum
    ``split_sample_sum`` kept apart), on the thread pool (a single one in the calling thread)."""
    if len(indices) == 1:
        return [fn(indices[0])]
    return _run_blocks(lambda lo, hi: fn(indices[lo]), len(indices), BLOCK_BYTES)


def map_blocks(task: Callable[[int, int], object], size: int, row_bytes: int) -> list:
    """task(lo, hi) over the cache-sized blocks of range(size) that ``_run_blocks`` cuts, results
    in block order, or [task(0, size)] for less than two blocks' worth (``BLOCK_BYTES``). Inside
    a worker or ``serial`` the same blocks run one after the other in the calling thread, so a
    sum over the results adds in the same order wherever it runs."""
    if size * row_bytes < 2 * BLOCK_BYTES:
        return [task(0, size)]
    return _run_blocks(task, size, row_bytes)


def _is_large(count: int, min_batch: int, row_bytes: int = 0) -> bool:
    """Worth cutting into blocks, and not already inside a worker: ``min_batch`` items, or, for
    heavy rows (``HEAVY_ROW_BYTES``: an eigendecomposition each), the matching bytes
    (``MIN_BYTES`` at the default ``MIN_BATCH``). Light rows below ``min_batch`` cost less than
    the threads' bookkeeping."""
    heavy = row_bytes >= HEAVY_ROW_BYTES and count * row_bytes >= MIN_BYTES * min_batch // MIN_BATCH
    return (count >= min_batch or heavy) and not getattr(_state, "inside", False)


@contextmanager
def serial() -> Iterator[None]:
    """Inside the block, large batches keep their blocks (temporaries stay in cache) but run them
    one after the other in the calling thread: for callers that already run in parallel, such as
    the tasks of a Dask scheduler."""
    before = getattr(_state, "single", False)
    _state.single = True
    try:
        yield
    finally:
        _state.single = before


def split_batch(fn: Callable[..., Array], *arrays: Array, core_ndim: int,
                min_batch: int = MIN_BATCH) -> Array:
    """fn(*arrays) for arrays of shape (*batch, *core) (core_ndim trailing dimensions, batches
    broadcasting), evaluated on blocks of the longest batch axis and joined along it: each
    block's result is copied into the output by the thread that computed it, while it is still
    in cache (``_Joined``), instead of one concatenation after the last block, which ran on one
    thread (0.2-0.5 ms of the SPD(8) exponential of 15,625 matrices, 3% of its time on two
    threads)."""
    arrays = tuple(np.asarray(a, dtype=float) for a in arrays)
    batch = np.broadcast_shapes(*(a.shape[:a.ndim - core_ndim] for a in arrays))
    count = math.prod(batch)
    core = max(math.prod(a.shape[a.ndim - core_ndim:]) for a in arrays)
    if count < 2 or not _is_large(count, min_batch, 8 * core):
        return fn(*arrays)
    axis = int(np.argmax(batch))
    row_bytes = 8 * (count // batch[axis]) * core
    joined = _Joined(axis, batch[axis])

    def task(lo: int, hi: int) -> object:
        parts = []
        for a in arrays:
            own = axis - (len(batch) - (a.ndim - core_ndim))
            keep = own < 0 or a.shape[own] == 1
            parts.append(a if keep else a[(slice(None),) * own + (slice(lo, hi),)])
        return joined.place(fn(*parts), lo, hi)

    return joined.result(_run_blocks(task, batch[axis], row_bytes))


class _Placed:
    """The bounds of a block whose result ``_Joined.place`` copied into the outputs."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi


class _Joined:
    """The blocks' results of ``split_batch`` (arrays or tuples of arrays) joined along ``axis``
    of length ``size``: ``place`` copies a block's result into outputs allocated by the first
    block placed and returns its ``_Placed`` bounds, or returns the result itself where it does
    not fit them (another kind, shape or dtype, or a block that is the whole batch); ``result``
    joins what ``place`` returned, exactly as ``np.concatenate`` of the results would."""

    def __init__(self, axis: int, size: int):
        self.axis, self.size = axis, size
        self.out: tuple[Array, ...] | None = None
        self.is_tuple = False
        self.lock = threading.Lock()

    def _fits(self, result: object, lo: int, hi: int) -> bool:
        items = result if isinstance(result, tuple) else (result,)
        ax, out = self.axis, self.out
        if hi - lo == self.size or not all(
                isinstance(r, np.ndarray) and r.ndim > ax and r.shape[ax] == hi - lo for r in items):
            return False
        return out is None or (isinstance(result, tuple) == self.is_tuple and len(items) == len(out) and all(
            r.dtype == o.dtype and r.shape[:ax] + r.shape[ax + 1:] == o.shape[:ax] + o.shape[ax + 1:]
            for r, o in zip(items, out)))

    def place(self, result: object, lo: int, hi: int) -> object:
        ax = self.axis
        with self.lock:
            if not self._fits(result, lo, hi):
                return result
            items = result if isinstance(result, tuple) else (result,)
            if self.out is None:
                self.is_tuple = isinstance(result, tuple)
                self.out = tuple(np.empty(r.shape[:ax] + (self.size,) + r.shape[ax + 1:], dtype=r.dtype)
                                 for r in items)
        for r, o in zip(items, self.out):
            o[(slice(None),) * ax + (slice(lo, hi),)] = r
        return _Placed(lo, hi)

    def result(self, parts: list) -> object:
        placed = [isinstance(p, _Placed) for p in parts]
        if all(placed):
            return self.out if self.is_tuple else self.out[0]
        if len(parts) == 1:
            return parts[0]
        ax, first = self.axis, parts[0]
        parts = [tuple(o[(slice(None),) * ax + (slice(p.lo, p.hi),)] for o in self.out)
                 if isinstance(p, _Placed) else p if isinstance(p, tuple) else (p,) for p in parts]
        joined = tuple(np.concatenate(p, axis=ax) for p in zip(*parts))
        return joined if (self.is_tuple if placed[0] else isinstance(first, tuple)) else joined[0]


def split_sample_sum(fn: Callable[[Array, Array], Array], x: Array, weights: Array,
                     sample_axis: int, min_batch: int = MIN_BATCH) -> Array:
    """sum over blocks of fn(x_block, w_block): x cut along ``sample_axis`` (negative) and weights
    along their last axis, for sums over the sample such as sum_i w_i Log_p(x_i). Data too small
    to be worth splitting (``_is_large``) are summed in one call."""
    x, weights = np.asarray(x, dtype=float), np.asarray(weights, dtype=float)
    count = math.prod(x.shape[:x.ndim + sample_axis + 1])
    row_bytes = x.nbytes // max(count, 1)
    if not _is_large(count, min_batch, row_bytes) or (
            row_bytes < HEAVY_ROW_BYTES and x.nbytes < 2 * BLOCK_BYTES):
        return fn(x, weights)
    lead = (slice(None),) * (x.ndim + sample_axis)
    size = x.shape[sample_axis]
    parts = _run_blocks(lambda lo, hi: fn(x[lead + (slice(lo, hi),)], weights[..., lo:hi]),
                        size, x.nbytes // size)
    if isinstance(parts[0], tuple):
        return tuple(sum(p[1:], p[0]) for p in zip(*parts))
    return sum(parts[1:], parts[0])


def threaded(method: Callable[..., Array]) -> Callable[..., Array]:
    """Evaluate a manifold method of point or tangent arrays blockwise, over threads, for large
    batches (when the manifold is ``blockwise``)."""
    names = method.__code__.co_varnames[1:method.__code__.co_argcount]

    @wraps(method)
    def wrapper(self, *args: Array, **kwargs: Array) -> Array:
        if kwargs:
            args = args + tuple(kwargs.pop(n) for n in names[len(args):])
        if not self.blockwise:
            return method(self, *args)
        return split_batch(lambda *a: method(self, *a), *args, core_ndim=len(self.point_shape))

    return wrapper

"""Large batches evaluated in blocks, in parallel over threads.

A large batch is cut into blocks of about ``BLOCK_BYTES`` per input, so that the temporaries of
a vectorised formula stay in cache and in memory the allocator reuses (fresh megabyte-sized
temporaries cost a page fault per 4 KiB). The blocks run on a thread pool: NumPy's ufunc loops
and LAPACK release the GIL. ``GEODP_NUM_THREADS`` sets the number of threads (default: the CPUs
this process may use; 1 keeps the blocking but runs it in the calling thread). Calls made from
inside a worker run whole and serially, so nested batched calls never wait on their own pool.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache, wraps

import numpy as np

Array = np.ndarray

MIN_BATCH = 20_000
"""Smallest batch that is cut into blocks: below it, the bookkeeping costs more than it saves."""

BLOCK_BYTES = 3 * 2**19
"""Target size of one block of the largest input (1.5 MiB: a few temporaries fit in cache)."""

_state = threading.local()


def thread_count() -> int:
    """Threads used for large batches: ``GEODP_NUM_THREADS`` or the CPUs available to the process."""
    env = os.environ.get("GEODP_NUM_THREADS")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"GEODP_NUM_THREADS must be a positive integer, got {env!r}")
        return int(env)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@lru_cache(maxsize=4)
def _pool(workers: int, pid: int) -> ThreadPoolExecutor:
    """One pool per thread count and process (a forked child must not reuse its parent's pool,
    whose threads it does not have)."""
    return ThreadPoolExecutor(workers, thread_name_prefix="geodp")


def _run_blocks(task: Callable[[int, int], object], size: int, rows: int) -> list:
    """task(lo, hi) over consecutive blocks of ``rows`` rows covering range(size), in order."""
    bounds = list(range(0, size, max(1, rows))) + [size]
    workers = thread_count()
    if workers < 2 or len(bounds) == 2:
        return [task(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]

    def run(lo: int, hi: int) -> object:
        _state.inside = True
        try:
            return task(lo, hi)
        finally:
            _state.inside = False

    return list(_pool(workers, os.getpid()).map(run, bounds[:-1], bounds[1:]))


def _is_large(count: int, min_batch: int) -> bool:
    return count >= min_batch and not getattr(_state, "inside", False)


def _rows_per_block(row_bytes: int) -> int:
    return max(1, BLOCK_BYTES // max(row_bytes, 1))


def split_batch(fn: Callable[..., Array], *arrays: Array, core_ndim: int,
                min_batch: int = MIN_BATCH) -> Array:
    """fn(*arrays) for arrays of shape (*batch, *core) (core_ndim trailing dimensions, batches
    broadcasting), evaluated on blocks of the longest batch axis and concatenated along it."""
    arrays = tuple(np.asarray(a, dtype=float) for a in arrays)
    batch = np.broadcast_shapes(*(a.shape[:a.ndim - core_ndim] for a in arrays))
    count = int(np.prod(batch, dtype=int))
    if not _is_large(count, min_batch):
        return fn(*arrays)
    axis = int(np.argmax(batch))
    row_bytes = 8 * (count // batch[axis]) * max(int(np.prod(a.shape[a.ndim - core_ndim:])) for a in arrays)

    def task(lo: int, hi: int) -> object:
        parts = []
        for a in arrays:
            own = axis - (len(batch) - (a.ndim - core_ndim))
            keep = own < 0 or a.shape[own] == 1
            parts.append(a if keep else a[(slice(None),) * own + (slice(lo, hi),)])
        return fn(*parts)

    parts = _run_blocks(task, batch[axis], _rows_per_block(row_bytes))
    if isinstance(parts[0], tuple):
        return tuple(np.concatenate(p, axis=axis) for p in zip(*parts))
    return np.concatenate(parts, axis=axis)


def split_sample_sum(fn: Callable[[Array, Array], Array], x: Array, weights: Array,
                     sample_axis: int, min_batch: int = MIN_BATCH) -> Array:
    """sum over blocks of fn(x_block, w_block): x cut along ``sample_axis`` (negative) and weights
    along their last axis, for sums over the sample such as sum_i w_i Log_p(x_i). Data smaller
    than two blocks are summed in one call."""
    x, weights = np.asarray(x, dtype=float), np.asarray(weights, dtype=float)
    count = int(np.prod(x.shape[:x.ndim + sample_axis + 1], dtype=int))
    if not _is_large(count, min_batch) or x.nbytes < 2 * BLOCK_BYTES:
        return fn(x, weights)
    lead = (slice(None),) * (x.ndim + sample_axis)
    size = x.shape[sample_axis]
    parts = _run_blocks(lambda lo, hi: fn(x[lead + (slice(lo, hi),)], weights[..., lo:hi]),
                        size, _rows_per_block(x.nbytes // size))
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

"""Large batches split over threads.

NumPy's ufunc loops and LAPACK release the GIL, so the chunks of one batch run on separate cores.
``GEODP_NUM_THREADS`` sets the number of threads (default: the CPUs this process may use; 1
turns threading off). Calls made from inside a worker run serially, so nested batched calls never
wait on the pool they run in.
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
"""Smallest batch that is split: below it, handing chunks to threads costs more than it saves."""

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


def _run_chunks(task: Callable[[int, int], object], size: int, workers: int) -> list:
    bounds = np.linspace(0, size, workers + 1).astype(int)

    def run(lo: int, hi: int) -> object:
        _state.inside = True
        try:
            return task(lo, hi)
        finally:
            _state.inside = False

    return list(_pool(workers, os.getpid()).map(run, bounds[:-1], bounds[1:]))


def _workers_for(batch_size: int, min_batch: int) -> int:
    if getattr(_state, "inside", False) or batch_size < min_batch:
        return 1
    return thread_count()


def split_batch(fn: Callable[..., Array], *arrays: Array, core_ndim: int,
                min_batch: int = MIN_BATCH) -> Array:
    """fn(*arrays) for arrays of shape (*batch, *core) (core_ndim trailing dimensions, batches
    broadcasting), computed on chunks of the longest batch axis in parallel and concatenated."""
    arrays = tuple(np.asarray(a, dtype=float) for a in arrays)
    batch = np.broadcast_shapes(*(a.shape[:a.ndim - core_ndim] for a in arrays))
    workers = _workers_for(int(np.prod(batch, dtype=int)), min_batch)
    if workers < 2:
        return fn(*arrays)
    axis = int(np.argmax(batch))

    def task(lo: int, hi: int) -> object:
        parts = []
        for a in arrays:
            own = axis - (len(batch) - (a.ndim - core_ndim))
            keep = own < 0 or a.shape[own] == 1
            parts.append(a if keep else a[(slice(None),) * own + (slice(lo, hi),)])
        return fn(*parts)

    parts = _run_chunks(task, batch[axis], workers)
    if isinstance(parts[0], tuple):
        return tuple(np.concatenate(p, axis=axis) for p in zip(*parts))
    return np.concatenate(parts, axis=axis)


def split_sample_sum(fn: Callable[[Array, Array], Array], x: Array, weights: Array,
                     sample_axis: int, min_batch: int = MIN_BATCH) -> Array:
    """sum over chunks of fn(x_chunk, w_chunk): x split along ``sample_axis`` (negative) and
    weights along their last axis, for sums over the sample such as sum_i w_i Log_p(x_i)."""
    x, weights = np.asarray(x, dtype=float), np.asarray(weights, dtype=float)
    workers = _workers_for(int(np.prod(x.shape[:x.ndim + sample_axis + 1], dtype=int)), min_batch)
    if workers < 2:
        return fn(x, weights)
    lead = (slice(None),) * (x.ndim + sample_axis)
    parts = _run_chunks(lambda lo, hi: fn(x[lead + (slice(lo, hi),)], weights[..., lo:hi]),
                        x.shape[sample_axis], workers)
    return sum(parts[1:], parts[0])


def threaded(method: Callable[..., Array]) -> Callable[..., Array]:
    """Split a manifold method of point or tangent arrays over threads for large batches."""
    names = method.__code__.co_varnames[1:method.__code__.co_argcount]

    @wraps(method)
    def wrapper(self, *args: Array, **kwargs: Array) -> Array:
        if kwargs:
            args = args + tuple(kwargs.pop(n) for n in names[len(args):])
        return split_batch(lambda *a: method(self, *a), *args, core_ndim=len(self.point_shape))

    return wrapper

"""A sample of records seen through the sums and maxima an estimator needs: in memory, or chunked
on a Dask cluster.

Estimators touch their data through ``total(kernel)`` (a sum over the records, such as
sum_i w_i Log_m(x_i) and the Fréchet function, computed blockwise by kernel(x_block, w_block)),
``largest(kernel)`` (a maximum over the records) and ``start()`` (a starting point). An
``InMemorySample`` runs the kernels on geodp's thread pool. A ``ChunkedSample`` wraps a
``dask.array.Array`` chunked along the sample axis: each kernel runs on every chunk wherever the
current Dask scheduler puts it (a ``dask.distributed`` client when one is active), and only the
small per-chunk results travel to the client, where they are added (or compared) in a fixed tree
order, so a seeded release does not depend on which worker finished first. Dask is imported only
when a chunked sample is built (``pip install 'geodp[dask]'``).

Warnings a kernel raises in a worker process travel back with its result and are raised again on
the client (``_on_worker``), where the caller's filters and the command line's rule (only warnings
marked ``public`` are printed by default) apply: a worker's own stderr would print every
warning, including those whose raising depends on the records.
"""

from __future__ import annotations

import pickle
import threading
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .manifolds import Manifold
from .manifolds._threads import serial, split_sample_sum
from .manifolds.base import Array

Kernel = Callable[[Array, Array], Any]

__all__ = ["as_sample", "is_chunked", "InMemorySample", "ChunkedSample", "local_cluster",
           "WORKER_ENVIRONMENT"]


def is_chunked(points: object) -> bool:
    """True for a ``dask.array.Array`` (checked without importing Dask).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.chunked import is_chunked
    >>> is_chunked(np.zeros((3, 2)))
    False
    """
    return type(points).__module__.startswith("dask.") and hasattr(points, "to_delayed")


def _dask():
    try:
        import dask
        import dask.array
    except ImportError:
        raise ImportError("chunked data need Dask: pip install 'geodp[dask]'") from None
    return dask


class InMemorySample:
    """Records ``(..., n, *point_shape)`` in one NumPy array, with weights normalised to sum to one;
    leading dimensions are independent samples.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.chunked import InMemorySample
    >>> from geodp.manifolds import Euclidean
    >>> s = InMemorySample(Euclidean(2), np.array([[0.0, 0.0], [2.0, 4.0]]))
    >>> s.total(lambda x, w: w @ x)      # the weighted mean of the records
    array([1., 2.])
    >>> round(float(s.largest(lambda x: np.linalg.norm(x, axis=-1))), 4)
    4.4721
    """

    chunked = False

    def __init__(self, manifold: Manifold, points: Array, weights: Array | None = None,
                 validate: bool = True):
        x = manifold.check_point(points) if validate else np.asarray(points, dtype=float)
        nd = len(manifold.point_shape)
        if x.ndim < nd + 1:
            raise ValueError(f"points must have shape (..., n, {manifold.point_shape}), got {x.shape}")
        self.manifold, self.points = manifold, x
        self.n = x.shape[-nd - 1]
        if self.n == 0:
            raise ValueError("the sample is empty")
        self.batch = x.shape[: x.ndim - nd - 1]
        if weights is None:
            self.weights = np.full(self.batch + (self.n,), 1.0 / self.n)
        else:
            w = np.asarray(weights, dtype=float)
            if w.shape[-1:] != (self.n,):
                raise ValueError(f"weights must hold one weight per record: {self.n} along its "
                                 f"last axis, got shape {w.shape}")
            w = np.broadcast_to(w, self.batch + (self.n,))
            if np.any(w < 0) or not np.all(np.isfinite(w)):
                raise ValueError("weights must be finite and non-negative")
            self.weights = w / w.sum(axis=-1, keepdims=True)

    def total(self, kernel: Kernel) -> Any:
        """sum over blocks of kernel(x_block, w_block) (arrays, or tuples of arrays)."""
        if self.manifold.blockwise:
            return split_sample_sum(kernel, self.points, self.weights,
                                    -len(self.manifold.point_shape) - 1)
        return kernel(self.points, self.weights)

    def largest(self, kernel: Callable[[Array], Array]) -> Array:
        """max over the records of kernel(x) (values of shape (..., n))."""
        return np.max(kernel(self.points), axis=-1)

    def start(self) -> Array:
        """The manifold's starting point for the Karcher iteration on these data."""
        return self.manifold.karcher_start(self.points, self.weights)


PROCESS = uuid.uuid4().hex
"""This process's token: a task running where it differs is in another process (a worker)."""

_recording = threading.local()
_hooking = threading.Lock()


def _portable(message: Warning | str, category: type[Warning]) -> Warning:
    """The warning as an object the client can unpickle; otherwise a ``RuntimeWarning`` with its
    text, which no class marks ``public`` (so the command line keeps it a diagnostic)."""
    warning = message if isinstance(message, Warning) else category(message)
    try:
        pickle.loads(pickle.dumps(warning))
    except Exception:  # noqa: BLE001 - any failure to travel falls back to the plain text
        return RuntimeWarning(f"{category.__name__}: {warning}")
    return warning


def _show_or_record(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` in a worker process: a warning raised by a chunk task on this
    thread joins that task's record (``_on_worker``); any other is shown as it was before."""
    records = getattr(_recording, "records", None)
    if records is None:
        _show_or_record.shown(message, category, filename, lineno, file, line)
    else:
        records.append(_portable(message, category))


def _on_worker(fn: Callable, args: tuple, client: str) -> tuple[Any, list[Warning]]:
    """(fn(*args), the warnings it raised) in another process than the client's (``client``: the
    client's ``PROCESS``), those warnings recorded per thread rather than printed; in the
    client's own process (threads) (fn(*args), []), its warnings raised there as usual.

    A thread-local record behind one hook, not ``warnings.catch_warnings``, which swaps global
    state and would lose warnings between tasks running on several threads of one worker. The
    worker's filters still apply (by default a warning repeated from one line of code is shown,
    and so recorded, once per process)."""
    if client == PROCESS:
        return fn(*args), []
    with _hooking:
        if warnings.showwarning is not _show_or_record:
            _show_or_record.shown = warnings.showwarning
            warnings.showwarning = _show_or_record
    _recording.records = []
    try:
        return fn(*args), _recording.records
    finally:
        _recording.records = None


def _raised_again(caught: list[Warning]) -> None:
    """The warnings workers recorded, raised on the client in the order of the chunks."""
    for warning in caught:
        warnings.warn(warning, stacklevel=3)


def _on_chunk(kernel: Callable, block: Array, weights: Array | float, total_weight: float,
              index: int, first: int, with_position: bool, covariates: Array | None,
              client: str) -> tuple[Any, list[Warning]]:
    """kernel on one chunk, single-threaded (the scheduler runs chunks in parallel): kernel(x, w),
    with the chunk's covariates kernel(x, w, c), ``with_position`` also the chunk's index and
    first record; the weights are normalised by the sample's total. Returns the result and the
    warnings recorded in a worker process (``_on_worker``). A ValueError keeps its type; its
    ``chunk`` and ``records`` (first, last) attributes say where, for the data curator, not its
    message (a position of an offending record is a statistic of the data)."""
    x = np.asarray(block, dtype=float)
    w = (np.full(len(x), weights) if np.ndim(weights) == 0
         else np.asarray(weights, dtype=float)) / total_weight
    args = (x, w) + (() if covariates is None else (np.asarray(covariates, dtype=float),))

    def run() -> Any:
        with serial():
            return kernel(*args, index, first) if with_position else kernel(*args)
    try:
        return _on_worker(run, (), client)
    except ValueError as exc:
        message = f"{exc} (in one chunk: the error's chunk and records say which, for the curator)"
        try:
            named = type(exc)(message)
        except TypeError:
            named = ValueError(message)
        named.chunk, named.records = index, (first, first + len(x) - 1)
        raise named from None


def _add(a: Any, b: Any) -> Any:
    return tuple(np.add(u, v) for u, v in zip(a, b)) if isinstance(a, tuple) else np.add(a, b)


def _combined(combine: Callable, a: tuple[Any, list], b: tuple[Any, list], client: str
              ) -> tuple[Any, list[Warning]]:
    """combine on two (result, warnings) parts: the combined result, and the parts' warnings in
    order followed by any combine raised in a worker process (an overflow of a sum)."""
    value, caught = _on_worker(combine, (a[0], b[0]), client)
    return value, a[1] + b[1] + caught


def _tree(parts: list, combine: Callable) -> Any:
    """Pairwise combination of delayed (result, warnings) parts, in a fixed order."""
    dask = _dask()
    while len(parts) > 1:
        pairs = [dask.delayed(_combined, pure=False)(combine, a, b, PROCESS)
                 for a, b in zip(parts[::2], parts[1::2])]
        parts = pairs + parts[len(parts) - len(parts) % 2:]
    return parts[0]


class ChunkedSample:
    """Records ``(n, *point_shape)`` of a ``dask.array.Array`` chunked along the sample axis (records
    of any shape (n, ...) when ``manifold`` is None, e.g. the rows a DP-RGD loss reads).

    Building one is a distributed pass that checks every chunk lies on the manifold (a ValueError
    names the first bad chunk and its records) and sums the weights; the records stay where they
    are (``validate=False`` skips the check, for callers that check in a pass of their own).
    ``weights`` is None (equal weights) or an array of n non-negative weights; ``covariates``
    (n,), when given, are cut like the records and passed to every kernel as a third argument.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from geodp.chunked import ChunkedSample
    >>> from geodp.manifolds import Euclidean
    >>> x = da.from_array(np.arange(8.0).reshape(4, 2), chunks=(2, 2))
    >>> ChunkedSample(Euclidean(2), x).total(lambda b, w: w @ b)   # the mean, chunk by chunk
    array([3., 4.])
    """

    chunked = True
    batch: tuple[int, ...] = ()

    def __init__(self, manifold: Manifold | None, points: Any, weights: Any = None,
                 validate: bool = True, covariates: Any = None):
        dask = _dask()
        if manifold is not None and (points.ndim != len(manifold.point_shape) + 1
                                     or tuple(points.shape[1:]) != manifold.point_shape):
            raise ValueError(f"chunked points must have shape (n, {manifold.point_shape}) with "
                             f"chunks along the first axis, got {points.shape}")
        if any(len(c) > 1 for c in points.chunks[1:]):
            points = points.rechunk({axis: -1 for axis in range(1, points.ndim)})
        if any(np.isnan(c) for c in points.chunks[0]):
            points = points.compute_chunk_sizes()
        self.manifold, self.points = manifold, points
        self.n = int(points.shape[0])
        if self.n == 0:
            raise ValueError("the sample is empty")
        sizes = points.chunks[0]
        self._first = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        self._blocks = list(points.to_delayed().ravel())
        if weights is None:
            self._weights: list = [1.0] * len(sizes)
        else:
            w = dask.array.asarray(weights).astype(float)
            if w.shape != (self.n,):
                raise ValueError(f"weights must have shape ({self.n},), got {w.shape}")
            self._weights = list(w.rechunk((sizes,)).to_delayed().ravel())
        self._covariates: list = [None] * len(sizes)
        if covariates is not None:
            c = dask.array.asarray(covariates)
            if c.shape != (self.n,):
                raise ValueError(f"covariates must have shape ({self.n},), got {c.shape}")
            self._covariates = list(c.rechunk((sizes,)).to_delayed().ravel())
        self._total_weight = float(self.n) if weights is None else 1.0
        if validate or weights is not None:
            def check(x: Array, w: Array, *covariates: Array) -> Array:
                if validate and manifold is not None:
                    manifold.check_point(x)
                if np.any(w < 0) or not np.all(np.isfinite(w)):
                    raise ValueError("weights must be finite and non-negative")
                return np.sum(w)

            total_weight = float(self.reduce(check, _add))
            if weights is not None:
                if not total_weight > 0:
                    raise ValueError("the weights sum to zero")
                self._total_weight = total_weight

    def reduce(self, kernel: Callable, combine: Callable[[Any, Any], Any],
               with_position: bool = False) -> Any:
        """kernel(x_chunk, w_chunk) on every chunk (kernel(x_chunk, w_chunk, index, first_record)
        ``with_position``), the results combined pairwise by ``combine`` in a fixed tree order,
        computed on the current Dask scheduler; the warnings raised in worker processes are
        raised again here, in the order of the chunks."""
        dask = _dask()
        parts = [dask.delayed(_on_chunk, pure=False)(kernel, block, w, self._total_weight, i, lo,
                                                     with_position, c, PROCESS)
                 for i, (block, w, lo, c) in enumerate(zip(self._blocks, self._weights, self._first,
                                                           self._covariates))]
        value, caught = dask.compute(_tree(parts, combine))[0]
        _raised_again(caught)
        return value

    def total(self, kernel: Kernel) -> Any:
        """sum over chunks of kernel(x_chunk, w_chunk), the weights normalised to sum to one; on
        a ``blockwise`` manifold each chunk is summed in cache-sized blocks, as in memory."""
        if self.manifold is None or not self.manifold.blockwise:
            return self.reduce(kernel, _add)
        axis = -len(self.manifold.point_shape) - 1
        return self.reduce(lambda x, w: split_sample_sum(kernel, x, w, axis), _add)

    def largest(self, kernel: Callable[[Array], Array]) -> Array:
        """max over the records of kernel(x)."""
        return self.reduce(lambda x, w: np.max(kernel(x)), np.maximum)

    def start(self) -> Array:
        """The manifold's Karcher starting point for the first chunk: inside the data's hull, so
        the iteration starts near the mean without a pass over every record."""
        first = np.asarray(self._blocks[0].compute(), dtype=float)
        return self.manifold.karcher_start(first, np.full(len(first), 1.0 / len(first)))

    def map_points(self, fn: Callable[[Array], Array]) -> ChunkedSample:
        """The sample with fn applied to each chunk of records, lazily (e.g. clipping into a ball);
        fn must keep the points on the manifold. In a worker process fn's warnings are dropped,
        not printed (a mapped chunk is an array, with no room to carry them to the client): the
        kernels that read the mapped records raise their own."""
        client = PROCESS
        mapped = self.points.map_blocks(
            lambda x: _on_worker(fn, (np.asarray(x, dtype=float),), client)[0], dtype=float)
        return ChunkedSample(self.manifold, mapped, validate=False)


def as_sample(manifold: Manifold, points: Any, weights: Any = None) -> InMemorySample | ChunkedSample:
    """The sample behind ``points``: a NumPy array (checked on the manifold), a dask array, or a
    sample built already (returned as it is).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.chunked import as_sample
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> sample = as_sample(m, np.repeat(m.random_point(0)[None], 5, axis=0))
    >>> sample.chunked, round(float(sample.total(lambda x, w: np.sum(w))), 6)   # weights sum to one
    (False, 1.0)
    """
    if isinstance(points, (InMemorySample, ChunkedSample)):
        return points
    if is_chunked(points):
        return ChunkedSample(manifold, points, weights)
    return InMemorySample(manifold, points, weights)


WORKER_ENVIRONMENT = {"MALLOC_TRIM_THRESHOLD_": 2**28, "MALLOC_MMAP_THRESHOLD_": 2**25}
"""glibc settings for Dask worker processes. dask.distributed sets ``MALLOC_TRIM_THRESHOLD_`` to
64 KiB, which also fixes the mmap threshold at 128 KiB: every block temporary of a batched
kernel is then a fresh mapping that page-faults on first touch, and the workers spend most of
their time in the kernel (measured: 2.2x slower passes on S^2). Start your own workers with
these variables set to get the speed of ``local_cluster``."""


def local_cluster(workers: int) -> Any:
    """A ``dask.distributed`` LocalCluster of ``workers`` processes, one thread each, with
    ``WORKER_ENVIRONMENT``, quiet logs and no dashboard (use as a context manager).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.chunked import local_cluster
    >>> cluster = local_cluster(2)          # two worker processes  # doctest: +SKIP
    """
    import logging

    dask = _dask()
    from distributed import LocalCluster

    environment = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in WORKER_ENVIRONMENT.items()}
    with dask.config.set(environment):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            dashboard_address=None, silence_logs=logging.CRITICAL)

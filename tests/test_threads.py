"""Batches split over threads give the results of one serial call."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
from conftest import base_point

from geodp.manifolds import SPD, Hyperbolic, KendallShape, Sphere
from geodp.manifolds import _threads
from geodp.statistics import frechet_mean

N = 7 * (_threads.MIN_BATCH // 7 + 1)


def serial(fn):
    """fn() with every batch evaluated whole, in the calling thread."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_threads, "_is_large", lambda *args: False)
        return fn()


@pytest.mark.parametrize("manifold", [Sphere(2), Hyperbolic(3), KendallShape(5), SPD(2), SPD(4),
                                      SPD(3, metric="log-euclidean")], ids=repr)
def test_split_methods_equal_serial_calls(manifold, monkeypatch):
    monkeypatch.setattr(_threads, "thread_count", lambda: 3)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 0)
    monkeypatch.setattr(_threads, "BLOCK_BYTES", 2**16)
    rng = np.random.default_rng(0)
    c = base_point(manifold)
    p = manifold.random_ball(c, 0.5, N, rng)
    q = manifold.random_ball(c, 0.5, N, rng)
    v = manifold.log(p, q)
    for name, args in [("exp", (p, v)), ("log", (p, q)), ("dist", (p, q)), ("log", (c, q)),
                       ("dist", (p.reshape((7, -1) + manifold.point_shape), c))]:
        method = getattr(manifold, name)
        threaded = method(*args)
        assert np.array_equal(threaded, serial(lambda: method(*args))), name
    assert np.array_equal(manifold.exp(p=p, v=v), manifold.exp(p, v))


def test_blocks_are_equal_and_as_many_as_a_multiple_of_the_cpus(monkeypatch):
    """Three blocks on two threads would leave one idle for a third of the call."""
    monkeypatch.setattr(_threads, "thread_count", lambda: 2)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 0)
    for size, row_bytes in ((20_000, 200), (10_000, 512), (10_001, 512), (2_000, 6272), (300, 800)):
        sizes = _threads._run_blocks(lambda lo, hi: hi - lo, size, row_bytes)
        assert sum(sizes) == size and len(sizes) % 2 == 0, (size, sizes)
        assert max(sizes) - min(sizes) < len(sizes) and max(sizes) * row_bytes <= _threads.BLOCK_BYTES


def test_split_sample_sum_matches_one_pass(monkeypatch):
    monkeypatch.setattr(_threads, "thread_count", lambda: 4)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 0)
    monkeypatch.setattr(_threads, "BLOCK_BYTES", 2**16)
    rng = np.random.default_rng(1)
    m = Sphere(3)
    x = m.random_ball(m.project(np.ones(4)), 0.6, (2, N), rng)
    res = frechet_mean(m, x)
    ref = serial(lambda: frechet_mean(m, x))
    assert np.allclose(res.mean, ref.mean, atol=1e-14) and res.iterations == ref.iterations
    calls = []
    total = _threads.split_sample_sum(lambda xs, ws: calls.append(len(ws[0])) or ws.sum(-1), x[..., 0],
                                      np.ones((2, N)), -1)
    # at most 2**16 bytes of 2 x 8-byte entries per block: 5 blocks, rounded up to 8 (a multiple of
    # the 4 CPUs) equal ones
    rows = -(-N // 8)
    assert N > 4 * 2**16 // 16 and calls == [min(rows, N - lo) for lo in range(0, N, rows)]
    assert len(calls) == 8 and np.array_equal(total, [N, N])
    calls.clear()
    _threads.split_sample_sum(lambda xs, ws: calls.append(len(ws[0])) or ws.sum(-1), x[:, :500, 0],
                              np.ones((2, 500)), -1)
    assert calls == [500], "data not worth splitting are summed in one call"
    calls.clear()
    heavy = np.ones((2, 500, 5, 5))  # rows of 200 bytes: an eigendecomposition each
    _threads.split_sample_sum(lambda xs, ws: calls.append(len(ws[0])) or ws.sum(-1), heavy,
                              np.ones((2, 500)), -3, min_batch=10)
    assert calls == [125] * 4, "heavy rows worth splitting, fewer than a block: a share per thread"
    calls.clear()
    _threads.split_sample_sum(lambda xs, ws: calls.append(len(ws[0])) or ws.sum(-1), x[:, :500, 0],
                              np.ones((2, 500)), -1, min_batch=10)
    assert calls == [500], "light rows below two blocks are summed in one call"


def test_sums_are_bit_identical_under_any_load(monkeypatch):
    """The blocks of a sum do not depend on how busy the machine is, so a seeded release is
    reproducible to the last bit (the number of threads running them may change)."""
    monkeypatch.delenv("GEODP_NUM_THREADS", raising=False)
    monkeypatch.setattr(_threads, "thread_count", lambda: 4)
    rng = np.random.default_rng(3)
    m = SPD(5)
    x = m.random_ball(np.eye(5), 1.0, 700, rng)
    sums = []
    for busy in (0, 1, 2, 3):
        monkeypatch.setattr(_threads, "_busy_elsewhere", lambda busy=busy: busy)
        sums.append(_threads.split_sample_sum(lambda xs, ws: m.log(np.eye(5), xs).sum(0), x,
                                              np.ones(700), -3, min_batch=10))
    assert all(np.array_equal(s, sums[0]) for s in sums)


def test_thread_count_setting(monkeypatch):
    monkeypatch.setenv("GEODP_NUM_THREADS", "3")
    assert _threads.thread_count() == 3
    monkeypatch.setenv("GEODP_NUM_THREADS", "0")
    with pytest.raises(ValueError, match="GEODP_NUM_THREADS"):
        _threads.thread_count()


def test_forked_child_uses_its_own_pool(monkeypatch):
    """A process forked after the pool started still splits batches (and does not hang)."""
    import multiprocessing

    monkeypatch.setattr(_threads, "thread_count", lambda: 2)
    m = Sphere(2)
    p = m.random_ball(m.project(np.ones(3)), 0.5, N, np.random.default_rng(2))
    expected = m.dist(p, p[::-1])
    with multiprocessing.get_context("fork").Pool(1) as pool:
        result = pool.apply_async(m.dist, (p, p[::-1])).get(timeout=60)
    assert np.array_equal(result, expected)


def test_pool_keeps_every_cpu_and_blas_keeps_to_the_free_ones(monkeypatch):
    """The pool keeps every CPU however busy the machine (the scheduler shares per thread);
    BLAS outside the pool keeps to the CPUs other tasks leave, at least one."""
    monkeypatch.delenv("GEODP_NUM_THREADS", raising=False)
    monkeypatch.setattr(_threads, "thread_count", lambda: 4)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 6)
    assert _threads._budget() == (4, 1)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 1)
    assert _threads._budget() == (4, 3)
    monkeypatch.undo()
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 3)
    monkeypatch.setenv("GEODP_NUM_THREADS", "2")  # an explicit setting is obeyed
    assert _threads._budget()[0] == 2
    assert _threads._busy_elsewhere() >= 0


def test_serial_blocks_hold_blas_to_one_thread(monkeypatch):
    """Inside ``serial`` (tasks of a Dask scheduler, already parallel) the blocks run in the
    calling thread and BLAS is held to one thread however idle the machine is."""
    monkeypatch.delenv("GEODP_NUM_THREADS", raising=False)
    monkeypatch.setattr(_threads, "thread_count", lambda: 4)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 0)
    limits = []
    monkeypatch.setattr(_threads, "_blas_limited", lambda k: limits.append(k) or nullcontext())
    with _threads.serial():
        assert _threads._budget() == (1, 1)
        _threads._run_blocks(lambda lo, hi: hi - lo, 10, 2**30)
    assert limits == [1]


def test_large_matrices_are_split_by_bytes(monkeypatch):
    monkeypatch.setattr(_threads, "thread_count", lambda: 2)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 0)
    m = SPD(28)
    x = m.exp(np.eye(28), 0.01 * np.random.default_rng(3).normal(size=(400, 28, 28)))
    calls = []
    _threads.split_batch(lambda a: calls.append(len(a)) or a, x, core_ndim=2)
    assert len(calls) > 1 and sum(calls) == 400


def test_spd4_rows_count_as_heavy(monkeypatch):
    """SPD(4) rows (128 bytes) cost an eigendecomposition each: MIN_BYTES of them are split over
    the threads, one row fewer and as many light 3-vectors are not (the size sweep against
    pyRiemann found 10^4 SPD(4) log maps on one thread, 0.88x its speed; split, 1.7x)."""
    monkeypatch.setattr(_threads, "thread_count", lambda: 2)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 0)
    rows = _threads.MIN_BYTES // 128
    for batch, core_ndim, parts in [((rows, 4, 4), 2, [rows // 2, rows - rows // 2]),
                                    ((rows - 1, 4, 4), 2, [rows - 1]), ((rows, 3), 1, [rows])]:
        calls = []
        _threads.split_batch(lambda a: calls.append(len(a)) or a, np.zeros(batch), core_ndim=core_ndim)
        assert calls == parts, batch


def test_one_look_at_the_load_stands_for_load_ttl(monkeypatch):
    """Reading the load costs 10-100 us (a share of a small batch's time): within LOAD_TTL the
    last reading is reused."""
    looks = []

    def spy(path, *args, **kwargs):
        looks.append(path)
        return open(path, *args, **kwargs)

    monkeypatch.setattr(_threads, "open", spy, raising=False)
    monkeypatch.setattr(_threads, "_last_look", [-1.0, 0])
    monkeypatch.setattr(_threads, "LOAD_TTL", 60.0)
    _threads._busy_elsewhere()
    _threads._busy_elsewhere()
    assert looks.count("/proc/loadavg") == 1
    monkeypatch.setattr(_threads, "LOAD_TTL", 0.0)
    _threads._busy_elsewhere()
    assert looks.count("/proc/loadavg") == 2


def test_map_parts_nested_in_a_worker_runs_serially(monkeypatch):
    """Issue 31: map_parts called from inside a pool worker waited on a pool thread busy with the
    enclosing call (a deadlock on two CPUs); nested calls now run their blocks in the worker."""
    import threading

    monkeypatch.setattr(_threads, "thread_count", lambda: 2)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 0)
    out = []

    def job():
        out.append(_threads.map_parts(
            lambda i: sum(_threads.map_parts(lambda j: i * j, [1, 2, 3])), [0, 1, 2, 3]))

    runner = threading.Thread(target=job, daemon=True)
    runner.start()
    runner.join(30)
    assert out == [[0, 6, 12, 18]]
    calls = []
    blocks = _threads.map_blocks(lambda lo, hi: calls.append(hi - lo) or hi - lo, 10_000, 512)
    assert sum(blocks) == 10_000 and len(blocks) == len(calls) > 1
    assert _threads.map_blocks(lambda lo, hi: (lo, hi), 100, 512) == [(0, 100)]


@pytest.mark.parametrize("threads", [1, 2])
def test_split_batch_joins_like_concatenate(threads, monkeypatch):
    """Blocks placed into the outputs by their threads give np.concatenate's result: arrays,
    tuples (the eigenvalues and vectors of a batch), along a later batch axis, and blocks whose
    results do not fit the outputs (another dtype) joined with those that do."""
    monkeypatch.setenv("GEODP_NUM_THREADS", str(threads))
    monkeypatch.setattr(_threads, "BLOCK_BYTES", 2**12)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 500, 4, 4))
    x = x + np.swapaxes(x, -1, -2)
    for fn in (np.linalg.eigvalsh, np.linalg.eigh, lambda a: (a[..., 0], a.sum(axis=(-2, -1)))):
        split = _threads.split_batch(fn, x, core_ndim=2, min_batch=100)
        whole = fn(x)
        assert isinstance(split, tuple) == isinstance(whole, tuple)
        for s, w in zip(*((split, whole) if isinstance(whole, tuple) else ((split,), (whole,)))):
            assert s.dtype == w.dtype and np.array_equal(s, w)
    mixed = _threads.split_batch(lambda a: a[..., 0, 0].astype(np.float32 if a[0, 0, 0, 0] > 0 else float),
                                 x, core_ndim=2, min_batch=100)
    rows = -(-500 // _threads.block_count(500, 2**12 // (3 * 128)))  # as _run_blocks cuts them
    blocks = list(range(0, 500, rows)) + [500]
    assert len(blocks) > 3
    expected = np.concatenate([x[:, lo:hi, 0, 0].astype(np.float32 if x[0, lo, 0, 0] > 0 else float)
                               for lo, hi in zip(blocks[:-1], blocks[1:])], axis=1)
    assert mixed.dtype == expected.dtype and np.array_equal(mixed, expected)

"""Differentially private Riemannian (stochastic) gradient descent.

Algorithm 1 of Han, Mishra, Jawanpuria & Gao (DP Riemannian optimisation), made sound and tight:

- each per-sample Riemannian gradient is clipped to norm ``clip`` in the metric at w_t (or the
  caller states the geodesic Lipschitz bound L0 of the paper, checked at every step and recorded
  as an assumption), so the sum over a batch has sensitivity clip (add/remove one record, Poisson
  sampling) or 2 clip (replace one record, sampling without replacement);
- the sum gets tangent-space Gaussian noise N_w(0, (z * sensitivity)^2) drawn exactly in
  orthonormal coordinates (``TangentGaussian``), and w_{t+1} = Exp_{w_t}(-eta_t zeta_t) with
  zeta_t = (sum + noise) / b, b the expected batch size;
- the noise multiplier z is the smallest for which the T steps are (epsilon, delta)-DP by the
  accountant (PLD for Poisson sampling, RDP for sampling without replacement, the exact Gaussian
  composition for full batches), not the paper's sigma^2 = c T log(1/delta) L0^2 / (n^2 eps^2),
  whose constant c is not given (its experiments take c = 1, which does not give the guarantee).
  Both are reported.

Outputs (Algorithm 1): ``"last"`` w_T (output 1), ``"random"`` an iterate drawn uniformly from
w_0 .. w_{T-1} (output 2), ``"average"`` the geodesic running mean of Theorem 2
(wbar_{t+1} = Exp_{wbar_t}(Log_{wbar_t}(w_{t+1}) / (t + 1))) and ``"weighted-average"`` that of
Theorem 3 (weight 2/(t + 1)). All are post-processing of the private trajectory.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array, as_generator, represents_distance
from ..mechanisms.tangent_gaussian import TangentGaussian
from ..privacy import BudgetLedger, SubsampledGaussian, gdp_mu, noise_multiplier_for
from ..privacy.conversions import check_count, check_delta, check_positive
from ..progress import bar
from ..chunked import ChunkedSample, is_chunked
from .data_ball import check_representable, into_ball
from .release import Release, reserved

OUTPUTS = ("last", "random", "average", "weighted-average")
SAMPLINGS = ("poisson", "without_replacement")


class LipschitzViolation(ValueError):
    """A per-sample gradient exceeded the geodesic Lipschitz bound the caller stated."""


def clipped_sum(manifold: Manifold, w: Array, g: Array, bound: float,
                lipschitz: bool = False) -> tuple[Array, int]:
    """(sum_i g_i with each g_i scaled to norm <= bound in the metric at w, number scaled).

    Adding or removing a record changes the sum by one clipped gradient, of norm <= bound;
    replacing one changes it by at most 2 bound. With ``lipschitz=True`` nothing is scaled: a
    gradient above the stated bound raises ``LipschitzViolation``.
    """
    norms = manifold.norm(w, g)
    if not np.all(np.isfinite(norms)):
        raise ValueError("per_sample_grad returned non-finite gradients")
    over = norms > bound * (1 + 1e-9 if lipschitz else 1.0)
    if lipschitz:
        if np.any(over):
            raise LipschitzViolation(
                f"a per-record gradient has norm {float(np.max(norms)):.6g} > lipschitz = "
                f"{bound:.6g}: the stated bound is false, so the guarantee would not hold. Nothing "
                f"was released; a ledger keeps the reservation (the failure depends on the data). "
                f"Use clip= for a guarantee whatever the data")
        return g.sum(axis=0), 0
    scale = np.where(over, bound / np.where(over, norms, 1.0), 1.0)
    return (g * scale.reshape(scale.shape + (1,) * len(manifold.point_shape))).sum(axis=0), int(over.sum())


def _chunked_batch_sum(data: ChunkedSample, w: Array, step_gradients: Callable, rate: float,
                       replace_one: bool, batch_size: int | None, rng: np.random.Generator
                       ) -> tuple[Array, int]:
    """One step's clipped gradient sum over a chunked sample, as one distributed reduction.

    The batch is drawn from the client's generator alone: without replacement, the client draws
    the batch_size indices; with Poisson sampling, it draws one 63-bit entropy per step and chunk
    i selects its records by Bernoulli(rate) draws from SeedSequence(entropy, spawn_key=(i,)),
    so the selection is a function of the seed and the chunking, not of the workers' schedule.
    """
    if rate == 1.0:
        return data.total(lambda xs, ws: step_gradients(w, xs))
    if replace_one:
        chosen = np.sort(rng.choice(data.n, size=int(batch_size), replace=False))

        def kernel(xs, ws, index, first):
            lo, hi = np.searchsorted(chosen, [first, first + len(xs)])
            return step_gradients(w, xs[chosen[lo:hi] - first])
    else:
        entropy = int(rng.integers(2**63))

        def kernel(xs, ws, index, first):
            picker = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(index,)))
            return step_gradients(w, xs[picker.random(len(xs)) < rate])

    return data.reduce(kernel, lambda a, b: (a[0] + b[0], a[1] + b[1]), with_position=True)


def paper_sigma(steps: int, delta: float, lipschitz: float, n: int, epsilon: float,
                c: float = 1.0) -> float:
    """sigma = sqrt(c T log(1/delta)) L0 / (n epsilon), Algorithm 1 line 4 of the paper (noise on the
    averaged gradient), with c = 1 as in its experiments: shown for comparison only."""
    return math.sqrt(c * steps * math.log(1.0 / delta)) * lipschitz / (n * epsilon)


def _noise_multiplier(epsilon: float, delta: float, rate: float, steps: int, sampling: str) -> float:
    if rate == 1.0:
        # T full-batch Gaussian steps are sqrt(T)/z-GDP: the exact composition (moved up a few
        # ulps until the round trip through sqrt(T)/z confirms it)
        z = math.sqrt(steps) / gdp_mu(epsilon, delta)
        while SubsampledGaussian(z, 1.0, steps).to_approx(delta).epsilon > epsilon:
            z = math.nextafter(z, math.inf)
        return z
    accountant = "pld" if sampling == "poisson" else "rdp"
    return noise_multiplier_for(epsilon, delta, rate, steps, sampling, accountant=accountant)


def _check_steps_representable(manifold: Manifold, domain: tuple[Array, float], step: float) -> None:
    """Refuse, before any budget is reserved, noise so large that one step from the ball, of
    length up to ``step`` (the clipped gradient sum plus noise beyond which a tangent Gaussian
    falls with probability below 1e-14, sqrt(d) + 8 standard deviations, times the learning
    rate), leaves what double precision represents: the iterate would overflow."""
    center, radius = domain
    if not represents_distance(manifold, center, radius + step):
        raise ValueError(f"noise at this scale moves the iterates by up to {step:.3g} per step, beyond "
                         f"what double precision represents on {manifold!r} from a ball of radius "
                         f"{radius:g}; the guarantee this scale buys is negligible: use a larger "
                         f"privacy budget, more records, fewer steps or a smaller learning rate")


def dp_rsgd(manifold: Manifold, per_sample_grad: Callable[[Array, Array], Array], data: Array,
            epsilon: float, delta: float, steps: int, batch_size: int | None = None,
            lr: float | Callable[[int], float] = 0.1, init: Array | None = None,
            clip: float | None = None, output: str = "last", sampling: str = "poisson",
            rng: np.random.Generator | int | None = None, *, lipschitz: float | None = None,
            euclidean_grad: bool = False, loss: Callable[[Array, Array], float] | None = None,
            ledger: BudgetLedger | None = None, progress: bool | None = None,
            label: str = "DP-RGD", domain: tuple[Array, float] | None = None) -> Release:
    """(epsilon, delta)-DP Riemannian (stochastic) gradient descent on ``manifold``.

    Parameters
    ----------
    per_sample_grad : callable(w, batch) -> array (b, *point_shape)
        Riemannian gradients of the per-record losses at w, one per record of ``batch`` (rows of
        ``data``), vectorised; Euclidean gradients with ``euclidean_grad=True`` (converted by
        ``manifold.egrad_to_rgrad``).
    data : array (n, ...)
        The records. n is treated as public. A ``dask.array.Array`` chunked along the first axis
        (or a ``geodp.chunked.ChunkedSample``) works too: each step's gradient sum is then one
        distributed reduction and the batch is drawn chunk-wise (``_chunked_batch_sum``); the
        ``loss`` then receives the ``ChunkedSample``.
    steps, batch_size, sampling
        T steps; ``batch_size=None`` uses every record each step; otherwise ``"poisson"`` draws
        each record with probability batch_size / n (add/remove neighbours), and
        ``"without_replacement"`` draws exactly batch_size records (replace-one neighbours).
    lr : float or callable(t) -> float
        Step size eta_t.
    init : point
        The public starting point w_0 (it must not depend on the data).
    clip, lipschitz
        Exactly one: clip each gradient to this norm (the guarantee then holds for any data), or
        the geodesic Lipschitz bound L0 of every per-record loss (the paper's route; a gradient
        above it raises ``LipschitzViolation``).
    output : "last" | "random" | "average" | "weighted-average"
    loss : callable(w, data) -> float, optional
        Records the full-data loss at every iterate: a non-private diagnostic.
    ledger : BudgetLedger, optional
        The guarantee is reserved before any randomness is drawn.
    domain : (center, radius), optional
        A public geodesic ball: every iterate is moved back onto it after its noisy step (the
        projected variant; post-processing, so the guarantee is unchanged), which keeps the
        iterates where the losses' gradient bounds hold.
    progress : bool, optional
        A progress bar over the steps on stderr (default: ``geodp.progress.showing``).

    Returns
    -------
    Release with ``guarantee`` a ``SubsampledGaussian`` (noise multiplier, sample rate, steps),
    ``sensitivity`` of the per-step gradient sum and ``scale`` the noise standard deviation on it.

    Raises
    ------
    ValueError for invalid parameters, ``LipschitzViolation``, ``BudgetExceededError``.

    Example
    -------
    >>> from geodp.manifolds import Sphere
    >>> z = np.random.default_rng(0).normal(size=(500, 3))
    >>> grad = lambda w, b: -2 * (b @ w)[:, None] * (b - (b @ w)[:, None] * w)
    >>> rel = dp_rsgd(Sphere(2), grad, z, 1.0, 1e-5, steps=20, init=np.eye(3)[0], clip=5.0, rng=0)
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta(delta)
    steps = check_count("steps", steps, 1)
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    if (clip is None) == (lipschitz is None):
        raise ValueError("give exactly one of clip (per-sample clipping norm) and lipschitz (a "
                         "proven geodesic Lipschitz bound L0 of every per-record loss)")
    bound = check_positive("clip" if clip is not None else "lipschitz",
                           clip if clip is not None else lipschitz)
    if init is None:
        raise ValueError("init is required: a public starting point that does not depend on the data")
    w = manifold.check_point(init)
    if w.shape != manifold.point_shape:
        raise ValueError(f"init must be one point of shape {manifold.point_shape}, got {w.shape}")
    if domain is not None:
        domain = (manifold.check_point(domain[0]), check_positive("domain radius", domain[1]))
        check_representable(manifold, *domain)
    if is_chunked(data):
        data = ChunkedSample(None, data, validate=False)
    if not isinstance(data, ChunkedSample):
        data = np.asarray(data)
    n = data.n if isinstance(data, ChunkedSample) else len(data)
    if n == 0:
        raise ValueError("data is empty")
    if batch_size is None:
        rate, expected = 1.0, float(n)
    else:
        if isinstance(batch_size, bool) or int(batch_size) != batch_size or not 1 <= batch_size <= n:
            raise ValueError(f"batch_size must be an integer in 1..n = {n}, got {batch_size!r}")
        rate, expected = batch_size / n, float(batch_size)
    replace_one = sampling == "without_replacement" and rate < 1.0
    sensitivity = (2.0 if replace_one else 1.0) * bound
    z = _noise_multiplier(epsilon, delta, rate, steps, sampling)
    sigma = z * sensitivity
    guarantee = SubsampledGaussian(z, rate, steps, sampling if rate < 1.0 else "poisson")
    schedule = lr if callable(lr) else (lambda t, lr=check_positive("lr", lr): lr)
    if domain is not None:
        _check_steps_representable(manifold, domain, max(abs(float(schedule(t))) for t in range(steps))
                                   * (bound * expected + sigma * (np.sqrt(manifold.dim) + 8.0)) / expected)
    def step_gradients(w: Array, batch: Array) -> tuple[Array, int]:
        """The clipped sum of the batch's per-record gradients at w, and how many were clipped."""
        if not len(batch):
            return np.zeros(manifold.point_shape), 0
        g = np.asarray(per_sample_grad(w, batch), dtype=float)
        expected_shape = (len(batch),) + manifold.point_shape
        if g.shape != expected_shape:
            raise ValueError(f"per_sample_grad must return shape {expected_shape} (one "
                             f"gradient per record), got {g.shape}")
        if euclidean_grad:
            g = manifold.egrad_to_rgrad(w, g)
        return clipped_sum(manifold, w, g, bound, lipschitz is not None)

    with reserved(ledger, guarantee, f"{label} ({guarantee.describe()})"), \
            bar(steps, label, progress) as meter:
        rng = as_generator(rng)
        noise = TangentGaussian(manifold, sigma)
        pick = int(rng.integers(steps)) if output == "random" else -1
        chosen, average = (w if pick == 0 else None), None
        trace = [] if loss is not None else None
        clipped_total = 0
        for t in range(steps):
            if trace is not None:
                trace.append(float(loss(w, data)))
            if isinstance(data, ChunkedSample):
                total, clipped = _chunked_batch_sum(data, w, step_gradients, rate, replace_one,
                                                    batch_size, rng)
            else:
                if rate == 1.0:
                    batch = data
                elif replace_one:
                    batch = data[rng.choice(n, size=int(batch_size), replace=False)]
                else:
                    batch = data[rng.random(n) < rate]
                total, clipped = step_gradients(w, batch)
            clipped_total += clipped
            zeta = (total + noise.sample(w, rng=rng)) / expected
            w = manifold.exp(w, -schedule(t) * zeta)
            if domain is not None:
                w = into_ball(manifold, w, *domain)[0]
            if t + 1 == pick:
                chosen = w
            if output in ("average", "weighted-average"):
                weight = (1.0 if output == "average" else 2.0) / (t + 1)
                average = w if average is None else manifold.exp(
                    average, min(weight, 1.0) * manifold.log(average, w))
            meter.update(1)
    value = {"last": w, "random": chosen, "average": average, "weighted-average": average}[output]
    diagnostics = {
        "n": n, "steps": steps, "sample_rate": rate, "sampling": sampling if rate < 1.0 else "full batch",
        "neighbouring": "replace one record" if replace_one else "add or remove one record",
        "noise_multiplier": z, "sigma_sum": sigma, "sigma_mean": sigma / expected,
        "accountant": "exact Gaussian (GDP)" if rate == 1.0 else ("PLD" if sampling == "poisson" else "RDP"),
        "output": output,
        "paper_sigma_mean": paper_sigma(steps, delta, bound, n, epsilon),
        "paper_sigma_note": "Algorithm 1's sigma with c = 1 as in the paper's experiments, on the "
                            "averaged gradient; c is unspecified there, so it carries no guarantee",
    }
    if clip is not None:
        diagnostics.update(clip=bound, clipped_gradients=int(clipped_total))
    else:
        diagnostics["assumption"] = (f"every per-record loss is geodesically {bound:.6g}-Lipschitz "
                                     f"(stated by the caller; checked at every step)")
    if trace is not None:
        diagnostics["non_private"] = {"loss_trace": trace,
                                      "note": "full-data losses: not private, for diagnosis only"}
    return Release(value=value, guarantee=guarantee, sensitivity=sensitivity, scale=sigma,
                   mechanism="DP Riemannian gradient descent (Han et al., Algorithm 1)",
                   exact_sampler=True, diagnostics=diagnostics,
                   equivalent={f"delta={delta:g}": guarantee.to_approx(delta).describe()})

"""Metropolis-Hastings for laws on a geodesic ball of affine-invariant SPD(n), in polar coordinates
at the ball's center.

Polar coordinates at the center c = L L^T: x = (L V) diag(e^r) (L V)^T with V orthogonal and r
in R^n, so that rho(c, x) = |r|. The Riemannian volume is prod_{i<j} sinh(|r_i - r_j| / 2) dr dV
up to a constant, dV the Haar measure (Terras, Harmonic Analysis on Symmetric Spaces II, 1.2;
the decomposition behind ``spd_laplace``). The Riemannian Laplace centred at c and restricted to
B_R(c) (density proportional to exp(-rho(c, x) / s) there) is therefore the law Q of V Haar,
independent of r with density

    f(r) proportional to exp(-|r| / s) prod_{i<j} sinh((r_i - r_j) / 2),   r_1 > ... > r_n, |r| <= R

(the eigenvalues sorted: the same law of x). Q depends on n, s and R only, never on data, and
has no exact sampler once s exceeds the critical scale (``spd_critical_scale``), as on
``connectomes`` (SPD(28), s = 0.41, R = 8.9): there the volume outgrows the Laplace factor and Q
lies against the ball's boundary.

A law pi proportional to w Q (``log_tilt`` = log w; the restricted Laplace at a footpoint m has
log w(x) = -(rho(m, x) - rho(c, x)) / s) is drawn by chains each of whose steps makes two
Metropolis-Hastings moves with proposals reversible for Q, accepted with probability
min(1, w(x') / w(x)): with a proposal reversible for Q, that acceptance gives detailed balance
for w Q (Tierney 1994, Section 2.3.1; the construction of preconditioned Crank-Nicolson, whose
proposal is reversible for a Gaussian prior). First r' from a kernel K reversible for f, the
frame V kept; then V' with r kept, with probability 1/2 fresh from the Haar law, else Q V with
Q the Cayley transform of a small random skew matrix (Q and Q^-1 equally likely; the Haar law is
invariant under Q). Where w varies little over the ball, most proposals are accepted (on
``connectomes`` 85%: the data-free law Q already has the right shape, and w tilts mainly the
trace of Log_c x). K, built without the data, moves r in polar coordinates
r = t (sin theta e + cos theta u), e = (1, ..., 1) / sqrt n, u a unit traceless sorted vector, by
a random-scan sweep of three moves, each reversible for the conditional law of its coordinate
under f (so the sweep in either order, picked at random, is reversible for f):

- the radius t = |r|: slice sampling (Neal 2003, stepping out and shrinkage) of
  (n - 1) log t - t / s + P(t cos theta u) on (0, R], P(x) = sum_{i<j} log sinh((x_i - x_j) / 2);
- the angle theta to the trace direction: slice sampling of (n - 2) log cos theta +
  P(t cos theta u) on (-pi/2, pi/2) (the sphere's surface measure is cos^(n-2) theta dtheta du).
  Against the ball's boundary the trace and the traceless part of r are tied (their squared
  norms add to at most R^2), a ridge that a random walk in r crosses only in thousands of steps;
  this move follows it;
- the shape u, given t and theta: density proportional to exp(P(c u)), c = t cos theta, on the
  sorted unit traceless vectors. In log-gap coordinates l_k = log(u_k - u_(k+1)) + lambda, with
  an auxiliary log-scale lambda ~ N(0, 1) drawn afresh (data augmentation), the density is
  smooth and nearly Gaussian (the repulsion of close eigenvalues, a barrier in r, becomes an
  exponential tail), and ``SHAPE_STEPS`` steps of preconditioned MALA (Roberts & Tweedie 1996)
  move it; their preconditioner is the covariance of l in a warm-up run. On ``connectomes``
  (n - 1 = 27 gaps) the extreme eigenvalues decorrelate in about 15 MALA steps, against about
  200 steps of a random walk in r with the covariance of f.

The chains start at the final states of a warm-up of K on f alone, which depends on n, s and R
only, with V drawn from the Haar law: their starts are the same whatever the data. They run
until the rank-normalised split R-hat of every monitored summary is below ``R_HAT_STOP`` and its
bulk ESS at least ``ESS_STOP`` (Vehtari et al. 2021) over the steps kept, checked every
``CHECK_EVERY`` steps, or until ``max_steps``. The first quarter of the steps run (at least
``CHECK_EVERY``) is discarded, not the first half that BDA3 discards by default: the chains start
at draws of Q, which the target only tilts, and a trend left in the kept steps would raise the
split R-hat. The R-hat threshold, not the ESS, decides the length: it needs some 50 effective
draws in each half chain, about 1000 steps on ``connectomes``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..manifolds.base import Array
from ..progress import bar
from .mcmc import MCMCDiagnostics, bulk_ess, rank_r_hat
from .spd_laplace import haar_orthogonal, spd_from_polar

#: Chains run at once (several, for R-hat; more cost little, the arrays being small).
CHAINS = 8
#: MALA steps of the shape move in each sweep of the kernel K on f.
SHAPE_STEPS = 5
#: Sweeps of the data-free warm-up on f, by phase: MALA preconditioned by the identity, then by
#: the covariance of the first phase's log-gaps (its step tuned in both), then frozen.
WARM_UP = (40, 40, 20)
#: Acceptance rate towards which the warm-up tunes the MALA step (Roberts & Rosenthal 1998: 0.574).
MALA_RATE = 0.55
#: Stopping rule: rank-normalised split R-hat below this and bulk ESS at least ``ESS_STOP`` for
#: every monitored summary (Vehtari et al. 2021 recommend 1.01 and 100 per chain for 4 chains).
R_HAT_STOP = 1.01
ESS_STOP = 400.0
#: Chains whose summaries the stopping rule reads (the first ones; all chains are exchangeable,
#: and a run for many draws at once, as an audit makes, need not rank millions of values).
MONITORED = 64
#: Steps between two checks of the stopping rule, and the default most steps.
CHECK_EVERY = 25
MAX_STEPS = 3000
#: The most stepping-out steps of a slice move.
STEP_OUT = 8

Tilt = Callable[[Array, Array], Array]


def _from_gaps(gaps: Array) -> Array:
    """The centred vector with consecutive differences ``gaps`` (rows), decreasing: psi(gaps)."""
    x = np.concatenate([np.zeros((len(gaps), 1)), -np.cumsum(gaps, axis=1)], axis=1)
    return x - x.mean(axis=1, keepdims=True)


def _from_gaps_adjoint(v: Array) -> Array:
    """psi^T v for rows v (k, n): minus the sums of the centred v over entries i > k."""
    tail = np.cumsum((v - v.mean(axis=1, keepdims=True))[:, ::-1], axis=1)[:, ::-1]
    return -tail[:, 1:]


class EigenBallLaw:
    """f(r), the law of the sorted log-eigenvalues r of x relative to the center under Q (see the
    module notes), with an f-reversible kernel (``sweep``) tuned by ``warm_up``.

    Parameters
    ----------
    n : int
        Matrix size (n >= 2).
    scale, radius : float
        s and R of Q.
    """

    def __init__(self, n: int, scale: float, radius: float):
        if n < 2:
            raise ValueError(f"polar chains need n >= 2, got SPD({n})")
        self.n, self.scale, self.radius = int(n), float(scale), float(radius)
        self._i, self._j = np.triu_indices(self.n, 1)
        #: incidence of the pairs: x @ incidence = the differences x_i - x_j, i < j (k, m)
        self._incidence = np.zeros((self.n, len(self._i)))
        self._incidence[self._i, np.arange(len(self._i))] = 1.0
        self._incidence[self._j, np.arange(len(self._i))] = -1.0
        self.trace_direction = np.full(self.n, 1.0 / np.sqrt(self.n))
        self.precondition = np.eye(self.n - 1)  # Cholesky factor of the MALA preconditioner
        self.step = 1.0 / np.sqrt(self.n)
        self.widths = (0.1 * self.radius, 0.2)  # slice widths of t and theta

    # ------------------------------------------------------------------ the density
    def _pairs(self, x: Array, gradient: bool = False) -> Array | tuple[Array, Array]:
        """P(x) = sum_{i<j} log(2 sinh((x_i - x_j) / 2)) for rows x (k, n), -inf unless x is
        strictly decreasing; with ``gradient`` also grad P (k, n), sum_j coth((x_i - x_j) / 2) / 2.
        One exponential and one logarithm per pair: with E = e^(x_j - x_i), log 2 sinh = (x_i - x_j)
        / 2 + log1p(-E) and coth = (1 + E) / (1 - E)."""
        a = x @ self._incidence
        e = np.exp(-a)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.sum(0.5 * a + np.log1p(-e), axis=1)  # NaN where a pair is out of order
            value = np.where(value == value, value, -np.inf)
            if not gradient:
                return value
            return value, (0.5 * (1.0 + e) / (1.0 - e)) @ self._incidence.T

    def log_density(self, r: Array) -> Array:
        """log f(r) + const for rows r (k, n): -inf outside the chamber r_1 > ... > r_n or the ball."""
        t = np.linalg.norm(r, axis=1)
        return np.where(t <= self.radius, self._pairs(r) - t / self.scale, -np.inf)

    def _polar(self, r: Array) -> tuple[Array, Array, Array]:
        """t = |r|, the angle theta to the trace direction and the unit traceless part u."""
        along = r @ self.trace_direction
        u = r - along[:, None] * self.trace_direction
        p = np.linalg.norm(u, axis=1)
        return np.linalg.norm(r, axis=1), np.arctan2(along, p), u / p[:, None]

    def _compose(self, t: Array, theta: Array, u: Array) -> Array:
        return t[:, None] * (np.sin(theta)[:, None] * self.trace_direction
                             + np.cos(theta)[:, None] * u)

    # ------------------------------------------------------------------ the moves
    def _radius_move(self, r: Array, rng: np.random.Generator) -> Array:
        t, theta, u = self._polar(r)
        x = np.cos(theta)[:, None] * u
        n, s = self.n, self.scale

        def log_t(y, rows):
            with np.errstate(divide="ignore", invalid="ignore"):
                out = (n - 1) * np.log(y) - y / s + self._pairs(y[:, None] * x[rows])
            return np.where((y > 0) & (y <= self.radius), out, -np.inf)

        return self._compose(slice_sample(log_t, t, self.widths[0], rng), theta, u)

    def _angle_move(self, r: Array, rng: np.random.Generator) -> Array:
        t, theta, u = self._polar(r)

        def log_theta(y, rows):
            c = np.cos(y)
            with np.errstate(divide="ignore", invalid="ignore"):
                out = (self.n - 2) * np.log(c) + self._pairs((t[rows] * c)[:, None] * u[rows])
            return np.where(np.abs(y) < 0.5 * np.pi, out, -np.inf)

        return self._compose(t, slice_sample(log_theta, theta, self.widths[1], rng), u)

    def _shape_log_density(self, l: Array, c: Array) -> tuple[Array, Array]:
        """Log density (up to a constant) of the log-gaps l (k, n - 1) of the shape law at
        c = t cos theta, and its gradient: P(c u) - lambda^2 / 2 - (n - 1) lambda + sum l, with
        g = e^l, psi(g) = p u and lambda = log p (the Jacobian of l -> (u, lambda) is
        |det psi| prod g / p^(n-1))."""
        gaps = np.exp(l)
        vec = _from_gaps(gaps)
        p = np.linalg.norm(vec, axis=1)
        u, lam = vec / p[:, None], np.log(p)
        pairs, dp = self._pairs(c[:, None] * u, gradient=True)
        value = pairs - 0.5 * lam ** 2 - (self.n - 1) * lam + l.sum(axis=1)
        dp = c[:, None] * dp
        dvec = (dp - np.sum(dp * u, axis=1, keepdims=True) * u
                - (lam + self.n - 1)[:, None] * u) / p[:, None]
        return value, gaps * _from_gaps_adjoint(dvec) + 1.0

    def _shape_move(self, r: Array, rng: np.random.Generator,
                    steps: int = SHAPE_STEPS) -> tuple[Array, Array, float]:
        """MALA on the log-gaps of u at fixed t and theta; returns the states, the final log-gaps
        and the acceptance rate."""
        t, theta, u = self._polar(r)
        c = t * np.cos(theta)
        l = np.log(u[:, :-1] - u[:, 1:]) + rng.standard_normal(len(r))[:, None]
        lp, grad = self._shape_log_density(l, c)
        chol, h = self.precondition, self.step
        accepted = 0
        for _ in range(steps):
            z = rng.standard_normal(l.shape)
            y = l + 0.5 * h * h * (grad @ chol) @ chol.T + h * z @ chol.T
            ly, grad_y = self._shape_log_density(y, c)
            back = np.linalg.solve(chol, (l - y - 0.5 * h * h * (grad_y @ chol) @ chol.T).T).T / h
            with np.errstate(invalid="ignore"):
                ok = np.log(rng.random(len(l))) < ly - lp + 0.5 * (np.sum(z * z, axis=1)
                                                                   - np.sum(back * back, axis=1))
            l, lp = np.where(ok[:, None], y, l), np.where(ok, ly, lp)
            grad = np.where(ok[:, None], grad_y, grad)
            accepted += int(ok.sum())
        vec = _from_gaps(np.exp(l))
        u = vec / np.linalg.norm(vec, axis=1, keepdims=True)
        return self._compose(t, theta, u), l, accepted / (steps * len(r))

    def sweep(self, r: Array, rng: np.random.Generator) -> tuple[Array, Array, float]:
        """One step of K from each row of r (k, n): the radius, angle and shape moves in this
        order or the reverse, with probability 1/2 each (a mixture of a product and its adjoint,
        hence reversible for f). Returns the states, the shape move's log-gaps and its MALA
        acceptance rate."""
        forward = rng.random() < 0.5
        if forward:
            r = self._angle_move(self._radius_move(r, rng), rng)
        if self.n > 2:  # SPD(2) has one unit traceless sorted vector: no shape to move
            r, l, rate = self._shape_move(r, rng)
        else:
            l, rate = np.zeros((len(r), 1)), MALA_RATE
        if not forward:
            r = self._radius_move(self._angle_move(r, rng), rng)
        return r, l, rate

    # ------------------------------------------------------------------ warm-up
    def start(self, chains: int) -> Array:
        """Equally spaced log-eigenvalues at 0.9 R (inside the chamber and the ball)."""
        spaced = np.linspace(1.0, -1.0, self.n)
        return np.tile(0.9 * self.radius * spaced / np.linalg.norm(spaced), (chains, 1))

    def warm_up(self, chains: int, rng: np.random.Generator) -> Array:
        """Run ``chains`` chains of K on f alone (no data) and freeze K: MALA preconditioned by
        the identity, then by the covariance of the first phase's log-gaps, with the slice widths
        set to three standard deviations of its t and theta; the MALA step tuned towards
        ``MALA_RATE`` in both, then a phase with K frozen. Returns the final states (k, n), the
        chains' starts."""
        r = self.start(chains)
        for phase, sweeps in enumerate(WARM_UP):
            states, gaps = [], []
            for _ in range(sweeps):
                r, l, rate = self.sweep(r, rng)
                if phase < len(WARM_UP) - 1:
                    self.step *= np.exp(rate - MALA_RATE)
                states.append(r)
                gaps.append(l)
            if phase == 0:
                self._shape(np.concatenate(states[sweeps // 2:]), np.concatenate(gaps[sweeps // 2:]))
        return r

    def _shape(self, states: Array, gaps: Array) -> None:
        """The MALA preconditioner from log-gaps (rows) and the slice widths from states."""
        if self.n > 2:
            cov = np.cov(gaps, rowvar=False).reshape(self.n - 1, self.n - 1)
            self.precondition = np.linalg.cholesky(cov + 1e-9 * np.trace(cov) * np.eye(self.n - 1))
            self.step = 1.0 / (self.n - 1) ** (1 / 6)
        t, theta, _ = self._polar(states)
        self.widths = (max(3.0 * float(np.std(t)), 1e-9 * self.radius),
                       max(3.0 * float(np.std(theta)), 1e-9))


def slice_sample(log_density: Callable[[Array, Array], Array], x: Array, width: float,
                 rng: np.random.Generator) -> Array:
    """One slice-sampling update of each entry of x (k,) for the densities exp(log_density(y,
    rows)) (row i of the batch at entry i), by stepping out (at most ``STEP_OUT`` widths, the
    budget split at random between the two sides) and shrinkage (Neal 2003, Figures 3 and 5):
    reversible for each density. ``log_density`` must be -inf outside its support."""
    k = len(x)
    every = np.arange(k)
    level = log_density(x, every) + np.log(rng.random(k))
    left = x - width * rng.random(k)
    right = left + width
    budget = np.floor(STEP_OUT * rng.random(k)).astype(int)
    for end, sign, room in ((left, -1.0, budget), (right, 1.0, STEP_OUT - 1 - budget)):
        active = every[room > 0]
        while len(active):
            above = log_density(end[active], active) > level[active]
            active = active[above]
            end[active] += sign * width
            room[active] -= 1
            active = active[room[active] > 0]
    out = x.copy()
    todo = every
    while len(todo):
        y = left[todo] + rng.random(len(todo)) * (right[todo] - left[todo])
        inside = log_density(y, todo) >= level[todo]
        out[todo[inside]] = y[inside]
        miss, y = todo[~inside], y[~inside]
        lower = y < x[miss]
        left[miss[lower]] = y[lower]
        right[miss[~lower]] = y[~lower]
        todo = miss
    return out


def _summaries(r: Array, v: Array, log_w: Array) -> Array:
    """The monitored statistics of the first ``MONITORED`` chains (k, 6): log w, rho(c, x) = |r|,
    the trace of r (log det relative to c), the largest and smallest log-eigenvalue, and the
    first diagonal entry of Log_c x in the center's frame (sum_k V_0k^2 r_k, which moves with V)."""
    r, v, log_w = r[:MONITORED], v[:MONITORED], log_w[:MONITORED]
    first = np.einsum("kj,kj->k", v[:, 0, :] ** 2, r)
    return np.stack([log_w, np.linalg.norm(r, axis=1), r.sum(axis=1), r[:, 0], r[:, -1], first],
                    axis=1)


def ball_chains(center: Array, radius: float, scale: float, log_tilt: Tilt,
                rng: np.random.Generator, size: int = 1, *, chains: int = CHAINS,
                max_steps: int = MAX_STEPS) -> tuple[Array, MCMCDiagnostics]:
    """Approximate draws of pi proportional to w Q on B_radius(center) of affine-invariant SPD(n),
    Q the Riemannian Laplace at ``scale`` centred at ``center`` restricted to the ball and
    log w = ``log_tilt(x, rho(center, x))`` (see the module notes).

    Parameters
    ----------
    center : array (n, n)
        The ball's center (public).
    radius, scale : float
    log_tilt : callable
        ``log_tilt(x, t)`` for points x (k, n, n) at distances t (k,) from the center: log w.
    rng : numpy.random.Generator
    size : int
        Draws returned: the final states of the first ``size`` of max(size, chains) chains.

    Returns
    -------
    draws : array (size, n, n)
    diagnostics : MCMCDiagnostics
        Worst R-hat and bulk ESS over the monitored summaries (``_summaries``), the proposals'
        acceptance rate over the kept steps, the steps discarded (``burn_in``) and kept, the MALA
        step of the shape move (``step_size``); ``trace`` holds log w over the kept steps and
        ``start`` the chains' starting points.
    """
    n = center.shape[-1]
    k = max(int(size), int(chains))
    law = EigenBallLaw(n, scale, radius)
    lower = np.linalg.cholesky(center)
    r = law.warm_up(k, rng)  # no data read so far: the same starts for any data
    v = haar_orthogonal(n, k, rng)
    start = spd_from_polar(lower @ v, r, scale)
    state = [r, v, start, log_tilt(start, np.linalg.norm(r, axis=1))]
    trace, accepted = [_summaries(*state[:2], state[3])], []
    turn = scale / (radius * np.sqrt(n))  # rotations that move log w by about 1
    steps = 0
    with bar(None, f"MCMC ({k} chains, polar coordinates)") as meter:
        while steps < max_steps:
            r2, _, _ = law.sweep(state[0], rng)
            ok_r = _metropolis(state, r2, state[1], lower, scale, log_tilt, rng)
            ok_v = _metropolis(state, state[0], _rotations(state[1], turn, rng), lower, scale,
                               log_tilt, rng)
            steps += 1
            meter.update(1)
            trace.append(_summaries(*state[:2], state[3]))
            accepted.append(np.concatenate([ok_r, ok_v]))
            if (steps % CHECK_EVERY == 0 and steps >= 2 * CHECK_EVERY
                    and _converged(np.stack(trace[_discarded(steps) + 1:]))):
                break
    diag = _diagnose(np.stack(trace[_discarded(steps) + 1:]),
                     np.stack(accepted[_discarded(steps):]), steps)
    diag.step_size, diag.start = float(law.step), start
    return state[2][:size], diag


def _rotations(v: Array, turn: float, rng: np.random.Generator) -> Array:
    """Proposals for the frames v (k, n, n), each reversible for the Haar law: with probability
    1/2 a fresh Haar draw, else Q v with Q the Cayley transform of a skew matrix with N(0, eta^2)
    entries, eta = turn 2^U, U uniform on [-2, 2] (Q and Q^T = Q^-1 equally likely, and the Haar
    law is invariant under Q)."""
    k, n = v.shape[0], v.shape[-1]
    fresh = rng.random(k) < 0.5
    eta = turn * 2.0 ** rng.uniform(-2.0, 2.0, k - int(fresh.sum()))
    a = np.triu(rng.standard_normal((len(eta), n, n)), 1) * eta[:, None, None]
    a = a - np.swapaxes(a, 1, 2)
    eye = np.eye(n)
    out = np.empty_like(v)
    out[fresh] = haar_orthogonal(n, int(fresh.sum()), rng)
    out[~fresh] = np.linalg.solve(eye - 0.5 * a, eye + 0.5 * a) @ v[~fresh]
    return out


def _metropolis(state: list, r2: Array, v2: Array, lower: Array, scale: float, log_tilt: Tilt,
                rng: np.random.Generator) -> Array:
    """One accept step of the chains ``state`` = [r, v, x, log w] (updated in place) towards the
    proposals (r2, v2), drawn from a kernel reversible for Q: accepted with probability
    min(1, w(x2) / w(x)). Returns which chains moved."""
    x2 = spd_from_polar(lower @ v2, r2, scale)
    log_w2 = log_tilt(x2, np.linalg.norm(r2, axis=1))
    ok = np.log(rng.random(len(r2))) < log_w2 - state[3]
    for i, new in enumerate((r2, v2, x2, log_w2)):
        state[i] = np.where(ok.reshape((-1,) + (1,) * (new.ndim - 1)), new, state[i])
    return ok


def _discarded(steps: int) -> int:
    """Steps discarded of the first ``steps``: a quarter, at least ``CHECK_EVERY``."""
    return min(steps - 1, max(CHECK_EVERY, steps // 4))


def _converged(window: Array) -> bool:
    return all(rank_r_hat(window[:, :, j]) < R_HAT_STOP and bulk_ess(window[:, :, j]) >= ESS_STOP
               for j in range(window.shape[2]))


def _diagnose(window: Array, accepted: Array, steps: int) -> MCMCDiagnostics:
    """Diagnostics over the kept window (length, chains, summaries): the worst over summaries."""
    length = window.shape[0]
    enough = length >= 4
    r_hat = max(rank_r_hat(window[:, :, j]) for j in range(window.shape[2])) if enough else np.nan
    ess = min(bulk_ess(window[:, :, j]) for j in range(window.shape[2])) if enough else np.nan
    return MCMCDiagnostics(acceptance_rate=float(accepted.mean()), step_size=float("nan"),
                           burn_in=steps - length, trace_length=length, n_chains=window.shape[1],
                           r_hat=float(r_hat), ess=float(ess), trace=window[:, :, 0])

"""Random-walk Metropolis-Hastings on any manifold of the protocol, many chains at once.

Proposal y = Exp_x(xi), xi ~ N(0, step^2 I) in orthonormal coordinates of T_x, rejected when
|xi| >= inj/2 (a symmetric condition). The proposal density with respect to the Riemannian volume
is phi(xi) / J_x(xi), so the Hastings ratio carries J_x(Log_x y) / J_y(Log_y x) (``volume_density``),
which equals one on symmetric spaces (``Manifold.symmetric_space``: every manifold of geodp), where
it is not computed. The step size is tuned during the first half of the burn-in
towards an acceptance rate of 0.3 and then frozen, so the kept part is a valid MH chain.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..manifolds import Manifold
from ..progress import bar

Array = np.ndarray

#: Iterations between two step-size updates during the first half of the burn-in.
ADAPT_EVERY = 10
#: Fewest chains an approximate release runs, so that split R-hat compares several.
MIN_CHAINS = 4
#: Split R-hat above which approximate draws are flagged (the threshold of Vehtari, Gelman,
#: Simpson, Carpenter & Buerkner 2021, "Rank-normalization, folding and localization").
R_HAT_WARN = 1.01
#: Effective sample size (over the kept steps of all chains) below which approximate draws are
#: flagged: Vehtari et al. (2021) ask for 100 per chain before trusting estimates; a release keeps
#: one state, so 100 in all is asked here, the least for R-hat itself to be read reliably.
ESS_WARN = 100.0
#: How a Python caller opts in to approximate samplers (the CLI spells it ``--allow-approximate``).
OPT_IN = "allow_approximate=True"


class ApproximateSamplerWarning(UserWarning):
    """Draws of an approximate (MCMC) sampler whose diagnostics fail their thresholds.

    A diagnostic: whether it is raised, and its numbers, depend on the data without noise, so
    the command line publishes it only with ``--diagnostics`` (as every warning not marked
    ``public``)."""


class ApproximateSamplerRefused(ValueError):
    """No exact sampler can draw the mechanism's law, and approximate draws were not allowed.

    ``reason`` says why, ``alternatives`` lists exact routes; ``opt_in`` is how the caller allows
    approximate draws (``spelled`` re-words it, e.g. for a command-line flag)."""

    def __init__(self, reason: str, alternatives: Sequence[str], opt_in: str = OPT_IN):
        self.reason, self.alternatives, self.opt_in = reason, tuple(alternatives), opt_in
        super().__init__(
            f"{reason}, so no exact sampler is used. Exact alternatives: "
            f"{'; '.join(self.alternatives)}. Or pass {opt_in} to release the state of "
            f"Metropolis-Hastings chains: epsilon-DP then holds for the target law, and the "
            f"chain's output is only approximately from it")

    def spelled(self, opt_in: str) -> ApproximateSamplerRefused:
        """The same refusal, naming ``opt_in`` as the way to allow approximate draws."""
        return ApproximateSamplerRefused(self.reason, self.alternatives, opt_in)

    def suggesting(self, alternatives: Sequence[str]) -> ApproximateSamplerRefused:
        """The same refusal with other exact alternatives (those of a caller's own parameters)."""
        return ApproximateSamplerRefused(self.reason, alternatives, self.opt_in)


@dataclass
class MCMCDiagnostics:
    """Convergence diagnostics of a multi-chain run, on the trace of a scalar summary (R-hat also
    on further coordinates, where the sampler gives them)."""

    acceptance_rate: float
    step_size: float
    burn_in: int
    trace_length: int
    n_chains: int
    r_hat: float
    ess: float
    #: the summary at every kept step, (trace_length, n_chains), or (trace_length, n_chains, q)
    #: with the coordinates after it; not part of ``as_dict``
    trace: Array | None = field(default=None, repr=False)
    #: the chains' starting points, set by samplers that draw them from a data-independent law;
    #: not part of ``as_dict``
    start: Array | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("trace", "start")}


@contextmanager
def exact_alternatives(*alternatives: str) -> Iterator[None]:
    """Re-raise an ``ApproximateSamplerRefused`` of the block with a caller's own exact
    ``alternatives`` (phrased in its parameters) in place of the sampler's."""
    try:
        yield
    except ApproximateSamplerRefused as exc:
        raise exc.suggesting(alternatives) from None


def warn_unless_converged(diag: MCMCDiagnostics, what: str, stacklevel: int = 3) -> bool:
    """Issue an ``ApproximateSamplerWarning`` when split R-hat exceeds ``R_HAT_WARN`` (or cannot
    be computed) or the ESS is below ``ESS_WARN``; returns whether it warned."""
    if diag.r_hat <= R_HAT_WARN and diag.ess >= ESS_WARN:
        return False
    warnings.warn(f"{what} fail their convergence checks (split R-hat at most {R_HAT_WARN}, ESS "
                  f"at least {ESS_WARN:g}; their values, statistics of the data, are in the "
                  f"release's diagnostics): the released draw may be far from the mechanism's law",
                  ApproximateSamplerWarning, stacklevel=stacklevel)
    return True


def split_r_hat(trace: Array) -> float:
    """Split-R-hat of Gelman et al. (BDA3, eq. 11.4) for a trace of shape (length, chains)."""
    n = trace.shape[0] // 2
    chains = np.concatenate([trace[:n], trace[n: 2 * n]], axis=1)
    w = np.mean(np.var(chains, axis=0, ddof=1))
    b = n * np.var(np.mean(chains, axis=0), ddof=1)
    if w == 0:
        return 1.0
    return float(np.sqrt(((n - 1) / n * w + b / n) / w))


def effective_sample_size(trace: Array) -> float:
    """Multi-chain ESS with Geyer's initial positive sequence (BDA3, eq. 11.8)."""
    length, m = trace.shape
    x = trace - trace.mean(axis=0)
    f = np.fft.rfft(x, n=2 * length, axis=0)
    acov = np.fft.irfft(f * np.conj(f), axis=0)[:length] / length
    var = acov[0].mean() * length / (length - 1)
    if var == 0:
        return float(length * m)
    between = np.var(trace.mean(axis=0), ddof=1) if m > 1 else 0.0
    var_plus = var + between
    rho = 1.0 - (var - acov.mean(axis=1)) / var_plus
    total = 0.0
    for t in range(1, length - 1, 2):
        pair = rho[t] + rho[t + 1]
        if pair < 0:
            break
        total += pair
    tau = -1.0 + 2.0 * (rho[0] + total) if length > 2 else 1.0
    return float(length * m / max(tau, 1e-12))


def _rank_normal(trace: Array) -> Array:
    """Normal scores of the pooled ranks, Phi^-1((rank - 3/8) / (S + 1/4)) (Blom; ties, which
    rejected Metropolis-Hastings steps make, share their average rank), in the trace's shape."""
    from scipy import special

    _, where, counts = np.unique(trace, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - 0.5 * (counts - 1))[where].reshape(trace.shape)
    return special.ndtri((ranks - 0.375) / (trace.size + 0.25))


def _split(trace: Array) -> Array:
    """Each chain's two halves as separate chains (the middle draw of an odd length dropped)."""
    half = trace.shape[0] // 2
    return np.concatenate([trace[:half], trace[trace.shape[0] - half:]], axis=1)


def rank_r_hat(trace: Array) -> float:
    """Rank-normalised split R-hat of a (length, chains) trace: the larger of the bulk R-hat
    (split R-hat of the rank-normal scores) and the tail R-hat (the same of the folded draws
    |x - median|), Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021), Section 4.2. Unlike
    the classic R-hat it is finite for heavy tails and sees chains that differ in scale only."""
    folded = np.abs(trace - np.median(trace))
    return max(split_r_hat(_rank_normal(trace)), split_r_hat(_rank_normal(folded)))


def bulk_ess(trace: Array) -> float:
    """Bulk effective sample size of a (length, chains) trace: the multi-chain ESS of the
    rank-normal scores of the split chains (Vehtari et al. 2021, Section 4.3)."""
    return effective_sample_size(_split(_rank_normal(trace)))


def run_chains(state: Array, log_target: Callable[[Array], Array],
               propose: Callable[[Array, float, np.random.Generator], tuple[Array, Array]],
               rng: np.random.Generator, burn_in: int, trace_length: int, step: float,
               max_step: float, summary: Callable[[Array], Array] | None, target_rate: float = 0.3,
               coordinates: Callable[[Array], Array] | None = None,
               ) -> tuple[Array, MCMCDiagnostics]:
    """Metropolis-Hastings on a stack of independent chains (``state`` has the chains first).

    ``propose(state, step, rng)`` returns the proposals, the log Hastings correction
    log q(y -> x) - log q(x -> y) of each (-inf rejects a proposal outright) and which of them
    the step size scales (a mixture may also propose moves that do not depend on it). The step
    size is tuned towards ``target_rate`` on those proposals during the first half of the burn-in,
    every ``ADAPT_EVERY`` iterations (log step += acceptance - target), and then frozen, so the
    kept part is a valid MH chain; diagnostics are computed on ``summary`` (default: the log
    target) over the last ``trace_length`` iterations; ``coordinates(state)``, of shape
    (chains, q), adds q columns to the trace whose split R-hat counts too (``diagnose``).
    """
    x = np.array(state, dtype=float)
    chains = x.shape[0]
    lp = log_target(x)
    if not np.all(np.isfinite(lp)):
        raise ValueError("every chain must start where the target density is positive")
    columns = 0 if coordinates is None else np.shape(coordinates(x))[1]
    trace = np.empty((trace_length, chains) + ((1 + columns,) if columns else ()))
    accepted = 0
    window_acc, window = 0, 0
    with bar(burn_in + trace_length, f"MCMC ({chains} chains)") as meter:
        for it in range(burn_in + trace_length):
            meter.update(1)
            y, log_hastings, scaled = propose(x, step, rng)
            lq = log_target(y)
            with np.errstate(invalid="ignore"):
                ok = np.log(rng.random(chains)) < lq - lp + log_hastings
            x = np.where(ok.reshape((chains,) + (1,) * (x.ndim - 1)), y, x)
            lp = np.where(ok, lq, lp)
            if it < burn_in // 2:
                window_acc += np.sum(ok & scaled)
                window += np.sum(scaled)
                if (it + 1) % ADAPT_EVERY == 0 and window:
                    step = min(step * np.exp(window_acc / window - target_rate), max_step)
                    window_acc, window = 0, 0
            elif it >= burn_in:
                accepted += ok.sum()
                kept = lp if summary is None else summary(x)
                trace[it - burn_in] = (np.column_stack([kept, coordinates(x)]) if columns else kept)
    return x, diagnose(trace, burn_in, float(accepted / max(trace_length * chains, 1)), float(step))


def diagnose(trace: Array, burn_in: int, acceptance_rate: float, step_size: float) -> MCMCDiagnostics:
    """Split R-hat and ESS of a (length, chains) trace kept after ``burn_in`` steps; of a
    (length, chains, q) trace, the largest split R-hat of its columns and the ESS of the first."""
    length, chains = trace.shape[:2]
    columns = trace.reshape(length, chains, -1)
    r_hat = (max(split_r_hat(columns[..., j]) for j in range(columns.shape[2]))
             if length >= 4 and chains >= 2 else float("nan"))
    return MCMCDiagnostics(
        acceptance_rate=acceptance_rate, step_size=step_size, burn_in=burn_in, trace_length=length,
        n_chains=chains, r_hat=r_hat,
        ess=effective_sample_size(columns[..., 0]) if length >= 4 else float("nan"), trace=trace)


def volume_ratio(manifold: Manifold, x: Array, xi: Array, y: Array) -> Array:
    """log J_x(xi) - log J_y(Log_y x) for y = Exp_x(xi): the Hastings factor of a random walk by
    Exp (zero on symmetric spaces; NaN beyond the injectivity radius, where walks reject)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(manifold.volume_density(x, xi)) - np.log(
            manifold.volume_density(y, manifold.log(y, x)))


def metropolis_hastings(manifold: Manifold, log_target: Callable[[Array], Array], init: Array,
                        rng: np.random.Generator, burn_in: int = 2000, trace_length: int = 200,
                        step: float = 0.5, summary: Callable[[Array], Array] | None = None,
                        ) -> tuple[Array, MCMCDiagnostics]:
    """Random-walk chains on ``manifold`` started at ``init`` (shape ``(chains, *point_shape)``).

    Returns the final state of every chain (one approximate draw per chain) and diagnostics
    computed on ``summary`` (default: distance to the first starting point) over the last
    ``trace_length`` iterations.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> from geodp.mechanisms import metropolis_hastings
    >>> m = Sphere(2)
    >>> north = m.origin()
    >>> log_target = lambda x: -m.dist(north, x) / 0.2     # a Riemannian Laplace, scale 0.2
    >>> init = np.tile(north, (4, 1))                        # 4 chains from a public start
    >>> rng = np.random.default_rng(0)
    >>> states, diag = metropolis_hastings(m, log_target, init, rng, burn_in=500, trace_length=100)
    >>> states.shape, diag.n_chains                          # one approximate draw per chain
    ((4, 3), 4)
    """
    x = manifold.check_point(init)
    limit = 0.5 * manifold.injectivity_radius

    def propose(x, step, rng):
        c = rng.standard_normal((x.shape[0], manifold.dim)) * step
        xi = manifold.from_coords(x, c)
        y = manifold.exp(x, xi)
        log_hastings = 0.0 if manifold.symmetric_space else volume_ratio(manifold, x, xi, y)
        return (y, np.where(np.linalg.norm(c, axis=1) < limit, log_hastings, -np.inf),
                np.ones(len(y), dtype=bool))

    return run_chains(x, log_target, propose, rng, burn_in, trace_length, step, limit,
                      summary or (lambda y: manifold.dist(init[0], y)))

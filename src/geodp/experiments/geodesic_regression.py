"""Kulkarni & Soto, Differentially Private Geodesic Regression: Figures 1-3, 5-10.

The paper's procedure (Section 4, Appendix A): tau = the largest residual of the non-private fit
(read from the data); the footpoint drawn by KNG, density exp(-|grad_p E(p, v)| / sigma_p), with
the shooting vector held at its non-private value and parallel transported along every move;
then shooting vectors on each private footpoint's tangent space, density
exp(-|grad_v E(p~, v)| / sigma_v); sigma = 2 Delta / eps with the sensitivities of Theorems 3.3
and D.1. Its sampler: random-walk Metropolis started at the non-private fit, proposals
Exp_p(u) (resp. v + u) with u uniform in a tangent ball of radius r and no Hastings factor
(none is needed on these symmetric spaces). K footpoints and L shooting vectors per footpoint
per budget pair; the figures show the log of the average MSE (1/n) sum_i rho(Exp_p(x_i v), y_i)^2
over the K L pairs. Here the K footpoints are the final states of K chains (and the L vectors of
L chains per footpoint), all chains of all budget pairs run at once (``random_walk``), of
``STEPS`` steps whose first half tunes r to accept about ``ACCEPT`` of the proposals (the paper's
r and chain length are lost from its text). The procedure is not differentially private (tau and
the held v come from the data). On the compact spaces (S^2, Kendall) the same chains are also
started at draws uniform on the manifold (a start that does not depend on the data, as a sound
sampler needs), which shows where the target's mass lies.

The text lost its inline numbers; the values below are ours and stated in the summary: budget
pairs (eps_p, eps_v) with eps_p + eps_v = 1 (unequal) and eps_p = eps_v (equal); n in {50, 100,
200}; noise 0.1 (sphere: N(0, 0.1^2 I_3) added in R^3 and projected, Section 4.1; SPD(2):
tangent Gaussian, Appendix F), 0.2 and 0.3 for Appendix E; K = L = ``reps``. Figure 2's corpus
callosum shapes (ADNI) are not public: the trilobite cephala shipped with geodp (Kendall shapes
against log centroid size, covariate scaled to [0, 1] by its public range) stand in. Appendix G:
bound / |grad E_D - grad E_D'| at the non-private fit of D for the paper's neighbours (n + 1
points, the first dropped from D, the last from D') and for the neighbours that attain the
supremum (``sensitivity_ratios``).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from ..datasets import load
from ..learn import private_geodesic_regression
from ..manifolds import SPD, Manifold, Sphere
from ..mechanisms.kng import BundleDomain, KNormGradient, sample_bundle
from ..mechanisms.mcmc import ApproximateSamplerWarning
from ..progress import tracked
from ..statistics import ConvergenceWarning, geodesic_regression
from ..statistics.regression import fitted_points, regression_gradient
from ..statistics.sensitivity import regression_sensitivity
from . import _gr_figures as figures
from . import _gr_findings as findings
from ._output import write_csv, write_summary
from ._regression_modes import far_critical_points

UNEQUAL = ((0.1, 0.9), (0.3, 0.7), (0.5, 0.5), (0.7, 0.3), (0.9, 0.1))
EQUAL = ((1.0, 1.0), (0.5, 0.5), (0.25, 0.25), (0.1, 0.1), (0.05, 0.05))
SIZES = (50, 100, 200)
NOISE, LARGER_NOISE = 0.1, (0.2, 0.3)
STEPS, ACCEPT = 300, 0.3
SPD_RADIUS = 3.0
SOUND = {"S^2": dict(tau=0.5, x_range=(0, 1), v_max=4.0),
         "SPD(2)": dict(tau=0.5, x_range=(0, 1), v_max=4.0, center=np.eye(2), radius=3.0)}
QUICK = {"sizes": (50,), "reps": 2, "steps": 80}


def synthetic(manifold: Manifold, n: int, rng: np.random.Generator, noise: float = NOISE,
              ambient: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """n points on a random geodesic at covariates uniform on [0, 1], with noise: ``ambient``
    N(0, noise^2 I) added in the embedding space and projected back (the sphere, Section 4.1),
    otherwise tangent Gaussian noise at the clean point (SPD, Appendix F). The geodesic runs from
    a point of B_1(origin) to another: v = Log_p1(p2) (Appendix F's construction)."""
    base = manifold.origin()
    p1, p2 = manifold.random_ball(base, 1.0, 2, rng)
    x = rng.uniform(0.0, 1.0, n)
    clean = fitted_points(manifold, p1, manifold.log(p1, p2), x)
    if ambient:
        return x, manifold.project(clean + noise * rng.standard_normal(clean.shape))
    return x, manifold.exp(clean, manifold.from_coords(clean, noise * rng.standard_normal(
        (n, manifold.dim))))


def mse(manifold: Manifold, p: np.ndarray, v: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(1/n) sum_i rho(Exp_p(x_i v), y_i)^2 for stacked pairs (p, v)."""
    return np.mean(manifold.dist(fitted_points(manifold, p, v, x), y) ** 2, axis=-1)


def tangent_ball(manifold: Manifold, p: np.ndarray, radius: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    """Vectors uniform in the tangent balls of the given radii (B,) at the points p (B, ...)."""
    c = rng.standard_normal((len(radius), manifold.dim))
    c *= (radius * rng.random(len(radius)) ** (1.0 / manifold.dim)
          / np.linalg.norm(c, axis=1))[:, None]
    return manifold.from_coords(p, c)


def random_walk(state, log_target, propose, radius: np.ndarray, steps: int,
                rng: np.random.Generator):
    """Random-walk Metropolis for stacked chains (B, ...), all at once; ``propose(state, radius)``
    moves every chain by its own radius. The first half of the steps tunes each chain's radius
    (every 20 steps by exp(2 (acceptance - ACCEPT))); returns the final states and each chain's
    acceptance rate over the second half."""
    lp = log_target(state)
    window, kept = np.zeros(len(lp)), np.zeros(len(lp))
    for t in range(steps):
        prop = propose(state, radius)
        lq = log_target(prop)
        ok = np.log(rng.random(len(lp))) < lq - lp
        state = np.where(ok.reshape((-1,) + (1,) * (np.ndim(state) - 1)), prop, state)
        lp = np.where(ok, lq, lp)
        if t < steps // 2:
            window += ok
            if (t + 1) % 20 == 0:
                radius = radius * np.exp(2.0 * (window / 20 - ACCEPT))
                window[:] = 0.0
        else:
            kept += ok
    return state, kept / max(1, steps - steps // 2)


class Problem:
    """A regression data set with its non-private fit, the paper's tau (largest residual) and
    the domain its samplers use: footpoints in B_3(fit) on SPD (the whole space on compact
    manifolds), shooting vectors with |v| <= 10 |v_hat| + 1 (the paper states no bound; without
    one the shooting-vector density need not be normalisable on a compact manifold)."""

    def __init__(self, manifold: Manifold, x: np.ndarray, y: np.ndarray, name: str):
        self.manifold, self.x, self.y, self.name, self.n = manifold, x, y, name, len(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.fit = geodesic_regression(manifold, x, y)
        self.p, self.v = self.fit.footpoint, self.fit.shooting_vector
        self.tau = float(manifold.dist(fitted_points(manifold, self.p, self.v, x), y).max())
        self.v_norm = float(manifold.norm(self.p, self.v))
        self.v_cap = 10.0 * self.v_norm + 1.0
        self.compact = bool(np.isfinite(manifold.injectivity_radius))
        self.log_mse = float(np.log(mse(manifold, self.p, self.v, x, y)))

    def sigmas(self, pairs, replicate: int = 1) -> np.ndarray:
        """(sigma_p, sigma_v) = 2 Delta / eps per budget pair (P, 2); ``replicate`` m: the data
        repeated m times (same energy and gradients, sensitivities divided by m)."""
        sens = regression_sensitivity(self.manifold, self.n * replicate, self.tau,
                                      float(np.max(np.abs(self.x))), self.v_norm)
        return np.array([[KNormGradient(sens["footpoint"], ep).scale,
                          KNormGradient(sens["shooting_vector"], ev).scale] for ep, ev in pairs])

    def gradient(self, p: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return regression_gradient(self.manifold, p, v, self.x, self.y)[:2]

    def uniform_points(self, k: int, rng: np.random.Generator) -> np.ndarray:
        """k points uniform on a compact manifold (a projected isotropic Gaussian)."""
        m = self.manifold
        return m.project(rng.standard_normal((k,) + m.point_shape))


def footpoint_chains(problem: Problem, sigma_p: np.ndarray, start: np.ndarray, steps: int,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's footpoint step for chains (B,) at their own sigma_p: states (p, v), v the
    non-private shooting vector transported along every move; target exp(-|grad_p E| / sigma_p)
    on the footpoint domain. ``start``: (B, *point_shape). Returns (p, v, acceptance)."""
    m, c = problem.manifold, problem.p
    v0 = m.to_tangent(start, m.transport(np.broadcast_to(c, start.shape), start,
                                         np.broadcast_to(problem.v, start.shape)))
    state = np.stack([start, v0], axis=1)
    cap = 0.5 * m.injectivity_radius if problem.compact else SPD_RADIUS

    def log_target(s):
        p, v = s[:, 0], s[:, 1]
        out = -m.norm(p, problem.gradient(p, v)[0]) / sigma_p
        return out if problem.compact else np.where(m.dist(c, p) <= SPD_RADIUS, out, -np.inf)

    def propose(s, radius):
        p, v = s[:, 0], s[:, 1]
        q = m.exp(p, tangent_ball(m, p, np.minimum(radius, cap), rng))
        return np.stack([q, m.to_tangent(q, m.transport(p, q, v))], axis=1)

    radius = np.minimum(2.0 * sigma_p * math.sqrt(m.dim), cap)
    state, rate = random_walk(state, log_target, propose, radius, steps, rng)
    return state[:, 0], state[:, 1], rate


def vector_chains(problem: Problem, sigma_v: np.ndarray, p: np.ndarray, v: np.ndarray, steps: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The paper's shooting-vector step: chains on T_p (p fixed per chain) from v, target
    exp(-|grad_v E(p, v)| / sigma_v) for |v| <= v_cap. Returns (v, acceptance)."""
    m = problem.manifold

    def log_target(vs):
        out = -m.norm(p, problem.gradient(p, vs)[1]) / sigma_v
        return np.where(m.norm(p, vs) <= problem.v_cap, out, -np.inf)

    def propose(vs, radius):
        return vs + tangent_ball(m, p, radius, rng)

    radius = np.minimum(2.0 * sigma_v * math.sqrt(m.dim), problem.v_cap)
    return random_walk(v, log_target, propose, radius, steps, rng)


def paper_procedure(problem: Problem, sigmas: np.ndarray, k: int, l: int, steps: int,
                    rng: np.random.Generator, uniform_start: bool = False) -> dict:
    """K footpoints and L shooting vectors per footpoint for every budget pair (sigmas (P, 2)),
    all chains at once. Chains start at the non-private fit, or with ``uniform_start`` at points
    uniform on the (compact) manifold. Returns the MSEs (P, K, L), the footpoints (P, K, ...),
    the vectors (P, K, L, ...), their distances from the fit (P, K) and the acceptance rates."""
    m, n_pairs = problem.manifold, len(sigmas)
    shape = m.point_shape
    start = (problem.uniform_points(n_pairs * k, rng) if uniform_start else
             np.broadcast_to(problem.p, (n_pairs * k,) + shape).copy())
    p, v, rate_p = footpoint_chains(problem, np.repeat(sigmas[:, 0], k), start, steps, rng)
    p_l, v_l = np.repeat(p, l, axis=0), np.repeat(v, l, axis=0)
    vecs, rate_v = vector_chains(problem, np.repeat(sigmas[:, 1], k * l), p_l, v_l, steps, rng)
    errors = mse(m, p_l, vecs, problem.x, problem.y)
    return {"mse": errors.reshape(n_pairs, k, l), "footpoints": p.reshape((n_pairs, k) + shape),
            "vectors": vecs.reshape((n_pairs, k, l) + shape),
            "distance": m.dist(problem.p, p).reshape(n_pairs, k),
            "acceptance_p": rate_p.reshape(n_pairs, k).mean(axis=1),
            "acceptance_v": rate_v.reshape(n_pairs, k * l).mean(axis=1)}


def log_mean_se(errors: np.ndarray) -> float:
    """Standard error of log(mean MSE) over K footpoints x L vectors (K, L): the delta method on
    the K footpoint chains' means (independent chains; the L vectors share their footpoint)."""
    means = errors.mean(axis=1)
    if len(means) < 2:
        return 0.0
    return float(means.std(ddof=1) / math.sqrt(len(means)) / means.mean())


def budget_pairs(equal_only: bool = False) -> list[tuple[str, float, float]]:
    """(allocation, eps_p, eps_v) of the figures: unequal splits of 1, then equal splits."""
    return ([] if equal_only else [("unequal", ep, ev) for ep, ev in UNEQUAL]) + \
        [("equal", ep, ev) for ep, ev in EQUAL]


def budget_rows(problem: Problem, figure: str, pairs, k: int, steps: int,
                rng: np.random.Generator, uniform: bool) -> tuple[list[dict], dict]:
    """Rows per budget pair (allocation, eps_p, eps_v): the paper's procedure, and from uniform
    starts too when ``uniform``; and the procedure's draws (for the prediction figures)."""
    sig = problem.sigmas([(ep, ev) for _, ep, ev in pairs])
    draws = paper_procedure(problem, sig, k, k, steps, rng)
    # from uniform starts, one shooting vector per footpoint: where the footpoints go is the point
    wide = paper_procedure(problem, sig, k, 1, steps, rng, uniform_start=True) if uniform else None
    rows = []
    for i, (allocation, ep, ev) in enumerate(pairs):
        row = {"figure": figure, "allocation": allocation, "n": problem.n, "eps_p": ep,
               "eps_v": ev, "sigma_p": sig[i, 0], "sigma_v": sig[i, 1],
               "log_avg_mse_paper": float(np.log(draws["mse"][i].mean())),
               "se_log_avg_mse_paper": log_mean_se(draws["mse"][i]),
               "log_mse_nonprivate": problem.log_mse,
               "median_footpoint_distance": float(np.median(draws["distance"][i])),
               "acceptance_footpoint": float(draws["acceptance_p"][i]),
               "acceptance_vector": float(draws["acceptance_v"][i])}
        if wide is not None:
            row["log_avg_mse_uniform_start"] = float(np.log(wide["mse"][i].mean()))
            row["median_footpoint_distance_uniform_start"] = float(np.median(wide["distance"][i]))
        rows.append(row)
    return rows, draws


def worst_direction(manifold: Manifold, p: np.ndarray, v: np.ndarray, part: int) -> np.ndarray:
    """The unit residual e at Exp_p(v) that the adjoint d_pExp(v)^dagger (``part`` 0) or
    d_vExp(v)^dagger (1) lengthens most: its top right singular vector, as a tangent vector."""
    yhat = manifold.exp(p, v)
    basis = manifold.from_coords(yhat, np.eye(manifold.dim))
    images = manifold.exp_adjoints(np.broadcast_to(p, basis.shape), np.broadcast_to(v, basis.shape),
                                   basis)[part]
    matrix = manifold.to_coords(np.broadcast_to(p, basis.shape), images).T
    return manifold.from_coords(yhat, np.linalg.svd(matrix)[2][0])


def gradient_change(manifold: Manifold, p, v, x, y, x_other, y_other) -> np.ndarray:
    """|grad_p E_D - grad_p E_D'| and |grad_v E_D - grad_v E_D'| at (p, v): D = (x, y) and D'
    with its last record replaced by (x_other, y_other)."""
    x2, y2 = x.copy(), y.copy()
    x2[-1], y2[-1] = x_other, y_other
    g1, g2 = regression_gradient(manifold, p, v, x, y), regression_gradient(manifold, p, v, x2, y2)
    return np.array([float(manifold.norm(p, g1[i] - g2[i])) for i in (0, 1)])


def sensitivity_ratios(name: str, manifold: Manifold, n: int, pairs: int, rng: np.random.Generator,
                       ambient: bool) -> list[dict]:
    """Appendix G: theoretical / empirical gradient change at the non-private fit of D, for the
    paper's neighbours (n + 1 points; D without the first, D' without the last; tau the largest
    residual of all n + 1, ``ratio_*``, or of the two records that differ, ``*_pair_tau``), and
    for the neighbours that attain the supremum at the same fit and tau (``*_worst``): both
    differing records at x = 1, residuals +-tau along ``worst_direction``."""
    rows = []
    for _ in tracked(range(pairs), f"{name} sensitivity ratios"):
        x, y = synthetic(manifold, n + 1, rng, ambient=ambient)
        xd, yd = np.roll(x, -1)[:n], np.roll(y, -1, axis=0)[:n]  # D: records 2..n+1, last = n+1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fit = geodesic_regression(manifold, xd, yd, max_iter=200)
        p, v = fit.footpoint, fit.shooting_vector
        res = manifold.dist(fitted_points(manifold, p, v, x), y)
        tau, tau_pair = float(res.max()), float(max(res[0], res[-1]))
        bound = regression_sensitivity(manifold, n, tau, 1.0, float(manifold.norm(p, v)))
        bounds = np.array([bound["footpoint"], bound["shooting_vector"]])
        empirical = gradient_change(manifold, p, v, xd, yd, x[0], y[0])
        row = {"manifold": name, "n": n, "tau": tau}
        for i, part in enumerate(("footpoint", "shooting_vector")):
            e = worst_direction(manifold, p, v, i)
            yhat = manifold.exp(p, v)
            xw, yw = xd.copy(), yd.copy()
            xw[-1], yw[-1] = 1.0, manifold.exp(yhat, tau * e)
            worst = gradient_change(manifold, p, v, xw, yw, 1.0, manifold.exp(yhat, -tau * e))
            row[f"ratio_{part}"] = bounds[i] / empirical[i]
            row[f"ratio_{part}_pair_tau"] = bounds[i] * tau_pair / tau / empirical[i]
            row[f"ratio_{part}_worst"] = bounds[i] / worst[i]
        rows.append(row)
    return rows


def sound_rows(problem: Problem, draws: int, rng: np.random.Generator) -> list[dict]:
    """geodp's sound joint release (public tau and domain, ``SOUND``) at the equal splits' total
    budgets, ``draws`` releases each: log average MSE, and how the draws were made. Chains are
    held to their first 200 steps (no run-on, ``max_steps``): where they have not mixed the row
    says so (the release itself warns), and where the exact fallback applies it is used."""
    rows = []
    for ep, ev in EQUAL:
        errors, exact, r_hat = [], [], []
        for _ in range(draws):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ApproximateSamplerWarning)
                rel = private_geodesic_regression(problem.manifold, problem.x, problem.y, ep + ev,
                                                  rng=rng, allow_approximate=True, max_steps=200,
                                                  **SOUND[problem.name])
            errors.append(float(mse(problem.manifold, rel.value["footpoint"],
                                    rel.value["shooting_vector"], problem.x, problem.y)))
            exact.append(rel.diagnostics["sampler"]["exact"])  # what ran (a diagnostic)
            r_hat.append(rel.diagnostics["sampler"].get("mcmc", {}).get("r_hat", 1.0))
        rows.append({"figure": problem.name, "n": problem.n, "eps_p": ep, "eps_v": ev,
                     "epsilon_total": ep + ev, "log_avg_mse_sound_joint": float(np.log(np.mean(errors))),
                     "exact_draws": int(sum(exact)), "draws": draws,
                     "largest_r_hat": float(np.max(r_hat))})
    return rows


def replicated_rows(problem: Problem, copies, k: int, steps: int, rng: np.random.Generator) -> list[dict]:
    """The trilobites repeated m times (n = 273 m; same energy and gradients, sensitivities
    divided by m): the paper's procedure at the equal splits for each m in ``copies``, K
    footpoints with one shooting vector each."""
    pairs = budget_pairs(equal_only=True)
    sig = np.concatenate([problem.sigmas([(ep, ev) for _, ep, ev in pairs], m) for m in copies])
    draws = paper_procedure(problem, sig, k, 1, steps, rng)
    rows = []
    for j, m in enumerate(copies):
        for i, (_, ep, ev) in enumerate(pairs):
            errors = draws["mse"][j * len(pairs) + i]
            rows.append({"copies": m, "n": problem.n * m, "eps_p": ep, "eps_v": ev,
                         "log_avg_mse_paper": float(np.log(errors.mean())),
                         "se_log_avg_mse_paper": log_mean_se(errors),
                         "log_mse_nonprivate": problem.log_mse,
                         "median_footpoint_distance": float(np.median(
                             draws["distance"][j * len(pairs) + i]))})
    return rows


def trilobites() -> Problem:
    shapes = load("trilobites")
    lo, hi = shapes.covariate_range
    return Problem(shapes.manifold, (shapes.covariates - lo) / (hi - lo), shapes.points, "Kendall")


def sphere_and_spd(sizes, k: int, steps: int, seed: int) -> dict:
    """Figures 1 (S^2) and 7 (SPD(2)): rows and draws per n, and the data sets."""
    out = {}
    for tag, (m, ambient, name) in enumerate(((Sphere(2), True, "S^2"), (SPD(2), False, "SPD(2)"))):
        rows, draws, problems = [], {}, {}
        for j, n in enumerate(tracked(sizes, f"{name} budgets")):
            rng = np.random.default_rng([seed, tag, j])
            problems[n] = Problem(m, *synthetic(m, n, rng, ambient=ambient), name)
            got, draws[n] = budget_rows(problems[n], name, budget_pairs(), k, steps, rng,
                                        uniform=problems[n].compact)
            rows += got
        out[name] = {"rows": rows, "draws": draws, "problems": problems}
    return out


def larger_noise(sizes, k: int, steps: int, seed: int) -> dict:
    """Appendix E (Figures 5, 6): S^2 at the larger noise levels, equal splits."""
    rows, cases = {}, []
    for i, noise in enumerate(LARGER_NOISE):
        rows[noise] = []
        for j, n in enumerate(sizes):
            rng = np.random.default_rng([seed, 10 + i, j])
            problem = Problem(Sphere(2), *synthetic(Sphere(2), n, rng, noise, ambient=True), "S^2")
            got, draws = budget_rows(problem, f"S^2, noise {noise:g}", budget_pairs(True), k,
                                     steps, rng, uniform=False)
            rows[noise] += [dict(r, noise=noise) for r in got]
            if j == len(sizes) // 2:  # Figure 5 shows one data set per noise level
                cases.append({"manifold": problem.manifold, "p": problem.p, "v": problem.v,
                              "y": problem.y, "noise": noise, "x": problem.x,
                              "budgets": [(ep + ev, draws["footpoints"][b, 0], draws["vectors"][b, 0, 0])
                                          for b, (ep, ev) in enumerate(EQUAL)]})
    return {"rows": rows, "cases": cases}


def kendall_part(k: int, steps: int, copies, seed: int, starts: int) -> dict:
    """Figure 2 on the trilobites, its replicated sizes, and the far critical points."""
    problem = trilobites()
    rng = np.random.default_rng([seed, 20])
    rows, draws = budget_rows(problem, "Kendall", budget_pairs(), k, steps, rng, uniform=True)
    sizes = [{"copies": 1, "n": r["n"], "eps_p": r["eps_p"], "eps_v": r["eps_v"],
              "log_avg_mse_paper": r["log_avg_mse_paper"], "se_log_avg_mse_paper":
              r["se_log_avg_mse_paper"], "log_mse_nonprivate": r["log_mse_nonprivate"],
              "median_footpoint_distance": r["median_footpoint_distance"]}
             for r in rows if r["allocation"] == "equal"]
    sizes += replicated_rows(problem, copies, k, steps, rng)
    modes = far_critical_points(problem, np.random.default_rng([seed, 21]), starts=starts)
    modes.update(earlier_sampler(problem, np.random.default_rng([seed, 22]),
                                 burn_in=200 if steps >= STEPS // 2 else 50))
    return {"problem": problem, "rows": rows, "draws": draws, "sizes": sizes, "modes": modes}


def earlier_sampler(problem: Problem, rng: np.random.Generator, chains: int = 4,
                    burn_in: int = 200) -> dict:
    """What the earlier reproduction drew at eps_p = 1: geodp's bundle sampler on the paper's
    footpoint target, chains from uniform starts held to ``burn_in`` + 100 steps (split R-hat,
    distances from the fit); and the log MSE of footpoints uniform on the manifold (v
    transported)."""
    m = problem.manifold
    start = np.stack([problem.p, problem.v])
    feet, info = sample_bundle(BundleDomain(m, problem.p, None, problem.v_cap, "footpoint"),
                               problem.gradient, start, problem.sigmas([(1.0, 1.0)])[0, 0], rng,
                               chains=chains, size=chains, min_acceptance=2.0, burn_in=burn_in,
                               max_steps=burn_in + 100, exact_fallback=False, allow_approximate=True)
    uniform = problem.uniform_points(200, rng)
    moved = m.to_tangent(uniform, m.transport(np.broadcast_to(problem.p, uniform.shape), uniform,
                                              np.broadcast_to(problem.v, uniform.shape)))
    return {"earlier_r_hat": float(info.mcmc.r_hat), "earlier_steps": burn_in + 100,
            "earlier_distances": m.dist(problem.p, feet[:, 0]),
            "log_mse_uniform_footpoint": float(np.log(np.mean(mse(m, uniform, moved, problem.x,
                                                                  problem.y))))}


def appendix_g(sizes, pairs: int, seed: int) -> dict:
    return {name: [r for j, n in enumerate(sizes) for r in sensitivity_ratios(
        name, m, n, pairs, np.random.default_rng([seed, 30 + tag, j]), ambient)]
        for tag, (m, ambient, name) in enumerate(((Sphere(2), True, "S^2"), (SPD(2), False, "SPD(2)")))}


def run(out: Path, *, reps: int, seed: int, quick: bool = False) -> dict:
    """Figures 1, 2, 3, 5, 6, 7, 8, 9 and 10 of Kulkarni & Soto (``fig<N>.png`` with
    ``fig<N>.csv``), the trilobite sizes (``fig2_sizes``), and ``summary.md``. ``reps`` = K = L:
    K x K private pairs per budget. ``quick``: one size, K = 2, short chains (a smoke test)."""
    if reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps}")
    k = min(reps, QUICK["reps"]) if quick else reps
    sizes = QUICK["sizes"] if quick else SIZES
    steps, copies, starts = (QUICK["steps"], (16,), 4) if quick else (STEPS, (4, 16), 4)
    out = Path(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (ApproximateSamplerWarning, ConvergenceWarning))
        main = sphere_and_spd(sizes, k, steps, seed)
        kendall = kendall_part(k, (2 * steps) // 3, copies, seed, starts)
        noisy = larger_noise(sizes, k, steps, seed)
        sound = {name: sound_rows(main[name]["problems"][sizes[-1]], 1 if quick else min(k, 2),
                                  np.random.default_rng([seed, 40, i]))
                 for i, name in enumerate(("S^2", "SPD(2)"))}
        ratios = appendix_g(sizes, 4 if quick else 50, seed)
    tables = {"fig1": main["S^2"]["rows"], "fig2": kendall["rows"], "fig2_sizes": kendall["sizes"],
              "fig6": [r for rows in noisy["rows"].values() for r in rows],
              "fig7": main["SPD(2)"]["rows"], "fig9": ratios["S^2"], "fig10": ratios["SPD(2)"],
              "sound_joint": sound["S^2"] + sound["SPD(2)"]}
    extra = findings.prediction_tables(main, kendall, noisy)
    tables.update(extra)
    for name, rows in tables.items():
        write_csv(out / f"{name}.csv", rows)
    plotted = figures_for(out, main, kendall, noisy, sound, ratios)
    found = findings.all_findings(main, kendall, noisy, sound, ratios, extra, k)
    summary = write_summary(out, f"Kulkarni & Soto, Differentially Private Geodesic Regression "
                                 f"(K = L = {k}{', quick' if quick else ''})", found)
    return {"output": str(out), "png": plotted, "replicates": k, "quick": quick,
            "summary": str(summary), "findings": found}


def figures_for(out: Path, main, kendall, noisy, sound, ratios) -> bool:
    """Every PNG of the reproduction; False when matplotlib is missing."""
    p = kendall["problem"]
    kd = kendall["draws"]
    best = 5  # the first equal split, eps_p = eps_v = 1
    private_k = [(kd["footpoints"][best, i], kd["vectors"][best, i, 0]) for i in range(kd["footpoints"].shape[1])]
    spd = main["SPD(2)"]
    n_spd = max(spd["draws"])
    sd, sp = spd["draws"][n_spd], spd["problems"][n_spd]
    private_s = [(sd["footpoints"][best, i], sd["vectors"][best, i, 0]) for i in range(sd["footpoints"].shape[1])]
    lo, hi = load("trilobites").covariate_range
    xs = np.quantile(p.x, [0.05, 0.5, 0.95])
    done = [
        figures.plot_budgets(out / "fig1.png", main["S^2"]["rows"], "Figure 1, S^2", sound["S^2"]),
        figures.plot_budgets(out / "fig7.png", spd["rows"], "Figure 7, SPD(2)", sound["SPD(2)"]),
        figures.plot_budgets(out / "fig2.png", kendall["rows"], "Figure 2, trilobites (Kendall(16))"),
        figures.plot_equal_panels(out / "fig2_sizes.png", {"": kendall["sizes"]},
                                  "Trilobites repeated m times (n = 273 m: same fit, sensitivity / m): "
                                  "paper's procedure", key="n"),
        figures.plot_equal_panels(out / "fig6.png", {f"noise sd {noise:g}": rows for noise, rows
                                                     in noisy["rows"].items()},
                                  "Figure 6: S^2 with larger data noise, equal splits"),
        figures.plot_sphere_geodesics(out / "fig5.png", noisy["cases"]),
        figures.plot_spd_ellipses(out / "fig8.png", sp.manifold, sp.p, sp.v, private_s,
                                  (0.0, 0.25, 0.5, 0.75, 1.0), "1 / 1"),
        figures.plot_shapes(out / "fig3.png", p.manifold, p.p, p.v, private_k, xs,
                            [f"log10 centroid size {lo + x * (hi - lo):.2f}" for x in xs], "1 / 1"),
        figures.plot_ratios(out / "fig9.png", ratios["S^2"], "Figure 9: Appendix G on S^2"),
        figures.plot_ratios(out / "fig10.png", ratios["SPD(2)"], "Figure 10: Appendix G on SPD(2)"),
    ]
    return all(done)

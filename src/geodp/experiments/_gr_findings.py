"""The summary of the geodesic-regression reproduction: the paper's claim beside geodp's numbers,
figure by figure, with the verdict computed from the numbers (``geodesic_regression.run``)."""

from __future__ import annotations

import numpy as np

GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
BEST = 5  # index of the first equal split (eps_p = eps_v = 1) among the budget pairs


def _prediction_gap(problem, footpoints, vectors, grid=GRID) -> np.ndarray:
    """rho(Exp_p~(x v~), Exp_p(x v)) for private pairs (K, L, ...) at the covariates: (K L, G)."""
    m = problem.manifold
    shape = m.point_shape
    p = np.repeat(footpoints, vectors.shape[1], axis=0)
    v = vectors.reshape((-1,) + shape)
    xs = np.asarray(grid)
    nd = len(shape)
    private = m.exp(p[:, None], xs.reshape((1, -1) + (1,) * nd) * v[:, None])
    ref = m.exp(np.broadcast_to(problem.p, (len(xs),) + shape), xs.reshape((-1,) + (1,) * nd) * problem.v)
    return m.dist(private, ref[None])


def _residual_rms(problem) -> float:
    from .geodesic_regression import mse
    return float(np.sqrt(mse(problem.manifold, problem.p, problem.v, problem.x, problem.y)))


def prediction_tables(main: dict, kendall: dict, noisy: dict) -> dict:
    """fig3.csv, fig5.csv, fig8.csv: distances between private and non-private predictions."""
    tables = {}
    for name, problem, draws in (("fig3", kendall["problem"], kendall["draws"]),
                                 ("fig8", *_largest(main["SPD(2)"]))):
        gap = _prediction_gap(problem, draws["footpoints"][BEST], draws["vectors"][BEST])
        tables[name] = [{"covariate": x, "draw": d, "distance_private_to_nonprivate": float(gap[d, j]),
                         "residual_rms_of_fit": _residual_rms(problem)}
                        for d in range(gap.shape[0]) for j, x in enumerate(GRID)]
    rows = []
    for case in noisy["cases"]:
        m = case["manifold"]
        xs = np.asarray(GRID)[:, None]
        ref = m.exp(np.broadcast_to(case["p"], (len(GRID), 3)), xs * case["v"])
        for total, p, v in case["budgets"]:
            gap = m.dist(m.exp(np.broadcast_to(p, (len(GRID), 3)), xs * v), ref)
            rows.append({"noise": case["noise"], "total_epsilon": total,
                         "mean_distance_private_to_nonprivate": float(gap.mean())})
    tables["fig5"] = rows
    return tables


def _largest(part: dict):
    n = max(part["draws"])
    return part["problems"][n], part["draws"][n]


def _trend(rows, key="log_avg_mse_paper") -> dict:
    """Per n: unequal-split ends above the interior minimum (parabola), equal splits rising as the
    budget falls (steps that rise, of 4), and the ordering in n at every budget pair."""
    sizes = sorted({r["n"] for r in rows})
    out = {}
    for n in sizes:
        une = [r[key] for r in rows if r["n"] == n and r["allocation"] == "unequal"]
        eq = [r[key] for r in rows if r["n"] == n and r["allocation"] == "equal"]
        out[n] = {"parabola": bool(une and min(une[0], une[-1]) > min(une[1:-1])),
                  "rising": int(sum(b > a for a, b in zip(eq, eq[1:]))), "equal": eq}
    return out


def _ordered_in_n(rows, key="log_avg_mse_paper") -> tuple[int, int]:
    sizes = sorted({r["n"] for r in rows})
    per = [[r[key] for r in rows if r["n"] == n] for n in sizes]
    ok = sum(all(a > b for a, b in zip(col, col[1:])) for col in zip(*per))
    return ok, len(per[0])


def _budget_finding(figure, rows, claim_extra="") -> dict:
    trend = _trend(rows)
    parabolas = sum(t["parabola"] for t in trend.values())
    rising = sum(t["rising"] for t in trend.values())
    ordered, pairs = _ordered_in_n(rows)
    steps = 4 * len(trend)
    text = "; ".join(f"n = {n}: equal splits {', '.join(f'{v:.2f}' for v in t['equal'])}"
                     for n, t in trend.items())
    good = parabolas == len(trend) and rising >= 0.75 * steps
    return {"figure": figure,
            "paper": "log average MSE largest when eps_p or eps_v is very small (parabola over the "
                     "unequal splits); rising as the equal-split budget falls; lower for larger n "
                     "at every budget" + claim_extra,
            "geodp": f"parabola at {parabolas} of {len(trend)} sizes; equal splits rise at {rising} "
                     f"of {steps} steps ({text}); ordered 50 > 100 > 200 at {ordered} of {pairs} "
                     f"budget pairs" if len(trend) > 1 else f"parabola: {bool(parabolas)}; equal "
                     f"splits rise at {rising} of {steps} steps ({text})",
            "verdict": "agree" if good and ordered >= 0.7 * pairs else "partly" if rising else "disagree",
            "why": "the paper's procedure (its tau, its held shooting vector, random-walk chains "
                   "from the non-private fit); the n-ordering also carries the different data "
                   "sets' own non-private energies (dashed lines)"}


def _join(values) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def _kendall_findings(kendall: dict) -> list[dict]:
    problem, rows, modes = kendall["problem"], kendall["rows"], kendall["modes"]
    eq = [r for r in rows if r["allocation"] == "equal"]
    far = modes["far"]
    ratio = max((modes["log_abs_det_fit"] - f["log_abs_det"] for f in far), default=float("nan"))
    far_text = (f"Newton finds {len(far)} further zero(s) of the footpoint gradient field at "
                f"distance {min(f['distance'] for f in far):.2f}-{max(f['distance'] for f in far):.2f} "
                f"from the fit (E up to {max(f['energy'] for f in far):.2f} against "
                f"{problem.fit.energy:.3f}), where the field is flat (smallest singular values "
                f"{min(f['singular_values'][0] for f in far):.3f}, against "
                f"{modes['singular_values_fit'][0]:.2f} at the fit): as sigma -> 0 their basins "
                f"hold e^{ratio:.0f} times the fit's share of the KNG law, whatever n" if far else
                "no further zero of the footpoint gradient field was found")
    reach = {}  # per n, the budgets (largest first) down to which the MSE stays within e x the fit's
    for n in dict.fromkeys(r["n"] for r in kendall["sizes"]):
        ok = [(r["eps_p"] + r["eps_v"], r["log_avg_mse_paper"] <= r["log_mse_nonprivate"] + 1.0)
              for r in sorted((r for r in kendall["sizes"] if r["n"] == n), key=lambda r: -r["eps_p"])]
        reach[n] = [total for i, (total, _) in enumerate(ok) if all(good for _, good in ok[:i + 1])]
    sizes_text = "; ".join(f"n = {n}: down to total eps {min(v):g}" if v else f"n = {n}: at no budget"
                           for n, v in reach.items())
    sens = problem.sigmas([(1.0, 1.0)])[0]
    rms = float(np.exp(0.5 * problem.log_mse))
    return [
        {"figure": "Figure 2",
         "paper": "corpus callosum shapes (ADNI, 50 landmarks): parabola over the unequal splits; "
                  "error falls as the equal-split budget grows",
         "geodp": f"trilobites (n = {problem.n}, Kendall(16), dim 28) for the non-public ADNI data: "
                  f"equal splits {_join(r['log_avg_mse_paper'] for r in eq)} (non-private "
                  f"{problem.log_mse:.2f}); the same chains from uniform starts "
                  f"{_join(r['log_avg_mse_uniform_start'] for r in eq)}",
         "verdict": "partly",
         "why": f"the MSE stays within e x the fit's only down to total eps "
                f"{min(reach[problem.n], default=float('nan')):g}, then sits near that of a random "
                f"footpoint. (1) the covariate explains R^2 = {problem.fit.r_squared:.1%} of the "
                f"shape variance, so even the fit barely beats the mean shape; (2) tau = "
                f"{problem.tau:.2f} (the paper's largest residual, {problem.tau / rms:.1f}x the rms) "
                f"gives Delta = 2 tau / n = {problem.tau * 2 / problem.n:.4f}; the KNG draws' radius "
                f"grows like dim x sigma = 28 x 2 Delta / eps_p: {28 * sens[0]:.2f} rad at eps_p = 1, "
                f"{112 * sens[0]:.2f} at 0.25, against the shape space's radius pi/2, so the draws "
                f"fill the shape space (log MSE of uniform footpoints "
                f"{modes['log_mse_uniform_footpoint']:.2f}); (3) {far_text}. The earlier "
                f"reproduction, flat at every budget, drew with geodp's bundle sampler from uniform "
                f"starts held to 300 steps (here {modes['earlier_steps']}): at eps_p = 1 its chains reach split R-hat "
                f"{modes['earlier_r_hat']:.1f} and end {_join(np.sort(modes['earlier_distances']))} "
                f"from the fit: unmixed, some in the far basins. Data size "
                f"(fig2_sizes: the trilobites repeated m times, which keeps the energy and divides "
                f"the sensitivities by m): the paper's sampler keeps the MSE within e x the fit's "
                f"{sizes_text}; the law it targets keeps its far basins at every n"},
    ]


def _prediction_finding(figure, table, claim, data) -> dict:
    gaps = np.array([r["distance_private_to_nonprivate"] for r in table])
    rms = table[0]["residual_rms_of_fit"]
    return {"figure": figure, "paper": claim,
            "geodp": f"{data}: private predictions lie a median {np.median(gaps):.3f} (90% "
                     f"{np.quantile(gaps, 0.9):.3f}) from the non-private ones at x in {GRID}, "
                     f"against the fit's residual rms {rms:.3f}",
            "verdict": "agree" if np.median(gaps) < 0.5 * rms else "partly" if np.median(gaps) < 2 * rms
            else "disagree",
            "why": "the paper's split is lost from its text; ours is eps_p = eps_v = 1 (the largest "
                   "budget of its grid). Close means below half the residual spread"}


def _noise_findings(noisy: dict, table5: list[dict]) -> list[dict]:
    rows6 = noisy["rows"]
    base = {noise: np.mean([r["log_mse_nonprivate"] for r in rows]) for noise, rows in rows6.items()}
    rising = sum(sum(b > a for a, b in zip(v, v[1:])) for rows in rows6.values()
                 for v in [[r["log_avg_mse_paper"] for r in rows if r["n"] == n]
                           for n in dict.fromkeys(r["n"] for r in rows)])
    steps = sum(4 * len(dict.fromkeys(r["n"] for r in rows)) for rows in rows6.values())
    gap = {noise: [r["mean_distance_private_to_nonprivate"] for r in table5 if r["noise"] == noise]
           for noise in rows6}
    fall = sum(sum(b > a for a, b in zip(v, v[1:])) for v in gap.values())
    return [
        {"figure": "Figure 5",
         "paper": "low-budget private geodesics deviate farther from the data, more so at the "
                  "larger noise level",
         "geodp": "; ".join(f"noise {noise:g}: mean distance private to non-private prediction "
                            + ", ".join(f"{g:.3f}" for g in v) + " (total eps 2 -> 0.1)"
                            for noise, v in gap.items()),
         "verdict": "agree" if fall >= 0.75 * 4 * len(gap) else "partly",
         "why": f"distances grow as the budget falls at {fall} of {4 * len(gap)} steps; one draw per "
                f"budget, as the paper plots (values lost from its text: our noise sd 0.2, 0.3)"},
        {"figure": "Figure 6",
         "paper": "the non-private log energy rises with the noise; for each n the log average "
                  "MSE is higher for smaller total budgets",
         "geodp": "non-private log energy " + ", ".join(f"{v:.2f} (noise {k:g})" for k, v in base.items())
                  + f"; log average MSE rises as the budget falls at {rising} of {steps} steps",
         "verdict": "agree" if rising >= 0.75 * steps and list(base.values()) == sorted(base.values())
         else "partly",
         "why": "the paper's procedure on S^2 with noise sd 0.2 and 0.3 (the paper's values are lost)"},
    ]


def _ratio_finding(figure, rows, name) -> dict:
    def q(key):
        return np.median([r[key] for r in rows])
    keys = ("ratio_footpoint", "ratio_shooting_vector")
    low = min(r[k] for r in rows for k in keys)
    worst = [r[f"{k}_worst"] for r in rows for k in keys]
    return {"figure": figure,
            "paper": f"{name}: every ratio theoretical / empirical sensitivity >= 1, concentrated "
                     f"near one (the bounds valid and tight)",
            "geodp": f"paper's neighbours: smallest ratio {low:.2f}, medians {q(keys[0]):.1f} "
                     f"(footpoint) and {q(keys[1]):.1f} (shooting vector); with tau taken over "
                     f"the two differing records only {q(keys[0] + '_pair_tau'):.1f} and "
                     f"{q(keys[1] + '_pair_tau'):.1f}; supremum-seeking neighbours "
                     f"{min(worst):.3f}-{max(worst):.3f}",
            "verdict": "partly" if low >= 1.0 else "disagree",
            "why": "valid everywhere, and tight: the bound is attained by the neighbours its proof "
                   "takes as worst (both differing records at x = 1 with residuals +-tau along the "
                   "direction the adjoint lengthens most" + (
                       "; above 1 on SPD only because the bound's cosh(sqrt(1/2) x |v|) assumes the "
                       "largest eigenvalue gap a shooting vector of that norm can have" if max(worst) > 1.001
                       else "") + "). Random neighbours, as the appendix builds them, sit far from "
                   "that supremum, so 'concentrated near one' does not follow from them; it would "
                   "need a different tau or empirical quantity"}


def all_findings(main, kendall, noisy, sound, ratios, extra, k) -> list[dict]:
    sound_text = {name: ", ".join(f"{r['log_avg_mse_sound_joint']:.2f}" for r in rows)
                  for name, rows in sound.items()}
    out = [_budget_finding("Figure 1", main["S^2"]["rows"]) | {
        "why": "the paper's procedure reproduces the trends on S^2 (its noise N(0, 0.1^2 I_3) "
               "projected; its K, L, r and chain length are lost: ours K = L = %d, 300 steps). "
               "The same chains from uniform starts mostly agree. geodp's sound joint release "
               "(public tau 0.5, |v| <= 4) at n = %d, total budgets 2 -> 0.1: %s (exact draws at "
               "%d of %d): on the compact sphere with |v| up to 4 its law too has far zeros of the "
               "gradient" % (k, sound["S^2"][0]["n"], sound_text["S^2"],
                             sum(r["exact_draws"] for r in sound["S^2"]),
                             sum(r["draws"] for r in sound["S^2"]))}]
    out += _kendall_findings(kendall)
    out.append(_prediction_finding(
        "Figure 3", extra["fig3"], "predicted shapes from private parameters align closely with "
        "the non-private ones across ages", "trilobites"))
    out.append({"figure": "Figure 4", "paper": "diagram of parallel transport around a loop",
                "geodp": "-", "verdict": "not reproduced", "why": "an illustration, not a result"})
    out += _noise_findings(noisy, extra["fig5"])
    out.append(_budget_finding("Figure 7", main["SPD(2)"]["rows"]) | {
        "why": "SPD(2), tangent Gaussian noise 0.1; footpoints kept in B_3(fit) (the paper states no "
               "domain). geodp's sound joint release (public tau 0.5, B_3(I), |v| <= 4) at n = %d, "
               "total budgets 2 -> 0.1: %s; its joint sensitivity carries cosh(sqrt(1/2) 4) = 8.5 "
               "for the public |v| <= 4" % (sound["SPD(2)"][0]["n"], sound_text["SPD(2)"])})
    out.append(_prediction_finding(
        "Figure 8", extra["fig8"], "ellipses of the private predictions close to the non-private "
        "ones", "SPD(2), largest n"))
    out.append(_ratio_finding("Figure 9", ratios["S^2"], "S^2"))
    out.append(_ratio_finding("Figure 10", ratios["SPD(2)"], "SPD(2)"))
    return out

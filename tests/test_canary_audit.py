"""The canary audit matrix (issue 28): every public release path against its stated neighbouring
relation.

Each row of ``ROWS`` names a public release path, builds its worst-case neighbours D and D' (the
row's docstring says which pair and why it is worst), draws releases on both and audits them
(``geodp.audit.audit_mechanism``: Clopper-Pearson bounds, Bonferroni-corrected over every event,
confidence 0.95, a fixed seed per row). Two parametrised tests run the whole table:

- the honest test: the audited lower bound is at most the claim the release makes;
- the planted-bug twin: the same audit of the same path with the noise scale halved by a
  monkeypatch that leaves the claim alone (the calibrated sensitivity halved: for DP-RGD the
  old bug, sensitivity clip instead of 2 clip) must find a lower bound above the claim. A test
  that cannot fail is a defect: every row's twin is caught, with the margins noted per row.
  The restricted Laplace and the K-norm gradient mean pay twice over for normalising constants
  that cancel for their worst-case neighbours, so a halved scale stays within their claims in
  truth; their twins quarter the scale (the halved values are noted too).

Draws go through the public functions. DP-RGD rows call ``dp_rsgd`` / ``private_pca`` /
``private_frechet_mean`` once per draw, with the accountant's pure functions of the public
parameters memoised (``accounting_cache``; the law of a release does not change). The other
Fréchet-mean rows call ``private_frechet_mean`` once and spy on the mechanism object it draws its
single output from (``spied_draws``); the release's value is one draw of that object at that
footpoint, so further draws of it are i.i.d. copies of the release: a calibration or footpoint bug
in the public path is in every draw.

Row 2 of the issue (full-batch DP-RGD under add/remove) is not an audit: the full batch claims
replace-one only (``test_full_batch_claims_replace_one_only``).

Observed lower bounds (honest / twin vs claim) are in each row's comment. Run time on the shared
2-core development machine: about 60 s for the default rows, 25 s for the one slow row (9).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable

import numpy as np
import pytest

import geodp.learn.dp_rgd as dp_rgd_module
import geodp.learn.frechet as frechet_module
import geodp.mechanisms.registry as registry_module
import geodp.learn.regression as regression_module
from geodp.audit import (audit_mechanism, kng_log_ratio_statistic, kng_mean_neighbours,
                         kng_regression_neighbours, kng_regression_sampler, projection_statistic)
from geodp.learn import dp_rsgd, private_frechet_mean, private_geodesic_regression, private_pca
from geodp.learn.data_ball import ClippingWarning
from geodp.manifolds import Euclidean, Grassmann, Hyperbolic, SpecialOrthogonal, Sphere
from geodp.privacy import SubsampledGaussian
from geodp.privacy.relation import Relation

CONFIDENCE = 0.95
NORTH = np.array([0.0, 0.0, 1.0])  # the public init / data-ball center on S^2
ORIGIN_H2 = np.array([1.0, 0.0, 0.0])  # the same on H^2 (hyperboloid model)
E1 = np.array([1.0, 0.0, 0.0])  # the canary's direction, tangent at NORTH


@dataclasses.dataclass(frozen=True)
class Audit:
    """Draws of one release path on D and D', the statistic, and the claim to test: ``notion``
    "mu" (GDP) or "epsilon" (at ``delta``)."""

    draw_d: Callable
    draw_d_prime: Callable
    statistic: Callable
    claim: float
    notion: str
    delta: float = 0.0


@dataclasses.dataclass(frozen=True)
class Row:
    """A release path: ``build()`` runs it (under whatever patches are active) into an Audit;
    ``plant(monkeypatch)`` plants the halved-scale bug without touching the claim."""

    build: Callable[[], Audit]
    plant: Callable[[pytest.MonkeyPatch], None]
    n_samples: int
    seed: int
    slow: bool = False


def lower_bound(row: Row) -> tuple[float, float]:
    """(audited lower bound, claim) of a row."""
    audit = row.build()
    result = audit_mechanism(audit.draw_d, audit.draw_d_prime, audit.statistic, row.n_samples,
                             CONFIDENCE, rng=row.seed, delta=audit.delta)
    return (result.mu_lower if audit.notion == "mu" else result.epsilon_lower), audit.claim


# --- drawing releases through the public paths ---------------------------------------------

def repeated(release: Callable[[int], object]) -> Callable:
    """A sampler of k independent public releases, each seeded from the audit's generator."""
    def draw(k: int, rng: np.random.Generator) -> np.ndarray:
        return np.stack([release(int(s)).value for s in rng.integers(2**63, size=k)])
    return draw


def spied_draws(attr: str, release: Callable[[], object]) -> tuple[object, Callable]:
    """Run ``release()`` with the law ``geodp.mechanisms.registry.<attr>`` replaced by a
    subclass that records the object and footpoint of the one draw the release makes. Returns
    the release and a sampler of more draws from that object at that footpoint: the release's
    value is one such draw, so these are i.i.d. copies of it (same scale, same footpoint)."""
    base, seen = getattr(registry_module, attr), []

    class Spy(base):
        def sample(self, footpoint, size=None, rng=None):
            seen.append((self, footpoint))
            return super().sample(footpoint, size, rng)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry_module, attr, Spy)
        rel = release()
    (mech, footpoint), = seen
    return rel, lambda k, rng: base.sample(mech, footpoint, k, rng)


def spied_kng_draws(release: Callable[[], object]) -> tuple[object, Callable]:
    """``spied_draws`` for the K-norm gradient mean, whose one draw is a call of
    ``frechet.kng_mean_draws(manifold, points, minimiser, center, radius, scale, rng)``."""
    original, seen = frechet_module.kng_mean_draws, []

    def spy(*args, **options):
        seen.append(args)
        return original(*args, **options)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(frechet_module, "kng_mean_draws", spy)
        rel = release()
    (args,) = seen
    return rel, lambda k, rng: original(*args[:6], rng, k)[0]


@pytest.fixture(autouse=True)
def accounting_cache(monkeypatch):
    """Memoise the accountant's pure functions of public parameters (the noise multiplier, and a
    guarantee's (epsilon, delta) conversion), which dominate a Poisson release's cost: 0.5 s a
    call. The releases' law is unchanged; only repeated calibrations are skipped."""
    monkeypatch.setattr(dp_rgd_module, "_noise_multiplier",
                        functools.lru_cache(dp_rgd_module._noise_multiplier))
    monkeypatch.setattr(SubsampledGaussian, "to_approx", functools.lru_cache(SubsampledGaussian.to_approx))


# --- the planted bugs: the noise scale halved, the claim untouched ----------------------------

def halve_dp_rgd_sensitivity(monkeypatch):
    """DP-RGD calibrated to half its sensitivity (clip instead of 2 clip under replace-one: the old
    bug; clip/2 under add/remove): sigma halves, the guarantee (noise multiplier) stays."""
    calibrate = dp_rgd_module._calibrate

    def planted(*args):
        plan = calibrate(*args)
        return dataclasses.replace(plan, sensitivity=plan.sensitivity / 2, sigma=plan.sigma / 2)
    monkeypatch.setattr(dp_rgd_module, "_calibrate", planted)


def shrink_frechet(name: str, factor: float = 2.0):
    """The Fréchet-mean sensitivity ``name`` (as ``private_frechet_mean`` sees it) divided by
    ``factor``: the scale shrinks, the target guarantee stays."""
    def plant(monkeypatch):
        true = getattr(frechet_module, name)
        monkeypatch.setattr(frechet_module, name, lambda *a: true(*a) / factor)
    return plant


def halve_regression_sensitivity(monkeypatch):
    true = regression_module.regression_sensitivity
    monkeypatch.setattr(regression_module, "regression_sensitivity",
                        lambda *a: {k: v / 2 for k, v in true(*a).items()})


# --- the rows ------------------------------------------------------------------------------

def pca_full_batch() -> Audit:
    """Row 1: private_pca (full-batch DP-RGD, replace-one), S^2, n = 10, B = 1, one step from the
    public init NORTH. Nine records B NORTH (gradient -2c(z - c w) = 0 at NORTH) and the canary
    z = (NORTH -+ e1) B / sqrt 2, whose gradient there is +-B^2 e1: the two differ by 2 B^2, the
    replace-one sensitivity, so one step's projection on e1 is a Gaussian shift of exactly the
    claimed mu = to_gdp().mu (the previous code claimed half of it)."""
    def data(sign):
        z = np.tile(NORTH, (10, 1))
        z[0] = (NORTH - sign * E1) / np.sqrt(2.0)
        return z

    def release(sign):
        return lambda seed: private_pca(Sphere(2), data(sign), 3.0, 1e-5, 1.0, steps=1, init=NORTH, rng=seed,
                                        progress=False)

    rel = release(1)(0)
    assert rel.guarantee.relation is Relation.REPLACE_ONE
    return Audit(repeated(release(1)), repeated(release(-1)),
                 projection_statistic(Sphere(2), NORTH, E1), rel.guarantee.to_gdp().mu, "mu")


def canary_dp_rsgd(sign_d: float, sign_d_prime: float | None, n: int, batch_size: int, steps: int,
                   sampling: str, delta: float) -> Audit:
    """DP-RSGD on S^2 from NORTH whose records are stored vectors, each record's Riemannian gradient
    the projection of its vector onto T_w (``euclidean_grad``): n - 1 zero records and a canary
    sign * e1 (norm clip = 1 at NORTH, at most 1 elsewhere); ``sign_d_prime`` None removes it.
    Claim: epsilon at ``delta`` of to_approx, the smaller of the two releases' claims (the pair
    is neighbouring for both)."""
    def data(sign):
        zeros = np.zeros((n - 1, 3))
        return zeros if sign is None else np.vstack([zeros, sign * E1])

    def release(sign):
        return lambda seed: dp_rsgd(Sphere(2), lambda w, b: b, data(sign), 2.0, 1e-5, steps,
                                    batch_size=batch_size, lr=1.0, init=NORTH, clip=1.0,
                                    sampling=sampling, rng=seed, euclidean_grad=True, progress=False,
                                    sample_rate=batch_size / n if sampling == "poisson" else None)

    claim = min(release(s)(0).guarantee.to_approx(delta).epsilon for s in (sign_d, sign_d_prime))
    return Audit(repeated(release(sign_d)), repeated(release(sign_d_prime)),
                 projection_statistic(Sphere(2), NORTH, E1), claim, "epsilon", delta)


def poisson_add_remove() -> Audit:
    """Row 3: Poisson DP-RSGD (add/remove, sensitivity clip): D' = 99 zero-gradient records plus
    the canary of gradient clip e1, D = the 99 alone; rate 50/100, T = 3. Only the canary moves
    the output, by the most one record can (clip), in each step it is sampled in."""
    return canary_dp_rsgd(1.0, None, 100, 50, 3, "poisson", 1e-3)


def without_replacement_replace_one() -> Audit:
    """Row 4: DP-RSGD sampling 9 of n = 10 without replacement (replace-one, sensitivity 2 clip):
    nine zero-gradient records and the canary +clip e1 replaced by -clip e1 (the gradients differ
    by 2 clip, the sensitivity); T = 2."""
    return canary_dp_rsgd(1.0, -1.0, 10, 9, 2, "without_replacement", 1e-2)


def frechet_neighbours(manifold, center, edge: float, n: int = 10):
    """n - 1 records at the center and one at distance ``edge`` on either side of it along a
    geodesic (D, D'), and that geodesic's direction (``kng_mean_neighbours``): with edge = r the
    replaced record moves the Fréchet mean by the most the data ball allows, 2r/n along the
    geodesic (the flat bound, which Theorem 2's Delta dominates), and the gradient of the risk
    at the center by 2r/n: the worst case of a mean release."""
    return kng_mean_neighbours(manifold, center, edge, n)


def frechet_row(manifold, center, mechanism: str = "laplace", radius: float = 0.1,
                edge: float | None = None, **kwargs) -> Callable[[], Audit]:
    """Rows 5-7: private_frechet_mean with a Riemannian Laplace or wrapped Gaussian on the
    ``frechet_neighbours`` at ``edge`` (default: the ball's boundary, less a rounding margin; beyond it, with clip_data=True,
    the records are moved onto the boundary: the same worst case). Claim: epsilon, or mu."""
    attr = "RiemannianLaplace" if mechanism == "laplace" else "WrappedGaussian"

    def build() -> Audit:
        d, d_prime, direction = frechet_neighbours(manifold, center, edge or radius * (1 - 1e-9))
        clipping = pytest.warns(ClippingWarning) if edge else contextlib.nullcontext()
        with clipping:  # with edge > radius the row is about clipping: it must happen
            draws = [spied_draws(attr, lambda x=x: private_frechet_mean(
                manifold, x, center=center, radius=radius, mechanism=mechanism, rng=0, **kwargs))
                     for x in (d, d_prime)]
        guarantee = draws[0][0].guarantee
        claim = guarantee.mu if mechanism == "wrapped-gaussian" else guarantee.epsilon
        return Audit(draws[0][1], draws[1][1], projection_statistic(manifold, center, direction),
                     claim, "mu" if mechanism == "wrapped-gaussian" else "epsilon")
    return build


def kng_mean() -> Audit:
    """Row 8: private_frechet_mean(mechanism="kng") on S^2, r = 0.5, n = 10, the
    ``frechet_neighbours`` at the ball's edge (kng_mean_neighbours): the replaced record moves
    the risk's gradient by 2r/n, the most the data ball allows at the center."""
    manifold = Sphere(2)
    d, d_prime, direction = frechet_neighbours(manifold, NORTH, 0.5)
    draws = [spied_kng_draws(lambda x=x: private_frechet_mean(
        manifold, x, 1.0, NORTH, 0.5, mechanism="kng", rng=0)) for x in (d, d_prime)]
    return Audit(draws[0][1], draws[1][1], projection_statistic(manifold, NORTH, direction),
                 draws[0][0].guarantee.epsilon, "epsilon")


def dp_rgd_mean() -> Audit:
    """Row 9: private_frechet_mean(mechanism="dp-rgd") on S^2 at r = 0.7 (< pi/4), n = 10, one
    full-batch step from the center. At the center the gradients -Log_c x of the edge records
    -+r e1 differ by 2r, the most |Log_w x - Log_w x'| can be at w = c (the Rauch factor
    t / sin t = 1.42 of the claimed sensitivity is reached only at iterates w away from the
    center, which one public step from c never visits)."""
    manifold = Sphere(2)
    d, d_prime, direction = frechet_neighbours(manifold, NORTH, 0.7)

    def release(x):
        return lambda seed: private_frechet_mean(manifold, x, 4.0, NORTH, 0.7, mechanism="dp-rgd",
                                                 delta=1e-5, steps=1, rng=seed)

    return Audit(repeated(release(d)), repeated(release(d_prime)),
                 projection_statistic(manifold, NORTH, direction),
                 release(d)(0).guarantee.to_gdp().mu, "mu")


def geodesic_regression() -> Audit:
    """Row 10: private_geodesic_regression (joint K-norm gradient release, replace-one) on S^1,
    n = 2 records at x = 1 with responses at the north pole, the last moved to the antipode
    (kng_regression_neighbours: the moved residual, clipped to tau, moves the gradient by up to
    the joint sensitivity, and the normalising constants do not cancel). The public function
    fixes the scale (release.scale); draws come from the exact rejection sampler the audit module
    shares with it (kng_regression_sampler); the statistic is the log-density ratio. The public
    function refuses equal covariates (the shooting vector is not identifiable), so its scale, a
    function of the public n, tau, x_range, v_max and epsilon alone, is read from a release on
    covariates (-1, 1) with the same public parameters."""
    manifold, center, tau, v_max = Sphere(1), np.array([0.0, 1.0]), 0.5, 1.0
    x, y, y_prime = kng_regression_neighbours(manifold, center, 2, 1.0)
    rel = private_geodesic_regression(manifold, np.array([-1.0, 1.0]), y, 1.0, tau, (-1.0, 1.0),
                                      v_max, rng=0)
    return Audit(kng_regression_sampler(manifold, x, y, tau, v_max, rel.scale),
                 kng_regression_sampler(manifold, x, y_prime, tau, v_max, rel.scale),
                 kng_log_ratio_statistic(manifold, x, y, y_prime, tau), rel.guarantee.epsilon,
                 "epsilon")


S2, H2, SO4, GR42 = Sphere(2), Hyperbolic(2), SpecialOrthogonal(4), Grassmann(4, 2)
FAR_E2 = np.array([1e5, 0.0])  # a large-coordinate center: the gradient's rounding is eps |c|
LAPLACE = shrink_frechet("frechet_mean_sensitivity")
# Each row: claim; audited lower bound honest / twin (draws per input), observed with the seeds here.
ROWS = {
    # mu = 0.719 (to_gdp, (3, 1e-5) target); honest 0.620, twin 1.328 (5000)
    "1 full-batch DP-RGD (private_pca), replace-one": Row(pca_full_batch, halve_dp_rgd_sensitivity,
                                                          5000, 1),
    # epsilon at delta 1e-3 = 1.256; honest 0.594, twin 1.756 (10 000)
    "3 Poisson DP-RSGD, add/remove": Row(poisson_add_remove, halve_dp_rgd_sensitivity, 10_000, 3),
    # epsilon at delta 1e-2 = 1.030 (RDP accountant); honest 0.346, twin 1.235 (10 000)
    "4 without-replacement DP-RSGD, replace-one": Row(without_replacement_replace_one,
                                                      halve_dp_rgd_sensitivity, 10_000, 4),
    # epsilon = 1 in rows 5 and 6; honest 0.805 / 0.823 / 0.786 / 0.827, twin 1.637 / 1.698 /
    # 1.670 / 1.703 (200 000)
    "5 Fréchet laplace S^2": Row(frechet_row(S2, NORTH, epsilon=1.0), LAPLACE, 200_000, 5),
    "5 Fréchet laplace H^2": Row(frechet_row(H2, ORIGIN_H2, epsilon=1.0), LAPLACE, 200_000, 5),
    "6 Fréchet laplace clip S^2": Row(frechet_row(S2, NORTH, edge=0.15, clip_data=True, epsilon=1.0),
                                      LAPLACE, 200_000, 6),
    "6 Fréchet laplace clip H^2": Row(frechet_row(H2, ORIGIN_H2, edge=0.15, clip_data=True, epsilon=1.0),
                                      LAPLACE, 200_000, 6),
    # The computed mean to the public tolerance tau = 100 x gradient_rounding (issue 31: an
    # absolute 1e-12 was below the rounding floor eps |c| here, and the release refused); epsilon
    # = 1, calibrated on 2r/n + 2 tau; honest 0.834, twin 1.721 (200 000)
    "5 Fréchet laplace E^2 far center": Row(frechet_row(Euclidean(2), FAR_E2, radius=1.0,
                                                        epsilon=1.0), LAPLACE, 200_000, 5),
    # The exact tangent-rejection sampler (mechanisms/tangent_rejection.py) on spaces that are
    # not isotropic, the neighbours along one geodesic through the identity / span(e1, e2).
    # epsilon = 1; honest SO(4) 0.603 / Gr(4, 2) 0.689, twin 1.287 / 1.445 (200 000;
    # the projection on one geodesic sees less of a 6- or 4-dimensional law than of S^2's)
    "5 Fréchet laplace SO(4)": Row(frechet_row(SO4, SO4.origin(), epsilon=1.0), LAPLACE, 200_000, 5),
    "5 Fréchet laplace Gr(4,2)": Row(frechet_row(GR42, GR42.origin(), epsilon=1.0), LAPLACE, 200_000, 5),
    # epsilon = 1; honest 0.429, twin (scale quartered) 1.693 (200 000). Theorem 3 doubles the
    # scale to pay for the normalising constants, which nearly cancel for these neighbours at the
    # center: the true epsilon is about 1/2, so a halved scale (true epsilon about 1, audited
    # 0.844) is not a detectable violation here; a quartered one is
    "5 Fréchet laplace restrict H^2": Row(
        frechet_row(H2, ORIGIN_H2, radius=0.5, restrict=True, epsilon=1.0),
        shrink_frechet("frechet_mean_sensitivity", 4.0), 200_000, 5),
    # mu = 1; honest 0.986, twin 1.980 (100 000)
    "7 Fréchet wrapped-gaussian H^2": Row(frechet_row(H2, ORIGIN_H2, "wrapped-gaussian", mu=1.0),
                                          LAPLACE, 100_000, 7),
    # epsilon = 1; honest 0.343, twin (scale quartered) 1.432 (200 000). As for the restricted
    # Laplace, the theorem spends epsilon/2 on normalising constants that cancel for these
    # symmetric neighbours (tests/test_audit.py): a halved scale audits at 0.703, not above 1
    "8 Fréchet kng S^2": Row(kng_mean, shrink_frechet("kng_mean_sensitivity", 4.0), 200_000, 8),
    # mu = 0.925; honest 0.568, twin 1.211 (10 000; 23 s per test). The twin is the halved
    # scale, not replace_sensitivity = 2r (the old assumption): one step from the center meets
    # no iterate where 2r is exceeded, and the excess (factors 1.0067-1.1158 of 2r) is beyond
    # this audit's power at any affordable number of public releases
    "9 Fréchet dp-rgd S^2 r=0.7": Row(dp_rgd_mean, halve_dp_rgd_sensitivity, 10_000, 9, slow=True),
    # epsilon = 1; honest 0.547, twin 1.164 (200 000)
    "10 geodesic regression S^1": Row(geodesic_regression, halve_regression_sensitivity, 200_000, 10),
}
CASES = [pytest.param(name, marks=[pytest.mark.slow] if row.slow else [], id=name)
         for name, row in ROWS.items()]


@pytest.mark.parametrize("name", CASES)
def test_release_path_audits_at_or_below_its_claim(name):
    lower, claim = lower_bound(ROWS[name])
    print(f"\n{name}: claim {claim:.4f}, honest lower bound {lower:.4f}")
    assert lower <= claim


@pytest.mark.parametrize("name", CASES)
def test_halved_scale_twin_is_caught(name, monkeypatch):
    ROWS[name].plant(monkeypatch)
    lower, claim = lower_bound(ROWS[name])
    print(f"\n{name}: claim {claim:.4f}, twin lower bound {lower:.4f}")
    assert lower > claim


def test_full_batch_claims_replace_one_only():
    """Row 2: full-batch DP-RGD under add/remove (the old bug's view: n vs n + 1 records, the
    added one with zero gradient). A full-batch step divides the noisy sum by the data's own n,
    which add/remove neighbours do not share, so add/remove is NOT claimed: the release states
    replace-one with n public, whatever n is; Poisson sampling is the add/remove path (row 3)."""
    manifold, init = Sphere(20), np.eye(21)[-1]
    records = np.zeros((10, 21))
    records[0, 0] = 1.0
    for data in (records, np.vstack([records, np.zeros(21)])):
        rel = dp_rsgd(manifold, lambda w, b: b, data, 1.0, 1e-5, 1, init=init, clip=1.0, rng=0,
                      euclidean_grad=True, progress=False)
        assert rel.guarantee.relation is Relation.REPLACE_ONE
        assert rel.parameters["n"] == len(data) and rel.sensitivity == 2.0
    assert private_pca(manifold, records, 1.0, 1e-5, 1.0, steps=1, init=init, rng=0,
                       progress=False).guarantee.relation is Relation.REPLACE_ONE
    poisson = dp_rsgd(manifold, lambda w, b: b, records, 1.0, 1e-5, 1, batch_size=5, init=init,
                      clip=1.0, rng=0, euclidean_grad=True, progress=False, sample_rate=0.5)
    assert poisson.guarantee.relation is Relation.ADD_REMOVE and "n" not in poisson.parameters

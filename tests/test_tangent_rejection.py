"""The exact tangent-rejection sampler of the Riemannian Laplace on SO(4) and Gr(4, 2), against
target laws derived independently of the implementation.

Angle densities. A draw X around eta has, in the maximal-torus (principal-angle) coordinates of
Log_eta X, the density exp(-|theta|/s) w(theta) on the domain before the cut locus:

- SO(4), metric tr(U^T V)/2, Log = eta A with A conjugate to blockdiag(theta_1 J, theta_2 J),
  |A|^2 = theta_1^2 + theta_2^2 (J the 2 x 2 rotation generator): the Weyl integration formula
  of SO(2m) gives Haar measure prod_{i<j} (cos theta_i - cos theta_j)^2 dtheta (up to a constant),
  and the Riemannian volume is a multiple of Haar measure, so on (theta_1, theta_2) in [0, pi)^2
  w = (cos theta_1 - cos theta_2)^2. (Independently: the Lie-algebra Weyl formula gives Lebesgue
  measure on so(4) as prod_{alpha>0} alpha(theta)^2 = (theta_1^2 - theta_2^2)^2, times the
  Jacobian of Exp, prod_{alpha>0} (sin(alpha/2)/(alpha/2))^2, which is (cos theta_1 -
  cos theta_2)^2 * 4.)
- Gr(4, 2), metric tr(U^T V), Log = Y_perp B with singular values theta_i, |B|^2 =
  sum theta_i^2: Lebesgue measure on 2 x 2 matrices in singular values is |theta_1^2 -
  theta_2^2| dtheta, the Jacobian of Exp is sinc(theta_1 - theta_2) sinc(theta_1 + theta_2), so on
  [0, pi/2)^2 w = |sin(theta_1 - theta_2) sin(theta_1 + theta_2)| = |sin^2 theta_1 -
  sin^2 theta_2| (at s -> infinity James' (1954) law of the principal angles between uniform
  2-planes of R^4, |cos^2 theta_1 - cos^2 theta_2|).

Two statistics of the angles are tested by Kolmogorov-Smirnov against CDFs by quadrature: the
distance rho = |theta| (rotation invariant) and the angle phi = atan2(theta_min, theta_max) in
[0, pi/4] between the two (which the weight w, not the radial law, fixes). Direction: the
coordinates of Log_eta X must have mean 0 and covariance proportional to the identity (the law
is invariant under v -> -v and under the isotropy group, which acts irreducibly: Ad(O(4)) on
so(4), U B W^T on Gr(4, 2)'s 2 x 2 coordinates), at footpoints away from the origin.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from geodp.manifolds import Grassmann, SpecialOrthogonal
from geodp.mechanisms import RiemannianLaplace, metropolis_hastings
from geodp.mechanisms.tangent_rejection import truncated_gamma

ALPHA = 1e-3  # fixed seeds; a correct sampler fails one test with probability about ALPHA
SO4, GR42 = SpecialOrthogonal(4), Grassmann(4, 2)


def weight(manifold):
    """(w(theta_1, theta_2), the cut angle) of the module notes."""
    if manifold is SO4:
        return (lambda a, b: (np.cos(a) - np.cos(b)) ** 2), np.pi
    return (lambda a, b: np.abs(np.sin(a) ** 2 - np.sin(b) ** 2)), 0.5 * np.pi


def angles(manifold, footpoint, x) -> np.ndarray:
    """Principal angles (n, 2), decreasing, of the draws x relative to the footpoint(s)."""
    if manifold is SO4:
        eig = np.linalg.eigvals(np.swapaxes(footpoint, -1, -2) @ x)
        return np.sort(np.abs(np.angle(eig)), axis=-1)[:, ::-2]
    c = np.linalg.svd(np.swapaxes(footpoint, -1, -2) @ x, compute_uv=False)
    return np.arccos(np.clip(c, 0.0, 1.0))[:, ::-1]


def reference_cdfs(manifold, scale: float, grid: int = 2001):
    """CDFs of rho and of phi under exp(-|theta|/s) w(theta) on [0, cut)^2, by quadrature in polar
    coordinates theta = r (cos phi, sin phi); phi in [0, pi/4] by the symmetry of w."""
    w, cut = weight(manifold)
    phi = np.linspace(0.0, 0.25 * np.pi, grid)
    top = cut / np.cos(phi)  # r cos(phi) < cut is the binding constraint for phi <= pi/4
    t = np.linspace(0.0, 1.0, grid)
    r = top[:, None] * t[None, :]  # (phi, r) grid, r up to the cut along each ray
    dens = r * np.exp(-r / scale) * w(r * np.cos(phi)[:, None], r * np.sin(phi)[:, None])
    phi_dens = integrate.trapezoid(dens, r, axis=1)
    phi_cdf = integrate.cumulative_trapezoid(phi_dens, phi, initial=0.0)
    r_grid = np.linspace(0.0, top.max(), grid)
    inner = np.array([integrate.trapezoid(np.where(ri <= top, ri * np.exp(-ri / scale) * w(
        ri * np.cos(phi), ri * np.sin(phi)), 0.0), phi) for ri in r_grid])
    r_cdf = integrate.cumulative_trapezoid(inner, r_grid, initial=0.0)
    return (lambda x: np.interp(x, r_grid, r_cdf / r_cdf[-1]),
            lambda x: np.interp(x, phi, phi_cdf / phi_cdf[-1]))


def check_angle_laws(manifold, scale, theta):
    r_cdf, phi_cdf = reference_cdfs(manifold, scale)
    rho = np.linalg.norm(theta, axis=1)
    phi = np.arctan2(theta[:, 1], theta[:, 0])
    p_rho, p_phi = stats.kstest(rho, r_cdf).pvalue, stats.kstest(phi, phi_cdf).pvalue
    assert p_rho > ALPHA and p_phi > ALPHA, (p_rho, p_phi)


def check_direction(manifold, footpoint, x):
    """Mean 0 and covariance proportional to the identity of the coordinates of Log_eta X:
    z-scores from the sample's own moments, Bonferroni over all entries."""
    c = manifold.to_coords(footpoint, manifold.log(footpoint, x))
    n, d = c.shape
    bound = stats.norm.isf(ALPHA / (2 * (d + d * (d + 1) // 2)))
    z_mean = c.mean(axis=0) / (c.std(axis=0) / np.sqrt(n))
    assert np.all(np.abs(z_mean) < bound), z_mean
    sq = np.mean(np.sum(c * c, axis=1)) / d  # the common variance
    prod = c[:, :, None] * c[:, None, :] - sq * np.eye(d)
    z_cov = prod.mean(axis=0) / (prod.std(axis=0) / np.sqrt(n))
    iu = np.triu_indices(d)
    assert np.all(np.abs(z_cov[iu]) < bound), z_cov


@pytest.mark.parametrize("manifold", [SO4, GR42], ids=["so4", "grassmann4_2"])
@pytest.mark.parametrize("scale", [0.3, 1.0, pytest.param(3.0, marks=pytest.mark.slow)])
def test_angle_laws_and_direction_match_the_target(manifold, scale):
    footpoint = manifold.random_point(7)
    assert manifold.dist(manifold.origin(), footpoint) > 0.5
    mech = RiemannianLaplace(manifold, scale)
    mech.check_exact()
    x = mech.sample(footpoint, 20_000, rng=np.random.default_rng(8))
    assert mech.last_info.exact and "tangent space" in mech.last_info.method
    theta = angles(manifold, footpoint, x)
    assert theta.max() < weight(manifold)[1]
    check_angle_laws(manifold, scale, theta)
    check_direction(manifold, footpoint, x)


@pytest.mark.parametrize("manifold", [SO4, GR42], ids=["so4", "grassmann4_2"])
def test_stacked_footpoints_draw_around_their_own(manifold):
    """One draw around each of 20 000 footpoints (the per-footpoint rounds): the angles to the
    own footpoint follow the target and the footpoints are not exchanged."""
    rng = np.random.default_rng(9)
    o = manifold.origin()
    feet = manifold.exp(o, manifold.from_coords(o, rng.standard_normal((20_000, manifold.dim))))
    x = RiemannianLaplace(manifold, 1.0).sample(feet, rng=rng)
    check_angle_laws(manifold, 1.0, angles(manifold, feet, x))


def test_restricted_laplace_proposes_from_the_exact_law():
    """Restricted to B_2(eta) around the footpoint, rho has the unrestricted law conditioned on
    rho <= 2, and the draws come from the unrestricted law by rejection."""
    foot = SO4.random_point(10)
    mech = RiemannianLaplace(SO4, 1.0, restrict_to=(foot, 2.0))
    mech.check_exact()
    x = mech.sample(foot, 10_000, rng=np.random.default_rng(11))
    assert mech.last_info.method == "exact rejection from the unrestricted law"
    rho = SO4.dist(foot, x)
    r_cdf, _ = reference_cdfs(SO4, 1.0)
    assert rho.max() <= 2.0 and stats.kstest(rho, lambda t: r_cdf(t) / r_cdf(2.0)).pvalue > ALPHA


def test_large_scales_refuse_from_the_public_parameters():
    """SO(8) at scale 1: below min_acceptance; check_exact refuses before any data, and the
    refusal happens for every footpoint alike."""
    from geodp.mechanisms import ApproximateSamplerRefused

    mech = RiemannianLaplace(SpecialOrthogonal(8), 1.0)
    with pytest.raises(ApproximateSamplerRefused, match="accept fewer than"):
        mech.check_exact()
    with pytest.raises(ApproximateSamplerRefused):
        mech.sample(np.eye(8), rng=0)


@pytest.mark.parametrize("shape, scale, top", [(6, 0.5, 4.44), (6, 0.05, 4.44), (3, 100.0, 1.0),
                                               (28, 0.01, 6.28)])
def test_truncated_gamma_matches_its_cdf(shape, scale, top):
    r = truncated_gamma(shape, scale, top, 20_000, np.random.default_rng(12))
    assert r.min() >= 0.0 and r.max() < top
    cdf = lambda t: special.gammainc(shape, t / scale) / special.gammainc(shape, top / scale)
    assert stats.kstest(r, cdf).pvalue > ALPHA


def test_truncated_gamma_keeps_the_upper_tail_precise():
    """u near 1 on an untruncated-in-effect law (top/s = 400): the upper-tail branch solves
    gammaincc(d, r/s) = Q + (1 - u) P to relative precision, far beyond 1 - u P in doubles."""
    class Fixed:
        def random(self, size):
            return 1.0 - np.array([1e-6, 1e-10, 1e-14])

    r = truncated_gamma(6, 0.01, 4.0, 3, Fixed())
    tail = special.gammaincc(6, r / 0.01)
    assert np.allclose(tail, [1e-6, 1e-10, 1e-14], rtol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("manifold", [SO4, GR42], ids=["so4", "grassmann4_2"])
def test_exact_draws_agree_with_long_metropolis_chains(manifold):
    """A second witness: 600 independent random-walk chains of 5000 steps on the target
    exp(-rho/s) (rho from the principal angles, defined on the cut locus too, where SO(n)'s
    ``log`` raises), one state each, against exact draws (two-sample KS on rho and phi)."""
    scale, rng = 1.0, np.random.default_rng(13)
    foot = manifold.random_point(14)
    start = np.broadcast_to(foot, (600,) + manifold.point_shape)
    chains, _ = metropolis_hastings(
        manifold, lambda y: -np.linalg.norm(angles(manifold, foot, y), axis=1) / scale, start, rng,
        burn_in=5000, step=0.5, summary=lambda y: np.linalg.norm(angles(manifold, foot, y), axis=1))
    exact = RiemannianLaplace(manifold, scale).sample(foot, 20_000, rng=rng)
    a, b = angles(manifold, foot, chains), angles(manifold, foot, exact)
    for stat in (lambda t: np.linalg.norm(t, axis=1), lambda t: np.arctan2(t[:, 1], t[:, 0])):
        assert stats.ks_2samp(stat(a), stat(b)).pvalue > ALPHA

"""The sampler a release uses (exact, or Metropolis-Hastings chains) is chosen from public
parameters before the data are read: the published ``exact`` flag and a refusal carry no
information about the data (issue 31's adversarial review).

The worst pair for the flag: two footpoints Delta apart near the edge of the restriction ball,
where the exact sampler's acceptance falls fastest, and ``min_acceptance`` set between their
acceptances. Had the pilot run at the footpoint decided (the planted bug below, the rule before
the fix), the flag would say on which side of the threshold the data's mean lies.
"""

from __future__ import annotations

import numpy as np
import pytest

from geodp.audit import audit_mechanism
from geodp.manifolds import Euclidean
from geodp.mechanisms import ApproximateSamplerRefused, RiemannianLaplace
from geodp.mechanisms.spd_laplace import LowAcceptanceError
from geodp.manifolds.base import as_generator

EPSILON, DELTA_MEAN = 1.0, 0.05
SCALE = 2 * DELTA_MEAN / EPSILON          # Theorem 3: the restricted law needs 2 Delta / epsilon
SPACE, CENTER, RADIUS = Euclidean(8), np.zeros(8), 1.0
#: the unrestricted law's share landing in the ball is 0.35 at footpoint 0.8 e_1 and 0.30 at
#: 0.85 e_1 (0.78 at the center): a threshold between them makes a footpoint pilot flip
FOOTPOINTS = (np.r_[0.80, np.zeros(7)], np.r_[0.85, np.zeros(7)])
THRESHOLD = 0.325


class PlannedAtFootpoint(RiemannianLaplace):
    """The planted bug: the sampler chosen by a pilot run at the data's footpoint."""

    def sample(self, footpoint, size=None, rng=None):
        rng = as_generator(rng)
        try:
            self._restricted_choice(footpoint, rng)
            self._exact_plan = True
        except LowAcceptanceError as exc:
            self._exact_plan, self._plan_reason = False, str(exc)
        return super().sample(footpoint, size, rng)


def _exact_flags(law: type[RiemannianLaplace], manifold, footpoint: np.ndarray, ball, scale: float,
                 n: int, rng: np.random.Generator, **options) -> np.ndarray:
    """n releases at ``footpoint``, each by a fresh mechanism (its own plan) with approximation
    allowed, as 0/1 flags: 1 where it drew exactly, 0 where chains ran or it refused."""
    flags = np.zeros(n)
    for i in range(n):
        mech = law(manifold, scale, restrict_to=ball, allow_approximate=True, mcmc_burn_in=20,
                   **options)
        try:
            mech.sample(footpoint, rng=rng)
        except ValueError:
            continue
        flags[i] = mech.last_info.exact
    return flags


def _flag_sampler(law: type[RiemannianLaplace], footpoint: np.ndarray):
    """The worst pair's flags at ``footpoint``, for ``audit_mechanism``."""
    return lambda n, rng: _exact_flags(law, SPACE, footpoint, (CENTER, RADIUS), SCALE, n, rng,
                                       min_acceptance=THRESHOLD)


@pytest.mark.filterwarnings("ignore::geodp.mechanisms.ApproximateSamplerWarning")
def test_published_exact_flag_does_not_depend_on_the_data():
    """The flag's privacy loss on the worst pair: at most epsilon (0 here: the flag is constant);
    the planted bug (a footpoint pilot) is caught by the same test."""
    audits = {law: audit_mechanism(*(_flag_sampler(law, f) for f in FOOTPOINTS), lambda y: y, 300,
                                   rng=3)
              for law in (RiemannianLaplace, PlannedAtFootpoint)}
    assert audits[RiemannianLaplace].epsilon_lower <= EPSILON
    assert audits[PlannedAtFootpoint].epsilon_lower > EPSILON


def test_exact_once_planned_however_few_proposals_the_footpoint_accepts():
    """Without allow_approximate, a plan that passes at the center draws exactly at a footpoint
    whose pilot falls below min_acceptance, where it used to refuse after reading the data."""
    mech = RiemannianLaplace(SPACE, SCALE, restrict_to=(CENTER, RADIUS), min_acceptance=0.5)
    mech.check_exact()
    draws = mech.sample(np.r_[RADIUS, np.zeros(7)], size=200, rng=1)
    assert mech.last_info.exact and np.all(np.linalg.norm(draws, axis=1) <= RADIUS)


def test_refusal_is_decided_at_the_center_before_the_data():
    """A plan that fails refuses in check_exact, with no data, and sample refuses the same way
    at every footpoint."""
    mech = RiemannianLaplace(SPACE, SCALE, restrict_to=(CENTER, RADIUS), min_acceptance=0.9)
    with pytest.raises(ApproximateSamplerRefused, match="decided before the data are read"):
        mech.check_exact()
    for footpoint in (CENTER, FOOTPOINTS[0]):
        with pytest.raises(ApproximateSamplerRefused, match="at the ball's center"):
            mech.sample(footpoint, rng=0)


def test_cli_publishes_only_warnings_marked_public(tmp_path, capsys):
    """A warning whose raising reads the records (here the hyperboloid's precision warning on
    one record beyond distance 9.9, against its neighbour at 9) is a diagnostic: absent from the
    default output for both data sets, present with --diagnostics."""
    import json

    from geodp.cli import main
    from geodp.manifolds import Hyperbolic

    m = Hyperbolic(2)
    o = m.origin()
    rng = np.random.default_rng(0)

    def at(t, angle):
        return m.exp(o, m.from_coords(o, t * np.array([np.cos(angle), np.sin(angle)])))

    base = np.stack([at(t, a) for t, a in zip(rng.uniform(0, 9.5, 100), rng.uniform(0, 6.28, 100))])
    outputs = []
    for far, flags in ((10.2, []), (9.0, []), (10.2, ["--diagnostics"])):
        data = base.copy()
        data[0] = at(far, 0.3)
        np.save(tmp_path / "x.npy", data)
        assert main(["release", "mean", str(tmp_path / "x.npy"), "--manifold", "hyperbolic:2",
                     "--epsilon", "1", "--center", "1,0,0", "--radius", "10.5", "--restrict",
                     "--seed", "0", "--quiet", *flags]) == 0
        captured = capsys.readouterr()
        outputs.append((json.loads(captured.out), captured.err))
    (first, err_first), (second, err_second), (diag, _) = outputs
    assert first["warnings"] == second["warnings"] == [] and err_first == err_second == ""
    assert any("beyond distance" in w for w in diag["diagnostics_not_private"]["warnings"])


class AnyProposal(RiemannianLaplace):
    """Planted bug (the rule before the fix): below min_acceptance at the footpoint, proposal A
    whenever the unrestricted law exists, even where its own exact sampler fails its pilot."""

    def _restricted_choice(self, footpoint, rng, refuse=True):
        which, rate = super()._restricted_choice(footpoint, rng, refuse)
        return ("A" if rate < self.min_acceptance else which), rate


class WholeBatchRaises(RiemannianLaplace):
    """Planted bug: one unrepresentable SPD proposal makes the whole batch raise."""

    def _exact_unrestricted(self, footpoint, n, rng, drop_unrepresentable=False):
        return super()._exact_unrestricted(footpoint, n, rng)


def _outcomes(law, manifold, footpoint, ball, scale, draws, **options):
    """How often a fresh mechanism releases, and exactly, at ``footpoint``, over ``draws``."""
    return int(_exact_flags(law, manifold, footpoint, ball, scale, draws,
                            np.random.default_rng(5), **options).sum())


@pytest.mark.filterwarnings("ignore::geodp.mechanisms.ApproximateSamplerWarning")
def test_unusable_proposal_never_decides_at_the_edge():
    """SO(4), ball of radius 1.2, scale 1.5: tangent rejection (proposal A) fails its own pilot,
    so the plan rests on uniform proposals (B). At the ball's edge B's pilot falls below a
    min_acceptance of 0.45: the draws stay exact there (A is never taken); the planted bug turns
    to A and, A failing, to chains."""
    from geodp.manifolds import SpecialOrthogonal

    m = SpecialOrthogonal(4)
    o = m.origin()
    edge = m.exp(o, m.from_coords(o, 1.2 * np.eye(m.dim)[0]))
    runs = {law: _outcomes(law, m, edge, (o, 1.2), 1.5, 8, min_acceptance=0.45)
            for law in (RiemannianLaplace, AnyProposal)}
    assert runs[RiemannianLaplace] == 8 and runs[AnyProposal] == 0


def test_unrepresentable_proposals_are_rejected_not_raised():
    """SPD(2), public ball of radius 22 around I (it holds matrices of condition e^31), scale
    0.45, footpoint on the ball's edge: proposals of the unrestricted law that double precision
    cannot hold are rejected like draws outside the ball (the law is restricted to the public set
    of representable points), so every release goes through; the planted bug raised on 85% of
    releases there and on none at the center, a refusal that told where the data's mean lies."""
    from geodp.manifolds import SPD

    m = SPD(2)
    q = np.array([[1.0, 1.0], [-1.0, 1.0]]) / np.sqrt(2)
    edge = q @ np.diag(np.exp([22 / np.sqrt(2), -22 / np.sqrt(2)])) @ q.T
    runs = {law: _outcomes(law, m, edge, (np.eye(2), 22.0), 0.4536, 30)
            for law in (RiemannianLaplace, WholeBatchRaises)}
    assert runs[RiemannianLaplace] == 30 and runs[WholeBatchRaises] < 15


def test_uniform_proposals_of_the_restricted_law_never_give_up(monkeypatch):
    """random_ball gives up after 10^6 proposals at a low rate; how many proposals proposal B
    asks for depends on the footpoint, so inside the restricted sampler it must not give up
    (whether B is usable at all is decided from its public rate). With the give-up threshold
    raised so that any rejection counts, random_ball itself raises and B still draws."""
    import geodp.manifolds.base as base
    from geodp.manifolds import Sphere

    monkeypatch.setattr(base, "BALL_MIN_RATE", 1.0)
    m, north = Sphere(2), np.array([0.0, 0.0, 1.0])
    with pytest.raises(RuntimeError, match="accepts fewer"):
        m.random_ball(north, 1.0, 1_000_000, np.random.default_rng(0))
    mech = RiemannianLaplace(m, 0.5, restrict_to=(north, 1.0))
    kept = mech._restricted_proposals(north, 1_000_000, np.random.default_rng(0), "B")
    assert 0 < len(kept) < 1_000_000

"""Checks that data lie in the ball a sensitivity bound assumes, and clipping into it."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ..chunked import ChunkedSample
from ..manifolds import Manifold
from ..manifolds.base import Array, represents_distance, reproject
from ..manifolds.capabilities import has
from ..parameters import ParameterError


CLIP_WARNING = 0.05
"""Fraction of the records moved by clipping above which ``ClippingWarning`` is issued."""


class ClippingWarning(UserWarning):
    """Clipping moved a large share of the records onto the public ball's boundary.

    A diagnostic: whether it is raised depends on the data without noise, so the command line
    publishes it only with ``--diagnostics`` (as every warning not marked ``public``)."""


def python_keyword(option: str) -> str:
    """How a Python caller writes an option: the keyword itself (``clip_data=True``, ``x_range``)."""
    return option


class _Spelling(dict):
    """Option names in braces of a message template, written by ``spell``."""

    def __init__(self, spell: Callable[[str], str]):
        super().__init__()
        self.spell = spell

    def __missing__(self, option: str) -> str:
        return self.spell(option)


class RecordsOutsideBound(ValueError):
    """Records lie outside the public bound a sensitivity assumes, and clipping was not asked for.

    The message says neither how many records nor how far (exact data statistics: whoever sees
    the error could probe an outlier at no privacy cost); ``count`` holds the number for the
    data curator. ``bound`` and ``alternative`` may name options
    in braces (``"{x_range} = (0, 1)"``); ``spell`` writes them, and ``clip_data=True``, in the
    caller's interface: the Python keywords by default, ``spelled`` re-words the refusal for
    another (the command line's ``--x-range`` and ``--clip-data``).
    """

    def __init__(self, count: int, n: int, bound: str, remedy: str, alternative: str,
                 spell: Callable[[str], str] = python_keyword):
        self.count, self.n, self.bound = count, n, bound
        self.remedy, self.alternative, self.spell = remedy, alternative, spell
        names = _Spelling(spell)
        super().__init__(f"one or more {bound.format_map(names)}; the sensitivity bound does "
                         f"not hold for them. Pass {spell('clip_data=True')} to {remedy}, or "
                         f"{alternative.format_map(names)}")

    def spelled(self, spell: Callable[[str], str]) -> RecordsOutsideBound:
        """The same refusal with its options written by ``spell`` (a Python keyword -> the
        interface's spelling of it)."""
        return RecordsOutsideBound(self.count, self.n, self.bound, self.remedy, self.alternative,
                                   spell)


#: Eigenvalues that every matrix of a public ball, and of the mechanisms' draws around it, must
#: keep: the products of two such numbers stay normal, with full relative precision.
EIGENVALUE_RANGE = (2.0**-500, 2.0**500)
#: How far beyond the ball, in log-eigenvalue, the mechanisms' draws reach: the SPD Laplace
#: refuses scales whose draws exceed log condition 32 with chance above 1e-12
#: (``spd_laplace.representable_log_condition``), and every log-eigenvalue moves at most that.
NOISE_SPREAD = 32.0
#: Largest relative rounding of tangent norms (``Manifold.norm_rounding``) a public ball may
#: carry (the hyperboloid: within 11.8 R of its origin). A record's term of a sensitivity or of
#: the K-norm gradient is then computed to about 1e-6 of its bound, so the privacy loss it can
#: cause exceeds the stated epsilon by about that fraction (an a-priori estimate, as the
#: certified mean's rounding bound is, not a proof).
MAX_NORM_ROUNDING = 1e-6
#: ``into_ball`` moves a clipped record inside the boundary by this many times the rounding of a
#: distance at the ball (``clip_margin``), so that a later re-check of the clipped record against
#: the same ball (a per-class release without ``clip_data``) never finds it outside; at least
#: ``CLIP_MARGIN_FLOOR`` and at most ``CLIP_MARGIN_CAP`` of the radius.
CLIP_MARGIN_FACTOR = 16.0
CLIP_MARGIN_FLOOR = 1e-12
CLIP_MARGIN_CAP = 1e-3


def check_representable(manifold: Manifold, center: Array, radius: float, *,
                         reach: float | None = None) -> None:
    """Refuse a public ball whose points double precision cannot hold (far hyperbolic or SPD
    points overflow): the mechanisms' draws and iterates would leave the number range, and a
    refusal that only some data sets of the ball trigger would itself reveal them.

    Decided from the public center and radius alone: Exp_c(+-(radius + reach) e_i) must be finite
    along every orthonormal direction e_i (by default twice the radius: the logarithm between
    two points of the ball meets matrices that far out). On matrix manifolds
    (``eigenvalue_range``) the eigenvalues of every point within ``reach`` (default: the radius)
    + ``NOISE_SPREAD`` of the center must also lie in ``EIGENVALUE_RANGE``: a subnormal center
    (1e-315 I) has no relative precision for the certified mean's rounding bound, and around a
    center near 1e307 the Laplace draws overflow though their condition is representable.
    (Intermediate matrices between two points of the ball, such as X^-1/2 Y X^-1/2, are
    relative: their eigenvalues are e^(+-2 radius) whatever the units, which the probes cover.)
    On models whose precision degrades away from an origin (``norm_rounding``: the hyperboloid)
    tangent norms at every point within ``reach`` of the center must hold to
    ``MAX_NORM_ROUNDING``: beyond about 18.7 R from the hyperboloid's origin a unit vector's
    computed norm is off by more than 1, so the domain's membership and the gradients' norms,
    hence the mechanisms' laws, would be garbage. A caller whose later balls lie within ``reach``
    of the center (a released ball inside this one) passes that reach, so the later checks pass
    whenever this one does.
    """
    extent = radius if reach is None else reach
    basis = manifold.from_coords(center, (radius + extent) * np.eye(manifold.dim))
    with np.errstate(all="ignore"):
        probes = np.concatenate([manifold.exp(center, basis), manifold.exp(center, -basis)])
    if not represents_distance(manifold, center, radius) or not np.all(np.isfinite(probes)):
        raise ValueError(f"radius {radius:g} reaches beyond what double precision represents on "
                         f"{manifold!r} (points at that distance, or at twice it, overflow); "
                         f"choose a smaller radius")
    rounding = manifold.norm_rounding(center, extent) if has(manifold, "norm_rounding") else 0.0
    if not rounding <= MAX_NORM_ROUNDING:
        reaches = ("" if reach is None else f" (the release reaches {reach:g} from the center: "
                   f"the statistic released in a private ball, whose center may lie anywhere in "
                   f"this one)")
        raise ValueError(
            f"the public ball (radius {radius:g}{'' if reach is None else f', reach {reach:g}'}) "
            f"reaches points of {manifold!r} where double precision resolves tangent norms, "
            f"hence distances, sensitivities and gradient norms, only to {rounding:.2g} "
            f"relative, above the {MAX_NORM_ROUNDING:g} a release allows{reaches}; around this "
            f"center they hold to it within {_resolved_extent(manifold, center):.4g}: choose a "
            f"smaller radius, or a center nearer the model's origin")
    if has(manifold, "eigenvalue_range"):
        lo, hi = manifold.eigenvalue_range(center, extent + NOISE_SPREAD)
        if not (lo >= EIGENVALUE_RANGE[0] and hi <= EIGENVALUE_RANGE[1]):
            own = manifold.eigenvalue_range(center, 0.0)
            raise ValueError(
                f"the public ball (center with eigenvalues in [{own[0]:.3g}, {own[1]:.3g}], radius "
                f"{radius:g}{'' if reach is None else f', reach {reach:g}'}) holds matrices, or the "
                f"mechanisms' draws around them (log-eigenvalues "
                f"{NOISE_SPREAD:g} further), whose eigenvalues leave [2^-500, 2^500], where double "
                f"precision keeps their products' relative precision; rescale the data (a change "
                f"of units) or choose a smaller radius")


def _resolved_extent(manifold: Manifold, center: Array) -> float:
    """The largest r (to 1e-6) with ``norm_rounding(center, r)`` <= ``MAX_NORM_ROUNDING``
    (0 where the center itself is beyond it), by bisection: the estimate grows with r."""
    lo, hi = 0.0, 1.0
    while manifold.norm_rounding(center, hi) <= MAX_NORM_ROUNDING:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-6 * max(hi, 1.0):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if manifold.norm_rounding(center, mid) <= MAX_NORM_ROUNDING else (lo, mid)
    return lo


def clip_margin(manifold: Manifold, center: Array, radius: float) -> float:
    """The relative margin by which ``into_ball`` moves a clipped record inside the boundary: a
    function of the public ball alone, ``CLIP_MARGIN_FACTOR`` times the absolute rounding of
    distances there (``Manifold.gradient_rounding``: far out on the hyperboloid about
    eps R cosh^2, which a small ball sees at its own scale) over the radius, at least
    ``CLIP_MARGIN_FLOOR`` and at most ``CLIP_MARGIN_CAP`` (also where the estimate overflows)."""
    with np.errstate(all="ignore"):
        rounding = CLIP_MARGIN_FACTOR * float(manifold.gradient_rounding(center, radius)) / radius
    return min(max(CLIP_MARGIN_FLOOR, rounding), CLIP_MARGIN_CAP) if np.isfinite(rounding) \
        else CLIP_MARGIN_CAP


def into_ball(manifold: Manifold, points: Array, center: Array, radius: float,
              outside: Array | None = None) -> tuple[Array, Array]:
    """Each point outside B_radius(center) moved along its geodesic from the center to just
    inside the boundary, P(Exp_c((1 - m) radius Log_c(x)/|Log_c(x)|)) with P =
    ``base.reproject`` (so that the moved point passes ``check_point``: far out on the
    hyperboloid Exp misses the model by more than its tolerance) and the public margin
    m = ``clip_margin`` (so that a re-check of the moved point against the ball passes despite
    the rounding of distances); and the mask of
    the points moved (``outside``: that mask when the caller has it already). A point at the cut
    locus of the center (no single geodesic: ``Manifold.log_or_nan`` is NaN) goes to the center,
    as one whose geodesic double precision cannot follow: a fixed map of each record either way
    (the margin and projection depend on the public ball alone)."""
    if outside is None:
        with np.errstate(invalid="ignore"):
            outside = ~(manifold.dist(center, points) <= radius)  # a NaN distance is outside
    if not outside.any():
        return points, outside
    nd = len(manifold.point_shape)
    with np.errstate(all="ignore"):
        v = manifold.log_or_nan(center, points[outside])
        target = np.array(np.broadcast_to(center, v.shape), dtype=float)
        ok = np.all(np.isfinite(v.reshape(len(v), -1)), axis=1)  # Exp is never asked of a NaN
        norms = manifold.norm(center, v[ok]).reshape((-1,) + (1,) * nd)
        shrink = radius * (1.0 - clip_margin(manifold, center, radius))
        target[ok] = reproject(manifold, manifold.exp(center, shrink * v[ok] / norms))
    # a record whose geodesic from the center double precision cannot follow goes to the center:
    # still a fixed map of each record, so the guarantee holds for the clipped data
    lost = ~np.all(np.isfinite(target.reshape(len(target), -1)), axis=1)
    target[lost] = center
    moved = np.array(points, dtype=float, copy=True)
    moved[outside] = target
    return moved, outside


def enforce_ball(manifold: Manifold, points: Array | ChunkedSample, center: Array, radius: float,
                 clip_data: bool) -> tuple[Array | ChunkedSample, int]:
    """Points inside B_radius(center), and how many were clipped.

    Without ``clip_data`` a point outside raises ``RecordsOutsideBound`` naming how many (never how
    far). With
    ``clip_data`` each such point moves along its geodesic from the center to the boundary,
    Exp_c(radius Log_c(x)/|Log_c(x)|): a fixed map applied to each record, so the sensitivity
    bound (and the guarantee) holds for the clipped data.

    ``points`` may be a ``ChunkedSample``: one distributed pass then checks every chunk on the
    manifold (naming a bad chunk) and counts the records outside the ball, and the clipping is
    applied lazily, chunk by chunk; the records never reach the client.
    """
    check_representable(manifold, center, radius)
    chunked = isinstance(points, ChunkedSample)
    if chunked:
        def outside(x: Array, w: Array) -> int:
            return int(np.sum(~(manifold.dist(center, manifold.check_point(x)) <= radius)))

        n, count = points.n, int(points.reduce(outside, lambda a, b: a + b))
    else:
        with np.errstate(invalid="ignore"):
            outside = ~(manifold.dist(center, points) <= radius)  # a NaN distance is outside
        n, count = len(points), int(outside.sum())
    if count == 0:
        return points, 0
    if not clip_data:
        raise RecordsOutsideBound(count, n, f"points lie outside the ball of radius {radius:g} "
                                  f"around the center", "move them onto the boundary",
                                  "choose a larger public {radius} (fixed without looking at "
                                  "the data)")
    if chunked:
        clipped = points.map_points(lambda x: into_ball(manifold, x, center, radius)[0])
    else:
        clipped, _ = into_ball(manifold, points, center, radius, outside)
    if count > CLIP_WARNING * n:
        warnings.warn(f"clipping moved more than {CLIP_WARNING:.0%} of the records onto the "
                      f"boundary of the public ball: the release describes the clipped data, and a "
                      f"radius this small distorts it (the count is in the release's diagnostics)",
                      ClippingWarning, stacklevel=3)
    return clipped, count


def check_condition_cap(manifold: Manifold, center: Array, max_condition: float | None) -> None:
    """Validate a public condition cap K = ``max_condition`` before any data are read: a number
    >= 1, on a manifold where the cap has a meaning (the ``cap_condition`` capability), and no
    smaller than the public center's condition (the ball's geodesics from the center then keep
    condition <= K: the certified mean's projection relies on it). Errors name
    ``max_condition`` and quote public values only."""
    if max_condition is None:
        return
    if not has(manifold, "cap_condition"):
        raise ParameterError(f"{{max_condition}} applies to manifolds whose points have a "
                             f"condition number with a geodesically convex cap (affine-invariant "
                             f"SPD), not to {manifold!r}", "max_condition")
    try:
        k = float(max_condition)
    except (TypeError, ValueError):
        k = float("nan")
    if not (np.isfinite(k) and k >= 1.0 + 1e-6):
        raise ParameterError(f"{{max_condition}} must be a finite number >= 1 + 1e-6 (a bound on "
                             f"lambda_max / lambda_min of every record, above the margin records "
                             f"are capped by), got {max_condition!r}", "max_condition")
    limit = 1.0 / (32.0 * float(np.finfo(float).eps) * np.shape(center)[-1])
    if not k <= limit:
        raise ParameterError(f"{{max_condition}} = {k:g} exceeds {limit:.3g}, beyond which the "
                             f"rounding of a capped record's reconstruction (relative n eps K) "
                             f"leaves no margin below the cap; give a smaller {{max_condition}}",
                             "max_condition")
    own = float(manifold.condition_numbers(center))
    if not own <= k:
        raise ParameterError(f"{{max_condition}} = {k:g} is below the condition number "
                             f"{own:.6g} of the public center: choose a center of condition at "
                             f"most {{max_condition}} (e.g. a multiple of the identity) or a "
                             f"larger {{max_condition}}", "max_condition", "center")


def enforce_condition(manifold: Manifold, points: Array | ChunkedSample,
                      max_condition: float | None,
                      clip_data: bool) -> tuple[Array | ChunkedSample, int]:
    """Records of condition at most K = ``max_condition`` (``Manifold.condition_numbers``), and
    how many were capped; unchanged when no cap is given.

    Without ``clip_data`` a record above K raises ``RecordsOutsideBound`` naming
    ``max_condition`` (never how many records nor their conditions); with it each such record
    is replaced by its metric projection onto {cond <= K} (``Manifold.cap_condition``: the same
    eigenvectors, log-eigenvalues clipped to a window of width log K), a fixed map of each record,
    so neighbouring data sets stay neighbours. Call it before ``enforce_ball``: clipping into the
    ball afterwards keeps condition <= K when the center's is (``check_condition_cap``).
    """
    if max_condition is None:
        return points, 0
    k = float(max_condition)
    if isinstance(points, ChunkedSample):
        n = points.n
        count = int(points.reduce(lambda x, w: int(np.sum(~(manifold.condition_numbers(x) <= k))),
                                  lambda a, b: a + b))
    else:
        n, count = len(points), int(np.sum(~(manifold.condition_numbers(points) <= k)))
    if count == 0:
        return points, 0
    if not clip_data:
        raise RecordsOutsideBound(count, n, "records have a condition number above "
                                  "{max_condition}", "cap their condition numbers (eigenvalues "
                                  "clipped to that ratio, eigenvectors kept)",
                                  "choose a larger public {max_condition} (fixed without looking "
                                  "at the data)")
    if isinstance(points, ChunkedSample):
        return points.map_points(lambda x: manifold.cap_condition(x, k)), count
    return manifold.cap_condition(points, k), count


def clipped_tangent_coords(manifold: Manifold, base: Array, points: Array,
                           bound: float) -> tuple[Array, Array]:
    """Orthonormal coordinates of Log_base(x_i), each of norm above ``bound`` scaled back to it
    (the same as clipping x_i along its geodesic from ``base``).

    Parameters
    ----------
    manifold : Manifold
    base : array (*point_shape)
        A public or released point.
    points : array (n, *point_shape)
    bound : float
        The public norm bound.

    Returns
    -------
    coords : array (n, dim), rows of norm <= ``bound``
    clipped : bool array (n,), the rows that were scaled back (a non-private diagnostic)
    """
    with np.errstate(all="ignore"):
        coords = manifold.to_coords(base, manifold.log_or_nan(base, points))
    # a record whose log double precision cannot give, or at the cut locus of the base (no single
    # log), contributes 0: a fixed map of the record and the public or released base, so the
    # sensitivities hold and nothing branches on the data
    coords[~np.all(np.isfinite(coords), axis=-1)] = 0.0
    norms = np.linalg.norm(coords, axis=-1)
    clipped = norms > bound
    coords *= np.minimum(1.0, bound / np.maximum(norms, 1e-300))[..., None]
    return coords, clipped

"""The object every private release returns, split into what may be published and what may not."""

from __future__ import annotations

import warnings
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..parameters import Spelled
from ..privacy import BudgetLedger, Guarantee

DIAGNOSTICS_NOTE = ("NOT PRIVATE: computed from the data without noise (records clipped, iterations, "
                    "sampler acceptance, R-hat, losses); for the data curator only, never publish")


class LargeDeltaWarning(Spelled, UserWarning):
    """An (epsilon, delta)-DP target whose delta is at least 1/n: such a guarantee allows a
    mechanism that publishes a random record in the clear (the usual sanity bound is delta < 1/n,
    and far smaller in practice). Raised from public parameters: ``public``."""

    public = True


class NoiseDominatesWarning(Spelled, UserWarning):
    """The noise scale exceeds the diameter of the public ball (or of the space): every
    possible data set gives nearly the same law, so the release carries almost no information.
    Raised from public parameters: ``public``."""

    public = True


class ToleranceDominatesWarning(Spelled, UserWarning):
    """The computed mean's worst-case tolerance under a condition cap adds more to the
    sensitivity than Theorem 2's Delta itself: the cap is large for double precision, and a
    smaller public cap (with ``clip_data``) gives less noise. Raised from public parameters:
    ``public``."""

    public = True


def tolerance_caveat(slack: float, sensitivity: float,
                     max_condition: float | None) -> ToleranceDominatesWarning | None:
    """Warn and return a ``ToleranceDominatesWarning`` when a cap's slack 2 tau / lambda exceeds
    Theorem 2's sensitivity; None otherwise (or without a cap)."""
    if max_condition is None or not slack > sensitivity:
        return None
    return _warned(ToleranceDominatesWarning(
        f"{{max_condition}} = {max_condition:g} makes the computed mean's worst-case tolerance "
        f"add {slack:.3g} to the sensitivity {sensitivity:.3g} (the rounding bound grows as "
        f"eps n^2 K^2): a smaller public {{max_condition}} with {{clip_data}} reduces the noise",
        "max_condition", "clip_data"))


def _warned(caveat: Warning) -> Warning:
    """``caveat``, once warned at the caller of the function that built it."""
    warnings.warn(caveat, stacklevel=4)
    return caveat


def delta_caveat(delta: float | None, n: int) -> LargeDeltaWarning | None:
    """Warn and return a ``LargeDeltaWarning`` for a delta >= 1/n (n public); None otherwise."""
    if delta is None or not delta >= 1.0 / n:
        return None
    return _warned(LargeDeltaWarning(
        f"{{delta}} = {delta:g} is at least 1/n = {1.0 / n:.3g} for the n = {n} records: "
        f"(epsilon, delta)-DP with delta >= 1/n allows publishing a random record in the clear, "
        f"so it protects no one; the usual bound is delta < 1/n, far smaller in practice", "delta"))


def diameter_bound(manifold) -> float:
    """An upper bound on the diameter of ``manifold``: its ``diameter`` capability, else
    pi / sqrt(k_min) when the sectional curvature is at least k_min > 0 (Bonnet-Myers), else inf."""
    from ..manifolds.capabilities import has

    if has(manifold, "diameter"):
        return float(manifold.diameter)
    if has(manifold, "curvature_bounds") and manifold.curvature_bounds[0] > 0:
        return float(np.pi / np.sqrt(manifold.curvature_bounds[0]))
    return float("inf")


def noise_caveat(scale: float, radius: float, diameter: float) -> NoiseDominatesWarning | None:
    """Warn and return a ``NoiseDominatesWarning`` when the noise ``scale`` exceeds the smaller
    of the ball's diameter 2 ``radius`` and the space's ``diameter``; None otherwise."""
    span = min(2.0 * radius, diameter)
    if not scale > span:
        return None
    return _warned(NoiseDominatesWarning(
        f"the noise scale {scale:.3g} exceeds the diameter {span:.3g} of the public ball: the "
        f"release is nearly independent of the data and carries almost no information (a larger "
        f"{{epsilon}}, more records or a {{radius}} further below its bound reduce it)",
        "epsilon", "radius"))


@dataclass(frozen=True)
class Release:
    """A private output with the guarantee it carries and how it was produced.

    ``value`` is a point, or a dict of named parts (a regression's footpoint and shooting
    vector). ``guarantee`` states the privacy notion, its numbers and its neighbouring relation
    (``guarantee.relation``); ``theorem`` names the result it rests on. ``exact_sampler`` is
    False when the noise came from MCMC: the guarantee then holds for the mechanism's target law,
    and the chain's output only approximates that law.

    ``public`` is what may be published: the value, the guarantee and the public parameters
    (``parameters``: settings and bounds fixed before seeing the data, such as n under
    replace-one neighbours, the clipping norm or the noise multiplier). ``diagnostics`` holds
    statistics computed from the data without protection (records clipped, iterations, sampler
    acceptance, R-hat, loss traces): they are not covered by the guarantee and are for the data
    curator only.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp import private_frechet_mean
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> x = m.exp(m.origin(), 0.1 * np.random.default_rng(0).normal(size=(200, 3)) * [1, 1, 0])
    >>> rel = private_frechet_mean(m, x, 1.0, m.origin(), 0.5, rng=0)
    >>> rel.public['guarantee'], rel.public['relation'], rel.public['exact_sampler']
    ('1-DP (replace-one)', 'replace-one', True)
    >>> 'diagnostics' in rel.public      # noiseless statistics stay out of what is published
    False
    >>> 'Theorem 2' in rel.theorem
    True
    """

    value: np.ndarray | dict[str, np.ndarray]
    guarantee: Guarantee
    sensitivity: float
    scale: float
    mechanism: str
    exact_sampler: bool
    diagnostics: dict[str, Any] = field(default_factory=dict)
    equivalent: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    theorem: str = ""
    caveats: tuple[Spelled, ...] = ()
    """Public facts that weaken the guarantee's meaning (a delta >= 1/n, noise that swamps the
    data), also warned about when the release is made; the ``statement`` repeats them."""

    def __repr__(self) -> str:
        if isinstance(self.value, dict):
            shape = ", ".join(f"{k} {np.shape(v)}" for k, v in self.value.items())
        else:
            shape = f"value shape {np.shape(self.value)}"
        return (f"Release({self.mechanism}, {self.guarantee.describe()}, {shape}, "
                f"sensitivity {self.sensitivity:.4g}, scale {self.scale:.4g}, "
                f"exact_sampler={self.exact_sampler})")

    @property
    def statement(self) -> str:
        """The guarantee in words: notion, relation, and whether the sampler is exact."""
        claim = f"{self.guarantee.describe()}: {self.guarantee.relation.meaning}"
        claim += "".join(f" (caveat: {c})" for c in self.caveats)
        if self.exact_sampler:
            return f"{claim}; exact sampler"
        return (f"{claim}, for the mechanism's target law; the sampler is MCMC, so the released "
                f"value is only approximately from that law (approximate guarantee)")

    @property
    def public(self) -> dict[str, Any]:
        """What may be published: value, guarantee (with relation and sampler) and public
        parameters, as JSON-ready values."""
        value = ({k: np.asarray(v).tolist() for k, v in self.value.items()}
                 if isinstance(self.value, dict) else np.asarray(self.value).tolist())
        return {"value": value, "guarantee": self.guarantee.describe(),
                "relation": self.guarantee.relation.value, "statement": self.statement,
                "exact_sampler": self.exact_sampler, "theorem": self.theorem,
                "guarantee_parameters": self.guarantee.as_dict(), "mechanism": self.mechanism,
                "sensitivity": self.sensitivity, "scale": self.scale,
                "parameters": dict(self.parameters), "equivalent_guarantees": dict(self.equivalent)}

    def as_dict(self, diagnostics: bool = False) -> dict[str, Any]:
        """``public``; with ``diagnostics=True`` also the non-private diagnostics, under a key that
        says so."""
        out = self.public
        if diagnostics:
            out["diagnostics_not_private"] = {"note": DIAGNOSTICS_NOTE, **self.diagnostics}
        return out


def reserved(ledger: BudgetLedger | None, guarantee: Guarantee, label: str) -> AbstractContextManager:
    """The ledger's reservation of ``guarantee`` as a context manager, taken before any randomness
    is drawn: marked done when the block completes, kept when it raises (noise may have been drawn,
    so the failure itself is an output). Without a ledger, a no-op."""
    if ledger is None:
        return nullcontext()
    if not callable(getattr(ledger, "reserve", None)):
        from ..parameters import ParameterTypeError

        raise ParameterTypeError(f"{{ledger}} must be a budget ledger (geodp.privacy.BudgetLedger"
                                 f"(path, total_epsilon), or MemoryLedger) or None, got "
                                 f"{type(ledger).__name__}", "ledger")
    return ledger.reserve(guarantee, label=label)

"""One shape for the mechanisms of a private Fréchet mean, and the registry that lists them.

A ``Mechanism`` says which guarantees it gives (``notions``), which manifold capabilities it
needs (``requires``, asked with ``capabilities.require``, never a class test), whether it needs
a Hadamard manifold, which capability gives it an exact sampler (``exact_with``; without it the
release needs ``allow_approximate=True``), how it calibrates (``calibrate``: a noise family and
a sensitivity) and the theorem its guarantee rests on (``theorem``).

Two kinds of mechanism exist. An OUTPUT mechanism (``OutputMechanism``) perturbs the computed
statistic: ``sampler`` returns a law centred at a point, and ``private_frechet_mean`` releases
any registered output mechanism without knowing its name. An OBJECTIVE mechanism (K-norm
gradient, DP-RGD) puts the noise inside the estimator, so its release lives with the estimator
(``geodp.learn``) and ``sampler`` refuses. ``private_frechet_mean``, the command line's
``--mechanism`` choices and the contract test over registry x manifolds are driven by
``MECHANISMS``; adding an output mechanism is one subclass and one ``register`` call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .._lazy import lazy_attributes
from ..manifolds.capabilities import has, require

if TYPE_CHECKING:  # the laws load when a mechanism builds one: reading the registry (the command
    # line's help does) imports neither NumPy nor SciPy
    import numpy as np

    from ..manifolds import Manifold
    from ..manifolds.base import Array
    from ..privacy import Guarantee
    from .laplace import SamplerInfo

#: The laws the output mechanisms build, module attributes loaded on first use (``law``).
__getattr__, __dir__ = lazy_attributes(__name__, globals(), {
    "RiemannianLaplace": "geodp.mechanisms.laplace", "WrappedLaplace": "geodp.mechanisms.wrapped",
    "WrappedGaussian": "geodp.mechanisms.wrapped"})


def law(name: str) -> type:
    """The law class ``name`` as this module holds it (loaded on first use)."""
    return globals()[name] if name in globals() else __getattr__(name)


#: The guarantee arguments a mechanism may take: "epsilon" (pure), "epsilon-delta", "mu" (GDP),
#: "rdp" ((alpha, eps)-RDP).
NOTIONS = ("epsilon", "epsilon-delta", "mu", "rdp")


class Sampler(Protocol):
    """A law centred at a point: what an output mechanism's ``sampler`` returns."""

    last_info: SamplerInfo | None

    def check_exact(self) -> None:
        """Refuse, from public parameters only, a law no exact sampler can draw."""

    def sample(self, center: Array, size=None, rng: np.random.Generator | int | None = None) -> Array:
        """Draws of shape size + point_shape around ``center``."""


@dataclass(frozen=True)
class Mechanism:
    """A release mechanism of the Fréchet mean: its name, theorem, guarantees and needs.

    Parameters
    ----------
    name : str
        The registry key (``mechanism=`` in Python, ``--mechanism`` on the command line).
    summary : str
        One line for the command line's help.
    title : str
        The name a release states (``Release.mechanism``).
    theorem : str
        The result the guarantee rests on, with the sensitivity it uses (``Release.theorem``).
    notions : tuple of str
        The guarantees it gives, among ``NOTIONS``.
    requires : tuple of str
        Manifold capabilities it needs (``capabilities.require``).
    exact_with : tuple of str
        Capabilities any one of which gives an exact sampler; empty when always exact.
    hadamard : bool
        Whether its proof needs a Hadamard manifold.
    noise : {"laplace", "gaussian"} or None
        Its noise family, for ``privacy.calibrate``; None for mechanisms that calibrate through
        their own sensitivity and accountant.
    secure : bool
        Whether it can draw from the operating system's randomness (``secure=True``).
    always_exact : bool
        Whether its own law never needs MCMC, whatever the manifold (``allow_approximate`` then
        has no effect on it and is refused).
    """

    name: str
    summary: str
    title: str
    theorem: str
    notions: tuple[str, ...]
    requires: tuple[str, ...]
    exact_with: tuple[str, ...] = ()
    hadamard: bool = False
    noise: str | None = None
    secure: bool = False
    always_exact: bool = False

    #: "output" (a law centred at the statistic) or "objective" (noise inside the estimator).
    perturbs = "objective"
    #: Whether the law is centred through a footpoint of the caller's choice (``footpoint=``).
    takes_footpoint = False
    #: The theorem of the law conditioned on the data ball (``restrict=True``), if it has one.
    restricted_theorem: str | None = None

    def check(self, manifold: Manifold) -> None:
        """Raise ``MissingCapability`` (naming what is missing) or ``NotHadamardError`` unless
        this mechanism's theory applies on ``manifold``; called before any budget is reserved."""
        require(manifold, self.requires, by=f"the {self.name} mechanism")
        if self.hadamard:
            from .wrapped import check_hadamard

            check_hadamard(manifold)

    def calibrate(self, target: Guarantee, sensitivity: float, *, restrict: bool = False) -> float:
        """The noise scale that gives ``target`` at ``sensitivity`` (``privacy.calibrate`` for the
        mechanism's noise family; KNG and DP-RGD calibrate through their own sensitivities and
        accountants)."""
        from ..privacy.calibration import calibrate

        if self.noise is None:
            raise ValueError(f"the {self.name} mechanism calibrates through its own accountant")
        return calibrate(self.noise, target, sensitivity)

    def exact_on(self, manifold: Manifold) -> bool:
        """Whether ``manifold`` gives this mechanism an exact sampler (else MCMC, on request)."""
        return not self.exact_with or any(has(manifold, c) for c in self.exact_with)

    def sampler(self, manifold: Manifold, scale: float, *, ball: tuple[Array, float],
                footpoint: Array | None = None, restrict: bool = False,
                allow_approximate: bool = False, max_condition: float | None = None) -> Sampler:
        """The law at ``scale`` (an output mechanism's); objective mechanisms have none."""
        raise NotImplementedError(f"the {self.name} mechanism perturbs the estimator's objective, "
                                  f"not its output: it has no law centred at a point")


@dataclass(frozen=True)
class OutputMechanism(Mechanism):
    """A mechanism that releases a draw from a law centred at the computed statistic."""

    perturbs = "output"


@dataclass(frozen=True)
class LaplaceMechanism(OutputMechanism):
    """The Riemannian Laplace law exp(-rho(eta, x) / scale) (``RiemannianLaplace``); restricted
    to the data ball, its normaliser depends on eta and the scale doubles (Theorem 3 of Reimherr,
    Bharath & Soto 2021)."""

    restricted_theorem: str | None = None

    def calibrate(self, target: Guarantee, sensitivity: float, *, restrict: bool = False) -> float:
        return (2.0 if restrict else 1.0) * super().calibrate(target, sensitivity)

    def sampler(self, manifold: Manifold, scale: float, *, ball: tuple[Array, float],
                footpoint: Array | None = None, restrict: bool = False,
                allow_approximate: bool = False, max_condition: float | None = None) -> Sampler:
        """Exact where the manifold allows; MCMC chains start in ``ball`` when allowed;
        ``max_condition`` bounds the footpoints' condition (``RiemannianLaplace``)."""
        return law("RiemannianLaplace")(manifold, scale, restrict_to=ball if restrict else None,
                                        allow_approximate=allow_approximate, chain_ball=ball,
                                        max_condition=max_condition)


@dataclass(frozen=True)
class WrappedMechanism(OutputMechanism):
    """Tangent noise at a public footpoint p0, pushed forward by Exp_p0 (exp-wrapped paper):
    the Laplace (``noise="laplace"``) or the Gaussian family."""

    takes_footpoint = True
    always_exact: bool = True

    def sampler(self, manifold: Manifold, scale: float, *, ball: tuple[Array, float],
                footpoint: Array | None = None, restrict: bool = False,
                allow_approximate: bool = False, max_condition: float | None = None) -> Sampler:
        """Always exact; the footpoint defaults to the ball's center (its draws' precision is
        checked from the tangent radius, so ``max_condition`` changes nothing here)."""
        family = law("WrappedLaplace" if self.noise == "laplace" else "WrappedGaussian")
        return family(manifold, scale, ball[0] if footpoint is None else footpoint)


MECHANISMS: dict[str, Mechanism] = {}


def register(mechanism: Mechanism) -> None:
    """Add ``mechanism`` under its name."""
    if mechanism.name in MECHANISMS:
        raise ValueError(f"a mechanism {mechanism.name!r} is already registered")
    if not set(mechanism.notions) <= set(NOTIONS):
        raise ValueError(f"notions must be among {NOTIONS}, got {mechanism.notions}")
    MECHANISMS[mechanism.name] = mechanism


def lookup(name: str) -> Mechanism:
    """The registered mechanism ``name``, or a ValueError listing the choices."""
    if name not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {tuple(MECHANISMS)}, got {name!r}")
    return MECHANISMS[name]


_GEOMETRY = ("log", "curvature_bounds", "injectivity_radius")
register(LaplaceMechanism(
    "laplace", "Riemannian Laplace (Reimherr, Bharath & Soto 2021; any manifold)",
    "Riemannian Laplace (Reimherr et al. 2021)",
    "Riemannian Laplace mechanism (Reimherr, Bharath & Soto 2021, Theorem 1) with the Fréchet-mean "
    "sensitivity of their Theorem 2", ("epsilon",), _GEOMETRY,
    exact_with=("radial_volume", "eigen_laplace_size", "before_cut_locus"), noise="laplace",
    restricted_theorem="Riemannian Laplace restricted to the data ball (Reimherr, Bharath & Soto "
                       "2021, Theorem 3) with the sensitivity of their Theorem 2"))
register(WrappedMechanism(
    "wrapped-laplace", "exponential-wrapped Laplace (Hadamard manifolds)",
    "exponential-wrapped Laplace",
    "exponential-wrapped Laplace (Theorem 3.1 of the exp-wrapped paper) with the tangent "
    "sensitivity at the footpoint", ("epsilon",), _GEOMETRY, hadamard=True, noise="laplace"))
register(WrappedMechanism(
    "wrapped-gaussian", "exponential-wrapped Gaussian (Hadamard manifolds)",
    "exponential-wrapped Gaussian",
    "exponential-wrapped Gaussian (Theorems 3.2-3.4 of the exp-wrapped paper) with the tangent "
    "sensitivity at the footpoint", ("epsilon-delta", "mu", "rdp"), _GEOMETRY, hadamard=True,
    noise="gaussian"))
register(Mechanism(
    "dp-rgd", "DP Riemannian gradient descent (Han et al.; any manifold with log)",
    "DP Riemannian gradient descent (Fréchet mean)",
    "DP Riemannian gradient descent (Han, Mishra, Jawanpuria & Gao, Algorithm 1) on the Fréchet "
    "function, per-record gradient sensitivity 2r max(1, t / sin t)", ("epsilon-delta",),
    _GEOMETRY, secure=True, always_exact=True))
register(Mechanism(
    "kng", "K-norm gradient mechanism (Reimherr & Awan; Soto et al.)",
    "K-norm gradient Fréchet mean",
    "K-norm gradient mechanism (Reimherr & Awan 2019, Theorem 3.2) with the gradient sensitivity "
    "of the Fréchet function (kng_mean_sensitivity)", ("epsilon",),
    _GEOMETRY + ("volume_density",)))

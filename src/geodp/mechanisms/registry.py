"""One shape for the mechanisms of a private Fréchet mean, and the registry that lists them.

A ``Mechanism`` says which guarantees it gives (``notions``), which manifold capabilities it
needs (``requires``, asked with ``capabilities.require``, never a class test), whether it needs
a Hadamard manifold, and which capability gives it an exact sampler (``exact_with``; without
it the release needs ``allow_approximate=True``). ``private_frechet_mean``, the command line's
``--mechanism`` choices and the contract test over registry x manifolds are driven by
``MECHANISMS``. Adding a mechanism is one subclass and one ``register`` call.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..manifolds import Manifold
from ..manifolds.capabilities import has, require
from ..privacy import Guarantee
from ..privacy.calibration import calibrate

#: The guarantee arguments a mechanism may take: "epsilon" (pure), "epsilon-delta", "mu" (GDP),
#: "rdp" ((alpha, eps)-RDP).
NOTIONS = ("epsilon", "epsilon-delta", "mu", "rdp")


@dataclass(frozen=True)
class Mechanism:
    """A release mechanism of the Fréchet mean: its name, theorem, guarantees and needs."""

    name: str
    summary: str
    notions: tuple[str, ...]
    requires: tuple[str, ...]
    exact_with: tuple[str, ...] = ()
    hadamard: bool = False
    noise: str | None = None

    def check(self, manifold: Manifold) -> None:
        """Raise ``MissingCapability`` (naming what is missing) or ``NotHadamardError`` unless
        this mechanism's theory applies on ``manifold``; called before any budget is reserved."""
        require(manifold, self.requires, by=f"the {self.name} mechanism")
        if self.hadamard:
            from .wrapped import check_hadamard

            check_hadamard(manifold)

    def calibrate(self, target: Guarantee, sensitivity: float) -> float:
        """The noise scale that gives ``target`` at ``sensitivity`` (``privacy.calibrate`` for the
        mechanism's noise family; KNG and DP-RGD calibrate through their own sensitivities and
        accountants)."""
        if self.noise is None:
            raise ValueError(f"the {self.name} mechanism calibrates through its own accountant")
        return calibrate(self.noise, target, sensitivity)

    def exact_on(self, manifold: Manifold) -> bool:
        """Whether ``manifold`` gives this mechanism an exact sampler (else MCMC, on request)."""
        return not self.exact_with or any(has(manifold, c) for c in self.exact_with)


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


register(Mechanism("laplace", "Riemannian Laplace (Reimherr, Bharath & Soto 2021; any manifold)",
                   ("epsilon",), ("log", "curvature_bounds", "injectivity_radius"),
                   exact_with=("radial_volume", "eigen_laplace_size", "before_cut_locus"),
                   noise="laplace"))
register(Mechanism("wrapped-laplace", "exponential-wrapped Laplace (Hadamard manifolds)",
                   ("epsilon",), ("log", "curvature_bounds", "injectivity_radius"), hadamard=True,
                   noise="laplace"))
register(Mechanism("wrapped-gaussian", "exponential-wrapped Gaussian (Hadamard manifolds)",
                   ("epsilon-delta", "mu", "rdp"), ("log", "curvature_bounds", "injectivity_radius"),
                   hadamard=True, noise="gaussian"))
register(Mechanism("dp-rgd", "DP Riemannian gradient descent (Han et al.; any manifold with log)",
                   ("epsilon-delta",), ("log", "curvature_bounds", "injectivity_radius")))
register(Mechanism("kng", "K-norm gradient mechanism (Reimherr & Awan; Soto et al.)",
                   ("epsilon",), ("log", "curvature_bounds", "injectivity_radius", "volume_density")))

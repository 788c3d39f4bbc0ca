"""Privacy accounting: guarantees, conversions, calibration, the RDP accountant and a budget ledger."""

from .calibration import (analytic_gaussian_sigma, classic_gaussian_sigma, gdp_sigma, laplace_scale,
                          rdp_sigma)
from .conversions import (gdp_delta, gdp_epsilon, gdp_mu, gdp_to_pure_equivalent, pure_to_gdp,
                          rdp_to_approx)
from .guarantees import (GDP, RDP, ZCDP, ApproxDP, Guarantee, PureDP, compose, compose_gdp,
                         compose_pure, compose_rdp)
from .ledger import BudgetExceededError, BudgetLedger
from .rdp import ORDERS, RDPAccountant, noise_multiplier_for, subsampled_gaussian_rdp

__all__ = [
    "analytic_gaussian_sigma", "classic_gaussian_sigma", "gdp_sigma", "rdp_sigma", "laplace_scale",
    "gdp_delta", "gdp_epsilon", "gdp_mu", "gdp_to_pure_equivalent", "pure_to_gdp", "rdp_to_approx",
    "Guarantee", "PureDP", "ApproxDP", "GDP", "RDP", "ZCDP",
    "compose", "compose_pure", "compose_gdp", "compose_rdp",
    "RDPAccountant", "noise_multiplier_for", "subsampled_gaussian_rdp", "ORDERS",
    "BudgetLedger", "BudgetExceededError",
]

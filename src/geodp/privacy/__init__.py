"""Privacy accounting: guarantees, conversions, calibration, RDP and PLD accountants, a budget ledger."""

from .accountant import (Accountant, BasicAccountant, GDPAccountant, PLDCompositionAccountant,
                         RDPCurveAccountant)
from .calibration import (analytic_gaussian_sigma, classic_gaussian_sigma, gdp_sigma, laplace_scale,
                          rdp_sigma)
from .conversions import (gdp_delta, gdp_epsilon, gdp_mu, gdp_to_pure_equivalent, pure_to_gdp,
                          rdp_to_approx)
from .guarantees import (GDP, RDP, ZCDP, ApproxDP, Guarantee, PureDP, SubsampledGaussian, compose,
                         compose_gdp, compose_pld, compose_pure, compose_rdp, guarantee_from_dict)
from .ledger import BudgetExceededError, BudgetLedger, MemoryLedger
from .pld import PLDAccountant, PrivacyLossDistribution
from .rdp import ORDERS, RDPAccountant, composed_epsilon, noise_multiplier_for, subsampled_gaussian_rdp

__all__ = [
    "analytic_gaussian_sigma", "classic_gaussian_sigma", "gdp_sigma", "rdp_sigma", "laplace_scale",
    "gdp_delta", "gdp_epsilon", "gdp_mu", "gdp_to_pure_equivalent", "pure_to_gdp", "rdp_to_approx",
    "Guarantee", "PureDP", "ApproxDP", "GDP", "RDP", "ZCDP", "SubsampledGaussian",
    "guarantee_from_dict", "compose", "compose_pure", "compose_gdp", "compose_rdp", "compose_pld",
    "RDPAccountant", "PLDAccountant", "PrivacyLossDistribution", "noise_multiplier_for",
    "composed_epsilon", "subsampled_gaussian_rdp", "ORDERS",
    "BudgetLedger", "BudgetExceededError", "MemoryLedger",
    "Accountant", "BasicAccountant", "GDPAccountant", "RDPCurveAccountant", "PLDCompositionAccountant",
]

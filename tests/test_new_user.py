"""What a new user trips over (issue 32): no tracebacks, no silent coercions, messages that name
the user's own parameter (the CLI flag or the Python keyword) and never quote data statistics."""

from __future__ import annotations

import numpy as np
import pytest

from geodp.manifolds.registry import FAMILIES


def _size_arguments(family):
    """The integer size arguments of one of the family's examples."""
    args, kwargs = next(iter(family.examples.values()))
    return list(args), kwargs


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - {"product"}))
@pytest.mark.parametrize("bad", [2.5, 3.0, True, "3"])
def test_manifold_sizes_must_be_integers(name, bad):
    family = FAMILIES[name]
    args, kwargs = _size_arguments(family)
    for i in range(len(args)):
        wrong = args.copy()
        wrong[i] = bad
        with pytest.raises(TypeError, match="must be an integer"):
            family.build(*wrong, **kwargs)
    assert family.build(*[np.int64(a) for a in args], **kwargs).dim >= 1

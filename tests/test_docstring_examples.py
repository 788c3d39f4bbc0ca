"""The examples in docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["geodp.learn.frechet", "geodp.learn.dp_rgd", "geodp.learn.regression", "geodp.learn.pca",
           "geodp.privacy.pld", "geodp.privacy.rdp"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0

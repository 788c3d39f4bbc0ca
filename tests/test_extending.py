"""docs/extending.md is executable: its example manifold implements the required core and the
capabilities it claims, joins the registry in one line, and every Fréchet-mean mechanism whose
theory applies releases on it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import geodp
from geodp.manifolds import registry
from geodp.manifolds.capabilities import has
from geodp.manifolds.spec import manifold_from_spec
from geodp.mechanisms.registry import MECHANISMS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


@pytest.fixture(scope="module")
def positive_reals():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    namespace: dict = {}
    exec(blocks[0], namespace)  # the class of the page, as printed there
    return namespace["PositiveReals"]()


def test_the_example_satisfies_the_invariants(positive_reals):
    m = positive_reals
    rng = np.random.default_rng(0)
    p, q = np.exp(rng.normal(size=(2, 50, 1)))
    assert np.allclose(m.exp(p, m.log(p, q)), q)
    assert np.allclose(m.dist(p, q), np.abs(np.log(q / p))[..., 0])
    v = m.log(p, q)
    assert np.allclose(m.inner(p, v, v), (m.to_coords(p, v) ** 2)[..., 0])
    assert np.allclose(m.inner(q, m.transport(p, q, v), m.transport(p, q, v)), m.inner(p, v, v))
    assert m.check_point(m.origin()).shape == (1,) and m.is_hadamard
    assert all(has(m, c) for c in ("log", "dist", "radial_volume", "curvature_bounds"))
    assert not has(m, "exp_adjoints")


def test_one_registry_line_makes_it_a_family(positive_reals):
    registry.register("positive", lambda size: type(positive_reals)(),
                      examples={"positive": ((1,), {})})
    try:
        assert repr(manifold_from_spec("positive:1")) == "PositiveReals()"
        assert "positive" in registry.examples()
    finally:
        del registry.FAMILIES["positive"]


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_mechanism_releases_on_the_example(positive_reals, name):
    m = positive_reals
    x = np.exp(np.random.default_rng(1).uniform(-0.5, 0.5, size=(200, 1)))
    args = {"dp-rgd": dict(epsilon=1.0, delta=1e-5), "wrapped-gaussian": dict(mu=1.0)}
    rel = geodp.private_frechet_mean(m, x, center=m.origin(), radius=0.5, mechanism=name, rng=0,
                                     **args.get(name, dict(epsilon=1.0)))
    assert rel.exact_sampler and m.check_point(rel.value).shape == (1,)


@pytest.fixture
def page_mechanism():
    """The mechanism of the page's last block, registered for one test and removed after."""
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    exec(blocks[-1], {})
    try:
        yield MECHANISMS["my-mechanism"]
    finally:
        del MECHANISMS["my-mechanism"]


def test_one_subclass_and_one_register_call_make_a_mechanism(page_mechanism, tmp_path, capsys):
    from geodp.cli import main
    from geodp.manifolds import Sphere

    m = Sphere(2)
    x = m.exp(m.origin(), 0.2 * m.random_direction(m.origin(), 30, np.random.default_rng(0)))
    rel = geodp.private_frechet_mean(m, x, 1.0, m.origin(), 0.4, mechanism="my-mechanism", rng=0)
    assert rel.mechanism == "my mechanism" and rel.theorem == page_mechanism.theorem
    assert rel.exact_sampler and rel.guarantee.describe() == "1-DP (replace-one)"
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "c.npy", m.origin())
    assert main(["release", "mean", str(tmp_path / "x.npy"), "--manifold", "sphere:2",
                 "--center", str(tmp_path / "c.npy"),
                 "--mechanism", "my-mechanism", "--epsilon", "1", "--radius", "0.4",
                 "--seed", "0"]) == 0
    assert '"mechanism": "my mechanism"' in capsys.readouterr().out

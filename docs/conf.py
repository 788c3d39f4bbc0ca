"""Sphinx configuration of geodp's documentation site.

Build (from the repository root; ``pip install '.[docs]'``)::

    python -m sphinx -W --keep-going -n -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
# the checkout's sources win over an installed geodp, so that the site documents this tree
sys.path.insert(0, str(HERE.parent / "src"))
os.environ.setdefault("GEODP_NUM_THREADS", "2")

import geodp  # noqa: E402
from sphinx.pycode import ModuleAnalyzer  # noqa: E402

project = "geodp"
author = "the geodp developers"
copyright = "the geodp developers, BSD-3-Clause"
version = release = geodp.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "geodp_cli_help",
    "geodp_api_pages",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/GALLERY_HEADER.rst"]
templates_path = ["_templates"]

# The site is built offline (no intersphinx inventories): names outside geodp are written in
# plain text, and every cross-reference to geodp must resolve (nitpicky, -n).
nitpicky = True
nitpick_ignore_regex = [
    # numpydoc's parameter types are plain text; these are the external names that autodoc's
    # rendering of dataclass fields and base classes can still produce
    (r"py:.*", r"(numpy|np|scipy|sklearn|dask|collections\.abc|typing|pathlib|sqlite3|argparse)\..*"),
    (r"py:class", r"(Array|Any|Callable|Sampler|Kernel|Iterator|Path|float|int|str|bool|None)"),
    (r"py:class", r"(TransformerMixin|ClassifierMixin|RegressorMixin|BaseEstimator)"),
    (r"py:class", r"(ValueError|UserWarning|RuntimeError|TypeError|Exception|RuntimeWarning)"),
]

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_member_order = "groupwise"
autoclass_content = "class"

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "show_memory": False,
    "min_reported_time": 0,
    "capture_repr": (),
    "backreferences_dir": None,
    "doc_module": ("geodp",),
    "reference_url": {"geodp": None},
}

html_theme = "pydata_sphinx_theme"
html_title = "geodp"
html_static_path = ["_static"]
html_css_files = ["geodp.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "header_links_before_dropdown": 4,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # the page's table of contents on the guide; gallery and API pages use the width for code
    # and figures
    "secondary_sidebar_items": {"*": ["page-toc"], "auto_examples/**": [], "api/**": []},
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}


def _skip_member(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated metadata-routing setters (``set_fit_request``, ...):
    they are scikit-learn's, documented there."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _public_bases(app, name, obj, options, bases):
    """Show only public geodp bases (not ``abc.ABC``, ``object`` or private helpers)."""
    bases[:] = [b for b in bases if b.__module__.startswith("geodp")
                and not b.__name__.startswith("_")] or bases[:0]


def _data_docstring(app, what, name, obj, options, lines):
    """A module constant re-exported by a package (``geodp.privacy.ORDERS``) carries the doc
    comment of the module that defines it; autodoc would show its type's docstring instead."""
    if what != "data":
        return
    short = name.rsplit(".", 1)[-1]
    for module in sorted(m for m in sys.modules if m.startswith("geodp")):
        try:
            docs = ModuleAnalyzer.for_module(module).find_attr_docs()
        except Exception:  # noqa: BLE001 (modules without source: nothing to find)
            continue
        if ("", short) in docs:
            lines[:] = list(docs[("", short)])
            return


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("autodoc-process-docstring", _data_docstring, priority=100)

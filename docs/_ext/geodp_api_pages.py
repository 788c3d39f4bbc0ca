"""Writes one reference page per public module of geodp (``docs/api/<module>.rst``) from the
module's ``__all__``, grouped into classes, functions, exceptions and data, each name with its own
autosummary page. Run at ``config-inited`` (before Sphinx lists the sources), so a name added to ``__all__`` gets its page with no
edit to the documentation."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

MODULES = ["geodp.manifolds", "geodp.mechanisms", "geodp.privacy", "geodp.statistics", "geodp.learn",
           "geodp.estimators", "geodp.datasets", "geodp.audit", "geodp.chunked"]
GROUPS = [("Classes", "class.rst"), ("Functions", "function.rst"),
          ("Exceptions and warnings", "class.rst"), ("Data", "attribute.rst")]


def kind(obj: object) -> str:
    if inspect.isclass(obj):
        return "Exceptions and warnings" if issubclass(obj, BaseException) else "Classes"
    return "Functions" if callable(obj) else "Data"


def public_names(module: str) -> dict[str, list[str]]:
    """The module's ``__all__`` by kind (a module without ``__all__`` is an error: every public
    module states its public names)."""
    mod = importlib.import_module(module)
    groups: dict[str, list[str]] = {g: [] for g, _ in GROUPS}
    for name in mod.__all__:
        groups[kind(getattr(mod, name))].append(name)
    return groups


def module_page(module: str) -> str:
    title = f"``{module}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {module}", "   :no-members:", "",
             f".. currentmodule:: {module}", ""]
    for group, template in GROUPS:
        names = public_names(module)[group]
        if not names:
            continue
        lines += [f".. rubric:: {group}", "", ".. autosummary::", "   :toctree: generated",
                  f"   :template: {template}", "", *(f"   {n}" for n in names), ""]
    return "\n".join(lines)


def write_pages(app, config) -> None:
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    for module in MODULES:
        page = out / f"{module}.rst"
        text = module_page(module)
        if not page.exists() or page.read_text() != text:
            page.write_text(text)


def setup(app):
    app.connect("config-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

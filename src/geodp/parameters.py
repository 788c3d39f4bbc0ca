"""Messages that name a caller's parameters in the caller's own interface.

A message is a template naming each parameter as a field (``"{radius} = 2 is too large"``): a
Python caller reads the keyword (``radius``), the command line re-spells it as its flag
(``--radius``; ``--seed`` for ``rng``) through ``spelled``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


class Spelled:
    """A message whose template names parameters by their Python keywords.

    Parameters
    ----------
    template : str
        The message, with ``{keyword}`` where each parameter is named.
    *keywords : str
        The parameters' Python keywords.
    spell : callable(str) -> str
        Writes a keyword in the caller's interface (the keyword itself by default).
    """

    def __init__(self, template: str, *keywords: str, spell: Callable[[str], str] = str):
        self.template, self.keywords = template, keywords
        super().__init__(template.format(**{k: spell(k) for k in keywords}))

    def spelled(self, spell: Callable[[str], str]) -> Spelled:
        """The same message (same class) naming each parameter as ``spell(keyword)``."""
        return type(self)(self.template, *self.keywords, spell=spell)


class ParameterError(Spelled, ValueError):
    """A parameter's value is refused; the message names it."""


class ParameterTypeError(Spelled, TypeError):
    """A parameter's value is of the wrong kind; the message names it."""


def field(name: str) -> tuple[str, tuple[str, ...]]:
    """The template field naming parameter ``name`` and the keywords it adds: ``"{radius}"`` and
    ``("radius",)`` for a Python keyword, the name itself (braces escaped) and none for a
    description such as ``"domain radius"``, which no interface spells otherwise."""
    if name.isidentifier():
        return f"{{{name}}}", (name,)
    return name.replace("{", "{{").replace("}", "}}"), ()


def literal(text: object) -> str:
    """``str(text)`` for a template: its braces escaped, so a value quoted in a message is
    never read as a field."""
    return str(text).replace("{", "{{").replace("}", "}}")


def option_without_effect(given: Iterable[str], needs: dict[str, tuple[bool, str]], release: str,
                          *names: str) -> ParameterError | None:
    """The refusal of the first option in ``given`` (Python keywords) that has no effect, or None.

    ``needs`` maps an option to (whether it has an effect here, the condition under which it
    has one, a template that may name the parameters ``names``); ``release`` names the release
    it would not affect. The command line passes the options given explicitly, Python the ones
    whose value differs from the default (an explicit default cannot be told apart)."""
    for keyword, (used, condition) in needs.items():
        if keyword in given and not used:
            return ParameterError(f"{{{keyword}}} applies to {condition} only; it would have no "
                                  f"effect on this {release} release: leave it out", keyword,
                                  *names)
    return None

"""``.. geodp-cli-help::`` writes the ``--help`` text of every ``geodp`` subcommand, taken from
the parser itself at build time, so the command-line page cannot drift from the program."""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def _commands(parser: argparse.ArgumentParser, prefix: str):
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{prefix} {name}")


class CliHelp(SphinxDirective):
    """One section per subcommand, titled by the command, holding its help text."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from geodp.cli import build_parser

        os.environ["COLUMNS"] = "100"
        out: list[nodes.Node] = []
        for command, parser in _commands(build_parser(), "geodp"):
            section = nodes.section(ids=[nodes.make_id(command)])
            section += nodes.title(text=command)
            section += nodes.literal_block(text=parser.format_help().rstrip())
            out.append(section)
        return out


def setup(app):
    app.add_directive("geodp-cli-help", CliHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""``{clkit-cli}``: the command-line reference, generated from clkit's argparse parsers.

For each subcommand of :data:`clkit.cli.COMMANDS`, in the order of ``clkit --help``, a
section with the command's summary, its usage line and each argument with its help text,
so that the page cannot drift from what ``clkit COMMAND --help`` prints.
"""

from __future__ import annotations

import argparse

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise LookupError(name)


def _arguments(parser: argparse.ArgumentParser):
    """(name as the user types it, help) of each argument ``--help`` shows."""
    formatter = parser._get_formatter()
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            metavar = "" if action.nargs == 0 else " " + formatter._format_args(
                action, action.dest.upper())
            name = ", ".join(s + metavar for s in action.option_strings)
        else:
            name = formatter._metavar_formatter(action, action.dest)(1)[0]
        yield name, formatter._expand_help(action) if action.help else ""


class ClkitCli(SphinxDirective):
    has_content = False

    def run(self):
        from clkit.cli import COMMANDS, build_parser

        top = build_parser([])
        out = [nodes.literal_block(text=top.format_help().strip(), language="none")]
        for name, (_, _, summary) in COMMANDS.items():
            parser = _subparser(build_parser([name]), name)
            section = nodes.section(ids=[f"clkit-{name}"], names=[f"clkit {name}"])
            section += nodes.title(text=f"clkit {name}")
            section += nodes.paragraph(text=summary[0].upper() + summary[1:] + ".")
            section += nodes.literal_block(text=parser.format_usage().strip(), language="none")
            items = nodes.definition_list()
            for arg, help_text in _arguments(parser):
                item = nodes.definition_list_item()
                term = nodes.term()
                term += nodes.literal(text=arg)
                item += term
                definition = nodes.definition()
                definition += nodes.paragraph(text=help_text)
                item += definition
                items += item
            section += items
            if parser.epilog:
                section += nodes.paragraph(text=parser.epilog)
            self.state.document.note_implicit_target(section)
            out.append(section)
        return out


def setup(app):
    app.add_directive("clkit-cli", ClkitCli)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

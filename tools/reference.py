"""The command reference, docs/cli.md, generated from the app itself (never edited by hand;
``python tools/regenerate.py`` rewrites it).

Each command's usage, help, options by panel (with their type, default and range, as --help
shows them) and examples. The tables of commands (README.md), of lesson functions (docs/api.md)
and of installs (README.md, docs/install.md) are generated the same way, between their markers.
tests/test_help.py fails when a committed file is stale.
"""

from __future__ import annotations

from typing import Any

import typer
import typer.main
from rich.text import Text

from attn_cli.cli.app import SEE_ALSO, command_names, examples, full_app, reflowed, symbols
from attn_cli.cli.flags import flag_for
from attn_cli.course import card, lesson_names
from tools import REGENERATE


def _plain(markup: str) -> str:
    """Help text as written for Rich (with escapes like \\\\[), as plain text."""
    return Text.from_markup(markup).plain


def _option_lines(params: list[Any], ctx: typer.Context) -> list[str]:
    """The options of one panel as a Markdown list: names and type, then the help."""
    lines = []
    for param in params:
        record = param.get_help_record(ctx)
        if record is None:  # hidden
            continue
        names, help_and_extra = record
        own_help = param.help or ""
        extra = help_and_extra[len(own_help) :].strip() if own_help else help_and_extra
        text = " ".join(part for part in (_plain(reflowed(own_help)), extra) if part)
        lines.append(f"- `{names}`: {text}" if text else f"- `{names}`")
    return lines


def _params_by_panel(command: Any, ctx: typer.Context) -> dict[str, list[Any]]:
    panels: dict[str, list[Any]] = {}
    for param in command.help_params(ctx):
        if getattr(param, "hidden", False):
            continue
        default = "Arguments" if param.param_type_name == "argument" else "Options"
        panel = getattr(param, "rich_help_panel", None) or default
        panels.setdefault(panel, []).append(param)
    # Typer's order: Arguments, then Options, then the named panels as they come.
    ordered: dict[str, list[Any]] = {
        name: panels.pop(name) for name in ("Arguments", "Options") if name in panels
    }
    return {**ordered, **panels}


def _command_section(name: str, command: Any, parent: typer.Context) -> list[str]:
    ctx = typer.Context(command, info_name=name, parent=parent, **command.context_settings)
    usage = " ".join(["attn", name, *command.collect_usage_pieces(ctx)])
    out = [f"## `attn {name}`", "", "```text", usage, "```", ""]
    for paragraph in (command.help or "").split("\n\n"):
        out += [_plain(paragraph), ""]
    for panel, params in _params_by_panel(command, ctx).items():
        out += [f"**{panel}**", "", *_option_lines(params, ctx), ""]
    if name in SEE_ALSO:
        out += [SEE_ALSO[name].format(docs="docs").replace("\n", " "), ""]
    if symbols(name):
        out += [
            "Symbols:",
            "",
            *(f"- `{symbol}`: {meaning}" for symbol, meaning in symbols(name)),
            "",
        ]
    out += ["Examples:", "", "```console", *(f"$ {line}" for line in examples(name)), "```", ""]
    return out


def _group() -> Any:
    return typer.main.get_command(full_app())


def _first_line(command: Any) -> str:
    return _plain(command.help or "").split("\n")[0]


def commands_table() -> str:
    """Every command and its help's first line, in `attn --help`'s order (README.md)."""
    group = _group()
    rows = [f"| `attn {name}` | {_first_line(group.commands[name])} |" for name in command_names()]
    return "\n".join(["| command | what it shows |", "|---|---|", *rows])


def _inputs_cell(name: str) -> str:
    """The lesson function's inputs: by position or keyword, then keyword only."""
    declared = card(name)
    positional = list(declared.positional)
    keywords = [spec.keyword for spec in declared.inputs if spec.keyword not in positional]
    cell = f"`{', '.join(positional)}`" if positional else "none (options only)"
    if keywords:
        cell += f"; keyword{'s' if len(keywords) > 1 else ''} `{', '.join(keywords)}`"
    renamed = [
        f"`{flag_for(option.name)}` is `{option.name}=`"
        for option in declared.options
        if option.command_line and flag_for(option.name) != "--" + option.name.replace("_", "-")
    ]
    return cell + (f" ({'; '.join(renamed)})" if renamed else "")


def functions_table() -> str:
    """Every lesson function, its command and its inputs, from the cards (docs/api.md)."""
    rows = [f"| `attn.{name}` | `attn {name}` | {_inputs_cell(name)} |" for name in lesson_names()]
    header = ["| function | command | inputs (by position or keyword) |", "|---|---|---|"]
    return "\n".join([*header, *rows])


def installs_table() -> str:
    """For each way of installing attn from a clone, the command that adds PyTorch, the one
    that adds the figures and the one that adds the explorer, as attn's own messages say them (attn_cli.core.install; ``.`` is the
    clone's folder, which the messages write in full)."""
    from attn_cli.core.install import from_a_clone

    rows = [
        f"| `{how}` | {' | '.join(f'`{command}`' for command in advice)} |"
        for how, advice in from_a_clone(("torch", "plot", "explore"))
    ]
    header = [
        "| installed with | add PyTorch | add the figures (`--plot`) | add the explorer (`attn explore`) |",
        "|---|---|---|---|",
    ]
    return "\n".join([*header, *rows])


TABLES = {"commands": commands_table, "functions": functions_table, "installs": installs_table}


def with_tables(document: str) -> str:
    """``document`` with each generated table between its markers made afresh."""
    for name, table in TABLES.items():
        begin = f"<!-- BEGIN {name}: generated by {REGENERATE} -->"
        head, found, rest = document.partition(begin)
        if found:
            _old, end, tail = rest.partition(f"<!-- END {name} -->")
            document = f"{head}{begin}\n{table()}\n{end}{tail}"
    return document


def reference() -> str:
    """docs/cli.md, as Markdown."""
    group = _group()
    ctx = typer.Context(group, info_name="attn", **group.context_settings)
    out = [
        "# Command reference",
        "",
        f"<!-- Generated from the app by `{REGENERATE}`; do not edit. -->",
        "",
        _plain(group.help or ""),
        "",
        "```text",
        " ".join(["attn", *group.collect_usage_pieces(ctx)]),
        "```",
        "",
        "Every command takes `-h` or `--help`.",
        "",
        "**Options**",
        "",
        *_option_lines(group.help_params(ctx), ctx),
        "",
        "**Commands**",
        "",
        *(
            f"- [`attn {name}`](#attn-{name}): {_first_line(group.commands[name])}"
            for name in command_names()
        ),
        "",
    ]
    for name in command_names():
        out += _command_section(name, group.commands[name], ctx)
    return "\n".join(out).rstrip("\n") + "\n"

"""``zett-sessions COMMAND --help`` without Typer converting the global options first.

Typer 0.29 converts the value of every non-flag parameter of each context it parses with a
pydantic ``TypeAdapter`` (even an option that was not given), and building the first one
imports most of pydantic: about 60 ms.  A subcommand's help is printed while the *command's*
options are parsed, after the global ones (``--db``, ``--busy-timeout``) were converted, so
``list --help`` paid for pydantic while the top-level ``--help`` did not.

When a command line is plainly "global options, a command, options and a help flag", this
module prints the same page from contexts built directly (``typer.Context``) instead: what
Click's help option prints, without parsing anything.  Whatever looks unusual (an unknown or
combined option, ``--``, an eager option like ``--version``, ``python -m``, shell completion)
goes the normal way, so behaviour never differs; ``tests/test_cli_help.py`` compares the pages.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import typer


def _options(command: object) -> dict[str, bool | None]:
    """``{option name: takes a value}`` of a Click command (``None``: do not reason about it)."""
    takes_value: dict[str, bool | None] = {}
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") != "option":
            continue
        names = (*param.opts, *param.secondary_opts)
        flag = bool(getattr(param, "is_flag", False))
        plain = not param.is_eager and not getattr(param, "count", False)
        plain = plain and (flag or param.nargs == 1)
        takes_value.update(dict.fromkeys(names, (not flag) if plain else None))
    return takes_value


def help_page(app: typer.Typer, args: Sequence[str], prog_name: str) -> str | None:
    """The help page ``args`` ask for, if they are a plain subcommand help request."""
    if not any(arg in _HELP for arg in args):
        return None
    group = typer.main.get_command(app)
    position = _scan(group, args, 0)
    if position is None or position >= len(args):
        return None
    command = getattr(group, "commands", {}).get(args[position])
    if command is None or _scan(command, args, position + 1) != -1:
        return None
    root = typer.Context(group, info_name=prog_name, **group.context_settings)
    context = typer.Context(
        command, info_name=args[position], parent=root, **command.context_settings
    )
    page: str = command.get_help(context)
    return page


def command_name(app: typer.Typer, args: Sequence[str]) -> str | None:
    """The command ``args`` name after plain global options (``None``: none, or unclear)."""
    position = command_position(typer.main.get_command(app), args)
    return args[position] if position is not None else None


def command_position(group: object, args: Sequence[str]) -> int | None:
    """Where the command stands in ``args`` after plain global options of the Click group
    ``group`` (``None``: no command, or the line is unclear)."""
    position = _scan(group, args, 0)
    return position if position is not None and position < len(args) else None


def _program_name() -> str | None:
    """Click's program name for a console script; ``None`` for ``python -m`` or completion."""
    main_module = sys.modules.get("__main__")
    if getattr(main_module, "__package__", None) not in (None, "") or not sys.argv:
        return None  # ``python -m``: Click derives the name differently
    name = os.path.basename(sys.argv[0])
    if f"_{name.replace('-', '_').replace('.', '_')}_COMPLETE".upper() in os.environ:
        return None  # shell completion is Typer's business
    return name


_HELP = ("-h", "--help")


def print_help_page(app: typer.Typer, args: Sequence[str]) -> bool:
    """Print the page if ``args`` are a plain subcommand help request; ``False`` otherwise."""
    prog_name = _program_name()
    page = help_page(app, args, prog_name) if prog_name else None
    if page is None:
        return False
    try:
        typer.echo(page)
        sys.stdout.flush()
    except BrokenPipeError:  # `… --help | head -1`: exit 0 like every other command
        from .errors import _silence_broken_pipe

        _silence_broken_pipe()
    return True


def _scan(command: object, args: Sequence[str], position: int) -> int | None:
    """Walk ``command``'s options from ``position`` as Click's parser would.

    Returns the index of the first positional argument for a group, ``-1`` when a help flag
    is reached (a command's positionals are skipped), and ``None`` when the line is unclear
    (an unknown or combined option, ``--``, an eager option) or ends without either.
    """
    takes_value = _options(command)
    is_group = hasattr(command, "commands")
    while position < len(args):
        arg = args[position]
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name in takes_value:
            needs = takes_value[name]
            if needs is None or (not needs and "=" in arg):
                return None
            position += 2 if needs and "=" not in arg else 1  # a value is taken as is
        elif arg in _HELP and not is_group:
            return -1
        elif arg.startswith("-") and arg != "-":
            return None
        elif is_group:
            return position
        else:
            position += 1
    return None

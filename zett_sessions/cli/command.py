"""The Typer classes behind the group and every command: help that reads cleanly, global
options after the command too, and suggestions for a mistyped option.

* **Help**: an argument shows as ``SESSION...`` (not ``[SESSION]... <list[str]>``), a count's
  range up to 2**63 is left out (``[0<=x<=9223372036854775807]`` says nothing a reader needs),
  hidden alias spellings (``--before`` beside ``--until``) are never listed, and text is never
  broken at a hyphen (``~/.zett-agent/…``, ``--older-than`` stay whole).
* **Global options** ``--color``, ``--no-color``, ``--no-pager`` and ``--busy-timeout`` are
  accepted after the command as well (``--db`` is one of every command's own options); given
  there, they override the ones given before it.
* **Usage errors** print as every other error does, on one line: ``Error: …`` and a hint
  (``(see `zett-sessions list --help`)``), not Click's ``Usage:``/``Try …`` lines.
* **A mistyped option** is matched against the command's own option names without their dashes
  (and a few words other tools use: ``--after`` → ``--since``), so ``--befor`` suggests
  ``--until`` rather than whatever shares the most dashes, and a typo of such a word
  (``--afer``) leads to the option too.
"""

from __future__ import annotations

import functools
import inspect
import re
import textwrap
from collections.abc import Callable
from typing import Annotated, Any

import typer
import typer.core

from .options import BUSY_TIMEOUT_MAX, color_mode

# Second spellings kept for scripts and muscle memory; the help shows only the canonical name.
HIDDEN_NAMES = frozenset({"--before"})
# Words other tools use for an option this tool names differently.
SYNONYMS = {
    "--after": "--since",
    "--before": "--until",
    "--older": "--older-than",
    "--count": "--limit",
    "--number": "--limit",
    "--force": "--yes",
    "--confirm": "--yes",
    "--ids-only": "--ids",
    "--output": "--format",
}
# A range whose upper end is this large (a 64-bit count, seconds SQLite can wait) is noise.
_RANGE_SHOWN_UP_TO = 1_000_000


def _range_text(param: Any) -> str | None:
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is None and high is None:
        return None
    if high is None:
        return f"x>={low}"
    return f"{low}<=x<={high}" if low is not None else f"x<={high}"


def _clean_help(param: Any, text: str) -> str:
    """``param``'s help without a range nobody needs (see ``_RANGE_SHOWN_UP_TO``)."""
    shown = _range_text(param)
    high = getattr(param, "max", None)
    if shown is None or (high is not None and high <= _RANGE_SHOWN_UP_TO):
        return text
    for old, new in ((f"; {shown}]", "]"), (f"  [{shown}]", ""), (f"[{shown}]", "")):
        text = text.replace(old, new)
    return text


def _argument_name(param: Any) -> str:
    name = str(param.metavar or param.name.upper())
    return name + ("..." if param.nargs != 1 else "")


def _option_names(names: str) -> str:
    for hidden in HIDDEN_NAMES:
        names = names.replace(f"{hidden}, ", "").replace(f", {hidden}", "")
    return names


def help_rows(command: Any, ctx: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The ``Arguments`` and ``Options`` rows of ``command``'s help page, cleaned."""
    arguments: list[tuple[str, str]] = []
    options: list[tuple[str, str]] = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, text = record
        if param.param_type_name == "argument":
            arguments.append((_argument_name(param), _clean_help(param, text)))
        elif param.param_type_name == "option":
            options.append((_option_names(names), _clean_help(param, text)))
    return arguments, options


def keep_words(text: str, width: int) -> str:
    """``text`` wrapped at ``width`` without breaking a word at its hyphen, marked (``\\b``) so
    that Click's formatter keeps the lines as they are; paragraphs stay paragraphs."""
    paragraphs = [p for p in inspect.cleandoc(text).split("\n\n") if p.strip()]
    return "\n\n".join(
        "\b\n"
        + textwrap.fill(
            " ".join(paragraph.split()),
            max(width, 10),
            break_on_hyphens=False,
            break_long_words=False,
        )
        for paragraph in paragraphs
    )


def write_rows(formatter: Any, heading: str, rows: list[tuple[str, str]]) -> None:
    """Click's definition list, with each description pre-wrapped by ``keep_words`` at the
    width Click's ``write_dl`` gives it."""
    if not rows:
        return
    first_column = min(max(len(name) for name, _ in rows), 30) + 2
    text_width = max(formatter.width - first_column - 2, 10)
    with formatter.section(heading):
        formatter.write_dl(
            [(name, keep_words(text, text_width) if text else "") for name, text in rows]
        )


def write_text(formatter: Any, text: str | None) -> None:
    if text:
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(keep_words(text, formatter.width - formatter.current_indent))


def command_summary(command: Any) -> str:
    """The first paragraph of ``command``'s help, on one line: what the command list shows."""
    text = inspect.cleandoc((command.help or "").partition("\f")[0])
    return " ".join(text.split("\n\n", 1)[0].split())


def _suggestions(command: Any, typo: str) -> list[str]:
    """Canonical option names of ``command`` close to ``typo`` (compared without dashes)."""
    names: dict[str, str] = {}
    for param in command.params:
        if param.param_type_name != "option" or param.hidden:
            continue
        canonical = next((o for o in param.opts if o not in HIDDEN_NAMES), param.opts[0])
        for name in (*param.opts, *param.secondary_opts):
            if name.startswith("--"):
                names[name] = canonical
    import difflib

    synonym = SYNONYMS.get(typo)
    if synonym in names:
        return [names[synonym]]
    bare = {name.lstrip("-"): canonical for name, canonical in names.items()}
    # a typo of another tool's word (--afer) leads to this tool's option for it (--since)
    for word, meant in SYNONYMS.items():
        bare.setdefault(word.lstrip("-"), names.get(meant, ""))
    bare = {name: canonical for name, canonical in bare.items() if canonical}
    typed = typo.lstrip("-")
    close = difflib.get_close_matches(typed, list(bare), n=3, cutoff=0.6)
    # only the nearest (within 0.1): --formt is --format, not also --sort
    score = {name: difflib.SequenceMatcher(None, typed, name).ratio() for name in close}
    best = max(score.values(), default=0.0)
    return list(dict.fromkeys(bare[name] for name in close if score[name] >= best - 0.1))


# pydantic's wording of a conversion Typer made → the words the rest of the tool uses.
_PYDANTIC_WORDS = (
    (re.compile(r"^Value error, "), ""),
    (re.compile(r"^Input should be "), "must be "),
    (re.compile(r", unable to parse string as an? \w+$"), ""),
    (re.compile(r"greater than or equal to "), "at least "),
    (re.compile(r"less than or equal to "), "at most "),
    (re.compile(r"\ba valid integer\b"), "a whole number"),
    (re.compile(r"\ba valid number\b"), "a number"),
)


def improve_parse_error(command: Any, error: Exception) -> None:
    """Better wording for Typer's parse errors, in place (the caller re-raises): suggestions
    from ``_suggestions`` for an unknown option, and no pydantic wording (``Value error, ``,
    ``Input should be greater than or equal to 1``: ``must be at least 1``)."""
    typo = getattr(error, "option_name", None)
    if hasattr(error, "possibilities") and isinstance(typo, str):
        suggested = _suggestions(command, typo)
        error.possibilities = None  # Click's "(Possible options: …)" even for one
        message = getattr(error, "message", None)
        if suggested and isinstance(message, str):
            error.message = f"{message}; did you mean {' or '.join(suggested)}?"  # type: ignore[attr-defined]
    elif isinstance(error, typer.BadParameter):
        for pattern, words in _PYDANTIC_WORDS:
            error.message = pattern.sub(words, error.message)


# Click's usage error, reached through a public name (``typer.BadParameter`` is one).
_USAGE_ERROR: Any = typer.BadParameter.__mro__[1]


def one_line_usage_error(error: Exception, ctx: Any = None) -> None:
    """A usage error of Click's as the tool's other errors print: ``Error: …`` and a hint on
    one line, instead of a ``Usage:`` line, a ``Try …`` line, a blank one and the error.  In
    place (the caller re-raises); the help page printed for a bare ``zett-sessions`` (Click's
    own kind of usage error, with its own ``show``) is left as it is.  ``ctx`` names the
    command for the hint when the error carries no context of its own."""
    if not isinstance(error, _USAGE_ERROR) or type(error).show is not _USAGE_ERROR.show:
        return
    ctx = getattr(error, "ctx", None) or ctx
    if ctx is None or getattr(error, "one_line", False):
        return
    message = getattr(error, "message", None)
    if isinstance(message, str):
        error.message = f"{message.rstrip('.')} (see `{ctx.command_path} --help`)"
    error.ctx = None  # no Usage/Try lines: Click prints those from the context
    error.one_line = True


def parse_args(
    command: Any, parse: Callable[[Any, list[str]], list[str]], ctx: Any, args: list[str]
) -> list[str]:
    """``parse(ctx, args)``, its errors worded by ``improve_parse_error`` and put on one line
    by ``one_line_usage_error``."""
    try:
        return parse(ctx, args)
    except Exception as error:
        improve_parse_error(command, error)
        one_line_usage_error(error, ctx)
        raise


class Command(typer.core.TyperCommand):
    """Every command's class (see the module docstring)."""

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        write_text(formatter, self.help.partition("\f")[0] if self.help else None)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = help_rows(self, ctx)
        write_rows(formatter, "Arguments", arguments)
        write_rows(formatter, "Options", options)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        write_text(formatter, self.epilog)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                pieces.extend(param.get_usage_pieces(ctx))
                continue
            name = str(param.metavar or param.name.upper())
            name = name if param.required else f"[{name}]"
            pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return parse_args(self, super().parse_args, ctx, args)

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        """Completion offers the canonical spellings only, as the help does."""
        return [
            item
            for item in super().shell_complete(ctx, incomplete)
            if getattr(item, "value", None) not in HIDDEN_NAMES
        ]


class Group(typer.core.TyperGroup):
    """The application's class: the same help and error wording as ``Command``."""

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        write_text(formatter, self.help.partition("\f")[0] if self.help else None)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        write_rows(formatter, "Options", help_rows(self, ctx)[1])
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command with its whole summary (the first paragraph of its help), wrapped;
        Click cuts a summary at the first line's width and ends it with ``...``."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command_summary(command)))
        rows.append((HELP_COMMAND, HELP_SUMMARY))
        write_rows(formatter, "Commands", rows)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        write_text(formatter, self.epilog)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        def parse(ctx: Any, args: list[str]) -> list[str]:
            return super(Group, self).parse_args(ctx, help_request(self, args))

        return parse_args(self, parse, ctx, args)

    def invoke(self, ctx: Any) -> Any:
        """A missing or unknown command (``lisst``: "Did you mean 'list'?") on one line too."""
        try:
            return super().invoke(ctx)
        except Exception as error:
            one_line_usage_error(error, ctx)
            raise


# --- zett-sessions help [COMMAND] ---------------------------------------------------------

HELP_COMMAND = "help"
HELP_SUMMARY = "Show the help of a command (zett-sessions help list), or this page."


def help_request(group: Any, args: list[str]) -> list[str]:
    """``args`` with ``help [COMMAND]`` (as git and gh take it) written as Click's
    ``[COMMAND] --help``, after whatever global options come first; anything else as it is.
    A second word after the command is a usage error (``help`` explains one command)."""
    from .fast_help import command_position

    position = command_position(group, args)
    if position is None or args[position] != HELP_COMMAND:
        return args
    before, topic = args[:position], args[position + 1 :]
    if len(topic) > 1:
        raise _USAGE_ERROR(f"help takes one command, not {len(topic)} words ({' '.join(topic)})")
    if not topic or topic[0] == HELP_COMMAND:
        return [*before, "--help"]
    return [*before, topic[0], "--help"]


# --- global options after the command ------------------------------------------------------

_GLOBAL_AFTER: dict[str, Any] = {
    "global_color": Annotated[str | None, typer.Option("--color", hidden=True)],
    "global_no_color": Annotated[bool, typer.Option("--no-color", hidden=True)],
    "global_no_pager": Annotated[bool, typer.Option("--no-pager", hidden=True)],
    "global_busy_timeout": Annotated[
        float | None,
        typer.Option("--busy-timeout", min=0, max=BUSY_TIMEOUT_MAX, hidden=True),
    ],
}
_GLOBAL_DEFAULTS: dict[str, Any] = {
    "global_color": None,
    "global_no_color": False,
    "global_no_pager": False,
    "global_busy_timeout": None,
}


def with_global_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with the hidden global options added to its parameters; given after the
    command, they update the application state before ``function`` runs."""
    from .state import app_state

    signature = inspect.signature(function, eval_str=True)
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind)
        for (name, kind), default in zip(
            _GLOBAL_AFTER.items(), _GLOBAL_DEFAULTS.values(), strict=True
        )
    ]

    @functools.wraps(function)
    def command(*args: Any, **kwargs: Any) -> Any:
        color = kwargs.pop("global_color", None)
        no_color = kwargs.pop("global_no_color", False)
        no_pager = kwargs.pop("global_no_pager", False)
        busy_timeout = kwargs.pop("global_busy_timeout", None)
        state = app_state(kwargs["ctx"])
        if color is not None or no_color:
            state.color = color_mode(color, no_color)
        state.pager = state.pager and not no_pager
        if busy_timeout is not None:
            state.busy_timeout_ms = int(busy_timeout * 1000)
        return function(*args, **kwargs)

    parameters = [*signature.parameters.values(), *extra]
    command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {
        "return": signature.return_annotation
    }
    return command


def register(app: typer.Typer, name: str, function: Callable[..., Any]) -> None:
    """Add ``function`` to ``app`` as the command ``name`` (class ``Command``)."""
    app.command(name, cls=Command)(with_global_options(function))

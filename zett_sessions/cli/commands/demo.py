"""``zett-sessions demo [PATH]``: write a realistic sample database to try the other commands on."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import handle_errors
from ..options import JsonOption
from ..state import app_state


@handle_errors
def demo_command(
    ctx: typer.Context,
    path: Annotated[
        str,
        typer.Argument(metavar="PATH", help="Where to write the new database."),
    ] = "zett-demo.sqlite3",
    force: Annotated[
        bool, typer.Option("--force", help="Replace PATH if it already exists.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Write a sample session database to try the other commands on.

    It holds a tool round trip, a compacted session, a delegated child, a crashed run with an
    incomplete tool batch, an automation session and hostile unicode text, then four months of
    older sessions (some past 90 days, a busy day); prices.json beside it (unless one is there)
    holds sample prices for usage --prices.

    Example: zett-sessions demo /tmp/demo.sqlite3 && zett-sessions --db /tmp/demo.sqlite3 list
    """

    from ...demo import write_demo
    from ...errors import UnusablePath, UsageError
    from ...render.demo import demo_json, demo_summary

    out = app_state(ctx).output()
    try:
        result = write_demo(path, overwrite=force, history=True, prices=True)
    except IsADirectoryError as error:
        raise UsageError(f"{error}; give a file name for the demo database") from None
    except FileExistsError as error:
        raise UsageError(f"{error}; pass --force to replace it") from None
    except FileNotFoundError as error:
        raise UsageError(f"{error}; create it first") from None
    except UnusablePath as error:
        raise UsageError(f"{error}; give another PATH") from None
    if json_output:
        out.json(demo_json(result))
        return
    out.print(demo_summary(result))
    if result.prices is None:
        from ...demo import PRICES_NAME

        out.hint(f"kept the {PRICES_NAME} already beside it (the sample prices are not in it)")
    out.hint(f"try: {invoked_as()} --db {_quoted(str(result.path))} list")


def _quoted(path: str) -> str:
    import shlex

    from ...render.sanitize import single_line

    return shlex.quote(single_line(path))


def invoked_as(
    argv0: str | None = None, executable: str | None = None, module: str | None = None
) -> str:
    """The command that runs this tool, as the user can type it again: ``zett-sessions`` when
    that name on $PATH is this program, else the path it was started by
    (``.venv/bin/zett-sessions`` after the README's quick start without activating the venv),
    or ``python -m zett_sessions`` with the interpreter that runs it (``module``: the name
    ``python -m`` ran, ``None`` for a script)."""
    import os
    import shutil
    import sys

    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if module is None:
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        module = getattr(spec, "name", None) or ""
    if module == "zett_sessions.__main__":
        python = os.path.basename(executable)
        found = shutil.which(python)
        same = found is not None and os.path.realpath(found) == os.path.realpath(executable)
        return f"{_quoted(python if same else executable)} -m zett_sessions"
    name = os.path.basename(argv0)
    if module or name != "zett-sessions":  # not the console script: a test…
        return "zett-sessions"
    found = shutil.which(name)
    if found is not None and os.path.realpath(found) == os.path.realpath(argv0):
        return name
    return _quoted(argv0)


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "demo", demo_command)

"""``zett-sessions delete``: retention by id or by policy — planned, confirmed, atomic, archived."""

from __future__ import annotations

import functools
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from ..errors import Refused, handle_errors
from ..filters import NO_FILTERS, FilterOptions, filter_options
from ..options import (
    FULL_HELP,
    INT_MAX,
    DbOption,
    DryRunOption,
    FullIdsOption,
    JsonOption,
    YesOption,
    session_argument,
)
from ..state import AppState, app_state, run_with

if TYPE_CHECKING:
    from datetime import timedelta

    from ...render.output import Output
    from ...retention import DeleteOutcome, DeletePlan, DeleteProgress
    from ...session_database import Runner, SessionDatabase
    from ..progress import ProgressBar

T = TypeVar("T")


# Without --yes, a plan of more than this share of all sessions asks for the number typed.
DEFAULT_CONFIRM_PERCENT = 50.0


class ChildrenChoice(StrEnum):
    refuse = "refuse"
    delete = "delete"
    keep = "keep"


def stdin_is_tty() -> bool:
    """Whether a human can answer a prompt (tests replace this)."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def read_ids(arguments: list[str], *, null: bool = False) -> tuple[tuple[str, ...], frozenset[str]]:
    """Arguments as ids, ``-`` replaced by the ids on stdin (read once); returns the ids and
    the set of those read from stdin, which name a session only exactly.

    Stdin holds one id per line (only ``\\n`` ends one: ``list -q`` never writes an id with a
    line break or any other control character) or, with ``null``, ids each ended by a NUL byte
    (``list -0``: any id).  Nothing is stripped; empty entries are ignored.
    """
    from ...errors import UsageError

    if "-" not in arguments:
        if null:
            raise UsageError("-0/--null says how ids on stdin are separated; give `-` to read them")
        return tuple(arguments), frozenset()
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"the ids on stdin are not UTF-8 text (byte {error.start + 1} is not); "
            "no stored id could match them"
        ) from None
    entries = text.split("\0" if null else "\n")
    if not null:
        _refuse_crlf(entries)
    piped = [entry for entry in entries if entry]
    ids: list[str] = []
    for position, argument in enumerate(arguments):
        if argument != "-":
            ids.append(argument)
        elif arguments.index("-") == position:  # stdin is read once
            ids.extend(piped)
    return tuple(ids), frozenset(piped)


def _refuse_crlf(lines: list[str]) -> None:
    """A line ending in ``\\r`` is refused.  ``list -q`` never writes one (a ``\\r`` is a control
    character), so it comes from a file saved with Windows line endings, where the ``\\r`` is no
    part of the id meant; taken as part of the id it could name another session (one whose id
    does end in ``\\r``, which ``list -q`` left out), and taken as a line ending it could
    equally be meant as that one.  Refusing is the one answer that never deletes a session the
    list did not name."""
    from ...errors import UsageError

    number = next((n for n, line in enumerate(lines, 1) if line.endswith("\r")), None)
    if number is not None:
        raise UsageError(
            f"line {number} on stdin ends in a carriage return (Windows line endings?); ids on "
            "stdin are exact and end at a newline only: convert the file (dos2unix), or pass "
            "the ids NUL-separated with -0"
        )


def check_archive_file(path: str) -> None:
    """``--archive-to`` passes the same path checks as ``--db`` before anything is read (a FIFO
    there would block the delete forever; a symlink loop is no file), and is no symbolic link
    to nothing (the archive could not be made there)."""
    from ...errors import DatabaseError, NotAnArchive, UsageError, ValidationError
    from ...sqlite.readonly import database_file, link_to_nothing

    try:
        dangling = link_to_nothing(database_file(path))
    except ValidationError as error:
        raise UsageError(f"--archive-to: {error}") from None
    except DatabaseError as error:
        raise NotAnArchive(f"--archive-to: {error}", path) from None
    if dangling is not None:
        raise NotAnArchive(f"--archive-to: {dangling}", path)


def parse_window(text: str) -> timedelta:
    from datetime import timedelta

    from ...timeutil import parse_duration

    return timedelta(0) if text.strip() in {"0", "off", "none"} else parse_duration(text)


@handle_errors
@filter_options("older_than", "until", "agent", "session_type", "roots", "title")
def delete_command(
    ctx: typer.Context,
    sessions: Annotated[
        list[str] | None,
        session_argument(
            "Session ids or unique prefixes; `-` reads exact ids from stdin, one per line."
        ),
    ] = None,
    filters: FilterOptions = NO_FILTERS,
    select_all: Annotated[
        bool, typer.Option("--all", help="Select every session (guards still apply).")
    ] = False,
    keep_last: Annotated[
        int,
        typer.Option(
            "--keep-last", min=0, max=INT_MAX, metavar="N", help="Keep the N most recent selected."
        ),
    ] = 0,
    skip_active: Annotated[
        str,
        typer.Option(
            "--skip-active",
            metavar="DURATION",
            help="Leave sessions with a message this recent alone (a rename is no activity; "
            "0 = off).",
        ),
    ] = "10m",
    children: Annotated[
        ChildrenChoice,
        typer.Option(
            "--children",
            help="Children of planned sessions: refuse the run, delete the subtree, or keep them.",
        ),
    ] = ChildrenChoice.refuse,
    missing_ok: Annotated[
        bool, typer.Option("--missing-ok", help="Named ids that do not exist are only reported.")
    ] = False,
    max_sessions: Annotated[
        int | None,
        typer.Option(
            "--max-sessions",
            min=0,
            max=INT_MAX,
            metavar="N",
            help="Refuse when the plan has more than N.",
        ),
    ] = None,
    max_percent: Annotated[
        float | None,
        typer.Option(
            "--max-percent",
            min=0,
            max=100,
            metavar="P",
            help="Refuse when the plan is more than P% of all sessions.",
        ),
    ] = None,
    confirm_percent: Annotated[
        float,
        typer.Option(
            "--confirm-percent",
            min=0,
            max=100,
            metavar="P",
            help="Without --yes, a plan of every session or of more than P% of them is "
            "confirmed by typing the number of sessions.",
        ),
    ] = DEFAULT_CONFIRM_PERCENT,
    archive_to: Annotated[
        str | None,
        typer.Option(
            "--archive-to",
            metavar="FILE",
            help="First copy the sessions into this session database (created if missing).",
        ),
    ] = None,
    vacuum: Annotated[
        bool, typer.Option("--vacuum", help="Reclaim the freed space afterwards (VACUUM).")
    ] = False,
    null: Annotated[
        bool,
        typer.Option("--null", "-0", help="Ids on stdin (`-`) each end with a NUL byte (list -0)."),
    ] = False,
    dry_run: DryRunOption = False,
    yes: YesOption = False,
    json_output: JsonOption = False,
    full_ids: FullIdsOption = False,
    full: Annotated[
        bool, typer.Option("--full", help=f"{FULL_HELP}, every planned session.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Delete sessions by id and/or by policy: plan first, then each session all or nothing.

    Ids and policy options combine as an intersection.  Without --yes the plan is confirmed
    interactively (default No; a plan of every session, or of more than --confirm-percent of
    them, by typing the number of sessions); off a terminal, with --json or with `-`, --yes is
    required.

    Example: zett-sessions delete --older-than 90d --keep-last 20 --dry-run
    """
    from ...retention import DeleteRequest, RetentionPolicy, delete_sessions
    from ...timeutil import utc_now
    from ..progress import progress_bar

    state = app_state(ctx)
    out = state.output()
    if archive_to is not None:
        check_archive_file(archive_to)
    ids, piped = read_ids(sessions or [], null=null)
    now = utc_now()
    policy = RetentionPolicy(
        ids=ids if sessions else None,
        exact_ids=piped,
        filters=filters.parse(now),
        select_all=select_all,
        missing_ok=missing_ok,
        keep_last=keep_last,
        skip_active=parse_window(skip_active),
        children=children.value,
        max_sessions=max_sessions,
        max_percent=max_percent,
    )
    request = DeleteRequest(policy, archive_to=archive_to, vacuum=vacuum, dry_run=dry_run, now=now)
    shown = Shown(json_output=json_output, full_ids=full_ids or full, full=full)
    show = None if json_output else functools.partial(print_plan, out, shown, dry_run=dry_run)
    with progress_bar("deleting", "messages") as bar:
        outcome = delete_sessions(
            request,
            database_runner(state, db),
            show=show,
            confirm=functools.partial(
                confirm,
                yes=yes,
                json_output=json_output,
                used_stdin="-" in (sessions or []),
                strong_above=confirm_percent,
            ),
            progress=None if bar is None else functools.partial(report_progress, bar),
        )
    render_outcome(out, outcome, shown)


def report_progress(bar: ProgressBar, step: DeleteProgress) -> None:
    """Messages deleted of those planned; then VACUUM, of unknown length."""
    if step.vacuum:
        bar.stage("VACUUM")
    else:
        bar(step.messages, step.planned_messages)


@dataclass(frozen=True)
class Shown:
    """How the plan and the result are shown (``--json``, ``--full-ids``, ``--full``)."""

    json_output: bool = False
    full_ids: bool = False
    full: bool = False


def database_runner(state: AppState, db: str | None) -> Runner:
    """The flow's way to the database: a fresh handle per step, read-only when asked."""

    def run(work: Callable[[SessionDatabase], Awaitable[T]], *, read_only: bool) -> T:
        return run_with(state.reader(db) if read_only else state.writer(db), work)

    return run


def print_plan(out: Output, shown: Shown, plan: DeletePlan, *, dry_run: bool) -> None:
    from ...render.delete import PLAN_ROWS, plan_renderable

    renderable, hidden = plan_renderable(
        plan,
        full_ids=shown.full_ids,
        dry_run=dry_run,
        width=out.out.width,
        rows=None if shown.full else PLAN_ROWS,
        full=shown.full,
    )
    out.print(renderable)
    out.columns_hidden(hidden, out.out.width)


def confirm(
    plan: DeletePlan,
    *,
    yes: bool,
    json_output: bool,
    used_stdin: bool,
    strong_above: float = DEFAULT_CONFIRM_PERCENT,
) -> bool:
    """Ask (default No) unless ``--yes``; refuse to ask when nobody can answer.  A plan of
    every session, or of more than ``strong_above`` percent of them, is confirmed by typing
    the number of sessions, not by ``y``.  ``False``: the answer was no (Ctrl-C at the
    question exits 130)."""
    if yes:
        return True
    if json_output or used_stdin or not stdin_is_tty():
        from ...retention import RetentionRefused

        why = (
            "--json was given"
            if json_output
            else "ids were read from stdin"
            if used_stdin
            else "stdin is not a terminal"
        )
        raise RetentionRefused(
            f"not deleting without confirmation ({why}); pass --yes to delete", "confirmation"
        )
    from ...render.delete import plan_share, plan_totals
    from ..prompt import ask, ask_exact

    count = len(plan.sessions)
    if count >= plan.total_sessions or plan.percent > strong_above:
        share = "every session" if count >= plan.total_sessions else plan_share(plan)
        return ask_exact(
            f"Delete {plan_totals(plan)}?\nThat is {share} of the database: type {count} "
            "to delete them",
            str(count),
        )
    return ask(f"Delete {plan_totals(plan)}?")


def render_outcome(out: Output, outcome: DeleteOutcome, shown: Shown) -> None:
    """The result (or, with ``--json``, the one document), then the exit: 5 when refused, 1
    when the sessions were deleted but VACUUM failed."""
    if outcome.status == "declined":
        out.note("Nothing deleted.")
        return
    result = outcome.result
    if shown.json_output:
        from ...render.delete import delete_json

        out.json(delete_json(outcome.plan, outcome.policy, result))
    elif result is not None and outcome.plan.sessions:
        from ...render.delete import result_renderable

        out.print(
            result_renderable(outcome.plan, result, full_ids=shown.full_ids, width=out.out.width)
        )
    if outcome.refusal is not None:
        raise Refused(outcome.refusal)
    if result is not None and result.space is not None and result.space.vacuum_error:
        from ...errors import DatabaseError

        raise DatabaseError(
            f"the sessions were deleted, but VACUUM failed: {result.space.vacuum_error}"
        )


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "delete", delete_command)

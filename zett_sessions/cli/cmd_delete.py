"""``zett-sessions delete``: retention by id or by policy — planned, confirmed, atomic, archived."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from .complete import complete_session_id
from .errors import Refused, handle_errors
from .options import (
    FULL_HELP,
    INT_MAX,
    AgentOption,
    DbOption,
    DryRunOption,
    FullIdsOption,
    JsonOption,
    OlderThanOption,
    RootsOption,
    TitleOption,
    TypeOption,
    UntilOption,
    YesOption,
    non_blank,
)
from .state import app_state, run_with

if TYPE_CHECKING:
    from datetime import timedelta

    from ..backend import SessionDatabase
    from ..retention import DeletePlan, DeleteResult, RetentionPolicy
    from .output import Output


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
    from ..errors import UsageError

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
    piped = [entry for entry in text.split("\0" if null else "\n") if entry]
    ids: list[str] = []
    for position, argument in enumerate(arguments):
        if argument != "-":
            ids.append(argument)
        elif arguments.index("-") == position:  # stdin is read once
            ids.extend(piped)
    return tuple(ids), frozenset(piped)


def check_archive_file(path: str) -> None:
    """``--archive-to`` passes the same path checks as ``--db`` before anything is read (a FIFO
    there would block the delete forever; a symlink loop is no file)."""
    from ..errors import DatabaseError, NotAnArchive, UsageError, ValidationError
    from ..readonly import database_file

    try:
        database_file(path)
    except ValidationError as error:
        raise UsageError(f"--archive-to: {error}") from None
    except DatabaseError as error:
        raise NotAnArchive(f"--archive-to: {error}", path) from None


def parse_window(text: str) -> timedelta:
    from datetime import timedelta

    from ..timeutil import parse_duration

    return timedelta(0) if text.strip() in {"0", "off", "none"} else parse_duration(text)


@handle_errors
def delete_command(
    ctx: typer.Context,
    sessions: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="SESSION",
            help="Session ids or unique prefixes; `-` reads exact ids from stdin, one per line.",
            show_default=False,
            autocompletion=complete_session_id,
        ),
    ] = None,
    older_than: OlderThanOption = None,
    until: UntilOption = None,
    agent: AgentOption = None,
    session_type: TypeOption = None,
    roots: RootsOption = False,
    title: TitleOption = None,
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
            help="Leave sessions with activity this recent alone (0 = off).",
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
    interactively (default No); off a terminal, with --json or with `-`, --yes is required.

    Example: zett-sessions delete --older-than 90d --keep-last 20 --dry-run
    """
    from ..queries.sessions import SessionFilter
    from ..retention import RetentionPolicy, RetentionRefused, build_plan, execute_plan
    from ..retention.archive import check_archive_path
    from ..retention.plan import nothing_selected
    from ..retention.space import disk_refusal
    from ..timeutil import activity_cutoff, utc_now

    state = app_state(ctx)
    out = state.output()
    if archive_to is not None:
        check_archive_file(archive_to)
    ids, piped = read_ids(sessions or [], null=null)
    used_stdin = "-" in (sessions or [])
    now = utc_now()
    cutoff = activity_cutoff(until, older_than, now=now)
    agent, title = non_blank(agent, "--agent"), non_blank(title, "--title")
    policy = RetentionPolicy(
        ids=ids if sessions else None,
        exact_ids=piped,
        filters=SessionFilter(
            agent=agent,
            types=tuple(session_type or ()),
            roots=roots,
            active_before=cutoff,
            title=title,
        ),
        select_all=select_all,
        missing_ok=missing_ok,
        keep_last=keep_last,
        skip_active=parse_window(skip_active),
        children=children.value,
        max_sessions=max_sessions,
        max_percent=max_percent,
    )
    if not policy.selects_something:
        raise nothing_selected()

    async def plan_work(database: SessionDatabase) -> DeletePlan:
        async with database.read():
            return await build_plan(database, policy, now=now)

    # A real delete plans on the writable connection it is: a crashed rollback-journal writer's
    # hot journal is then rolled back by it (as any writer does), not reported as unreadable.
    plan = run_with(state.reader(db) if dry_run else state.writer(db), plan_work)
    archive = check_archive_path(plan.database, archive_to) if archive_to else None
    if vacuum and plan.sessions and (refusal := disk_refusal(plan.database)) is not None:
        plan = plan.model_copy(update={"refusals": (*plan.refusals, refusal)})
    if not json_output:
        from ..render.delete import PLAN_ROWS, plan_renderable

        out.print(
            plan_renderable(
                plan,
                full_ids=full_ids or full,
                dry_run=dry_run,
                width=out.out.width,
                rows=None if full else PLAN_ROWS,
                full=full,
            )
        )
    if dry_run:
        return finish(out, plan, policy, None, json_output)
    if not plan.sessions:
        from ..retention import DeleteResult

        return finish(out, plan, policy, DeleteResult(deleted=()), json_output)
    try:
        if plan.refusals:
            raise Refused("; ".join(refusal.message for refusal in plan.refusals))
        if not confirm(plan, yes=yes, json_output=json_output, used_stdin=used_stdin):
            out.note("Nothing deleted.")
            return

        async def execute_work(database: SessionDatabase) -> DeleteResult:
            return await execute_plan(database, plan, policy, archive=archive, run_vacuum=vacuum)

        try:
            result = run_with(state.writer(db), execute_work)
        except RetentionRefused as error:
            raise Refused(str(error)) from None
    except Refused:
        if json_output:
            out.json(_document(plan, policy, None))
        raise
    finish(out, plan, policy, result, json_output, full_ids=full_ids or full)
    if result.space is not None and result.space.vacuum_error:
        from ..errors import DatabaseError

        raise DatabaseError(
            f"the sessions were deleted, but VACUUM failed: {result.space.vacuum_error}"
        )


def confirm(plan: DeletePlan, *, yes: bool, json_output: bool, used_stdin: bool) -> bool:
    """Ask (default No) unless ``--yes``; refuse to ask when nobody can answer.  ``False``:
    the answer was no (Ctrl-C at the question exits 130)."""
    if yes:
        return True
    if json_output or used_stdin or not stdin_is_tty():
        why = (
            "--json was given"
            if json_output
            else "ids were read from stdin"
            if used_stdin
            else "stdin is not a terminal"
        )
        raise Refused(f"not deleting without confirmation ({why}); pass --yes to delete")
    from ..render.delete import plan_totals
    from .prompt import ask

    return ask(f"Delete {plan_totals(plan)}?")


def finish(
    out: Output,
    plan: DeletePlan,
    policy: RetentionPolicy,
    result: DeleteResult | None,
    json_output: bool,
    *,
    full_ids: bool = False,
) -> None:
    from ..render.delete import result_renderable

    if json_output:
        out.json(_document(plan, policy, result))
    elif result is not None and plan.sessions:
        out.print(result_renderable(plan, result, full_ids=full_ids, width=out.out.width))


def _document(plan: DeletePlan, policy: RetentionPolicy, result: DeleteResult | None) -> object:
    from ..render.delete import delete_json

    return delete_json(plan, policy, result)


def register(app: typer.Typer) -> None:
    from .command import register

    register(app, "delete", delete_command)

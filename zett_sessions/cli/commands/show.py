"""``zett-sessions show SESSION``: the header and the whole transcript of one session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import handle_errors
from ..option_group import option_group
from ..options import (
    DEFAULT_OUTPUT,
    INT_MAX,
    DbOption,
    FullOption,
    LatestOption,
    OutputOptions,
    SessionsArg,
    output_options,
)
from .secrets import PatternsOption

if TYPE_CHECKING:
    from ...secrets.redact import Redactor
    from ...transcript.render import TranscriptOptions


class TranscriptFormat(StrEnum):
    """tail's formats (and show's, but html)."""

    text = "text"
    markdown = "markdown"
    json = "json"


class ShowFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"
    html = "html"


SHARED_FORMATS = ("markdown", "html")  # for sharing: whole bodies always


class Role(StrEnum):
    system = "system"
    user = "user"
    assistant = "assistant"
    tool = "tool"
    agent = "agent"


FromOption = Annotated[
    int | None,
    typer.Option(
        "--from", min=1, max=INT_MAX, metavar="SEQ", help="Start at this sequence number."
    ),
]
ThroughOption = Annotated[
    int | None,
    typer.Option(
        "--through", min=1, max=INT_MAX, metavar="SEQ", help="Stop after this sequence number."
    ),
]
RoleOption = Annotated[
    list[Role] | None,
    typer.Option(
        "--role", metavar="ROLE", case_sensitive=False, help="Only these roles (repeatable)."
    ),
]
ReasoningOption = Annotated[
    bool, typer.Option("--reasoning", help="Show the assistants' reasoning text.")
]
UtcOption = Annotated[
    bool,
    typer.Option(
        "--utc", help="Show times in UTC instead of the local time zone (TZ); JSON is always UTC."
    ),
]
DetailsOption = Annotated[
    bool,
    typer.Option("--details", help="Also show ids, exact times, usage, metadata and tags."),
]


def role_kinds(roles: Sequence[Role] | None) -> frozenset[int]:
    """The message kinds ``--role`` names (empty: every kind)."""
    from ...transcript.query import ROLE_KINDS

    return frozenset(ROLE_KINDS[role.value] for role in roles or ())


def one_session(sessions: Sequence[str] | None, latest: bool) -> list[str | None]:
    """SESSIONs or ``--latest``, exactly one of them (show and tail): what to show in turn
    (``[None]`` for ``--latest``)."""
    from ...errors import UsageError

    if latest == bool(sessions):
        raise UsageError("give either a SESSION or --latest")
    return list(sessions) if sessions else [None]


@dataclass(frozen=True)
class ViewOptions:
    """How show and tail render a transcript: the same options (``--role``, ``--reasoning``,
    ``--details``, ``--full``, ``--utc``, declared once in ``VIEW_OPTIONS``), the same
    meaning."""

    roles: Sequence[Role] | None = None
    reasoning: bool = False
    details: bool = False
    full: bool = False
    utc: bool = False

    def role_kinds(self) -> frozenset[int]:
        """The message kinds ``--role`` names (empty: every kind)."""
        return role_kinds(self.roles)

    def transcript_options(self, fmt: StrEnum) -> TranscriptOptions:
        """How records are rendered in ``fmt``.  Markdown and HTML are for sharing: whole bodies
        always (``--full``: every repeated system prompt too)."""
        from ...transcript.render import TranscriptOptions

        return TranscriptOptions(
            full=self.full or fmt.value in SHARED_FORMATS,
            reasoning=self.reasoning,
            details=self.details,
            every_prompt=self.full,
            utc=self.utc,
        )


PLAIN_VIEW = ViewOptions()
VIEW_OPTIONS = {
    "roles": RoleOption,
    "reasoning": ReasoningOption,
    "details": DetailsOption,
    "full": FullOption,
    "utc": UtcOption,
}
# Gives show and tail the options of ``VIEW_OPTIONS`` in place of their ``view`` parameter.
view_options = option_group("view", ViewOptions, VIEW_OPTIONS)


@handle_errors
@output_options(
    ShowFormat, "text (default), markdown or html (shareable: one self-contained page), or json."
)
@view_options
def show_command(
    ctx: typer.Context,
    sessions: SessionsArg = None,
    latest: LatestOption = False,
    first: FromOption = None,
    through: ThroughOption = None,
    view: ViewOptions = PLAIN_VIEW,
    context: Annotated[
        bool,
        typer.Option(
            "--context",
            help="Show what the model gets on resume (checkpoint + provider-safe tail) and "
            "what the projection dropped.",
        ),
    ] = False,
    children: Annotated[
        bool,
        typer.Option(
            "--children",
            help="With --format html: each sub-agent session (recursively) in the same page.",
        ),
    ] = False,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact",
            help="Replace each secret `secrets` finds by [REDACTED:kind:fingerprint]; the "
            "output is scanned again and refused (exit 5, nothing written) if one survives.",
        ),
    ] = False,
    patterns: PatternsOption = None,
    output: OutputOptions = DEFAULT_OUTPUT,
    db: DbOption = None,
) -> None:
    """Show a session: its header, then every raw message in sequence order (several
    sessions: each in turn, with its header).

    Tool results are paired with their call, incomplete tool batches and orphan results are
    flagged in place, and a marker shows where the latest snapshot's boundary sits.  Long
    messages are cut and a repeated system prompt is printed once unless --full (--format
    markdown and html show whole bodies); times are local with their zone unless --utc.  --latest
    shows the most recently active session (named on stderr).  --json writes one lossless
    document ({"session", "snapshot", "records", "flags"}; times in UTC) per session, one
    after the other.  A session not found among several is named on stderr and the others
    are shown (exit 3 at the end).

    Example: zett-sessions show 019cadd4-8c4c --reasoning --from 10
    """
    from ...errors import UsageError
    from ...transcript.query import Selection
    from ...transcript.write import Format, Request, show, show_each
    from ..errors import fail_any
    from ..state import app_state, run_with

    chosen = output.chosen(ShowFormat)
    named = one_session(sessions, latest)
    if len(named) > 1 and (chosen is ShowFormat.html or redact):
        raise UsageError("--format html and --redact show one session: name one")
    if first is not None and through is not None and through < first:
        raise UsageError(f"--through {through} is before --from {first}")
    if context and (first is not None or through is not None or view.roles):
        raise UsageError("--context shows the whole resume context; drop --from/--through/--role")
    if context and chosen.value in SHARED_FORMATS:
        raise UsageError(f"--context has no {chosen.value} format; use text or --json")
    if children and chosen is not ShowFormat.html:
        raise UsageError("--children puts sub-agent sessions in one page: add --format html")
    if redact and context:
        raise UsageError("--redact shows the log, not the resume context: drop --context")
    if patterns and not redact:
        raise UsageError("--patterns says what --redact replaces: add --redact")
    state = app_state(ctx)
    request = Request(
        session=None,
        selection=Selection(
            first=first,
            through=through,
            roles=view.role_kinds(),
        ),
        options=view.transcript_options(chosen),
        fmt=Format(chosen.value),
        context=context,
        latest=latest,
        children=children,
        redactor=_redactor(patterns) if redact else None,
    )
    if request.redactor is None:
        out = state.output()
        failed = run_with(
            state.reader(db), lambda database: show_each(database, request, named, out)
        )
        fail_any(failed)
        return
    from ...secrets.guard import redacted_stdout

    with redacted_stdout(request.redactor.detectors):
        out = state.output()  # its stdout is the spool
        run_with(
            state.reader(db),
            lambda database: show(database, replace(request, session=named[0]), out),
        )


def _redactor(patterns: str | None) -> Redactor:
    from ...secrets.detectors import Detectors
    from ...secrets.redact import Redactor

    return Redactor(Detectors().with_patterns(patterns))


def register(app: typer.Typer) -> None:
    from ..command import register

    register(app, "show", show_command)

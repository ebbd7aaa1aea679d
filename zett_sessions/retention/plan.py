"""Which sessions a retention policy deletes, and which it leaves alone and why.

Order of the rules (each one only ever *removes* sessions from the selection):

1. ids (full or prefixes) and policy filters select candidates: both given means both must
   hold; a named id that does not exist is an error unless ``missing_ok``;
2. ``keep_last`` keeps the N most recently active candidates;
3. ``skip_active`` keeps candidates with activity inside that window (an agent may still write);
4. children: ``refuse`` names every child of a planned session that is not planned itself (a
   guard then refuses the run); ``delete`` adds the whole subtree (cycle-safe), but a kept
   descendant (active or ``keep_last``) keeps every planned ancestor too, so nothing that is
   kept ever loses its parent by surprise; ``keep`` leaves children with a dangling parent id;
5. guards: children, ``max_sessions``, ``max_percent`` (of every session in the database).

``build_plan`` runs no transaction of its own: the caller wraps it in ``Database.read()`` to show
the plan, or in ``Database.write()`` to re-evaluate it just before deleting.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from ..errors import SessionNotFound, UsageError
from ..queries.resolve import UNADDRESSABLE, id_spellings, resolve_session, session_exists
from ..queries.sessions import SessionFilter, iter_sessions, last_message_sql, unknown_age_sessions
from ..reports import Refusal
from ..rows import session_select, text_or_none
from ..session_database import SessionDatabase
from ..timeutil import parse_db_time, utc_now
from ..values import plural
from .models import BlockedChild, DeletePlan, PlannedSession, RetentionPolicy, SkippedSession

# Bytes a raw row takes besides its large text columns (ids, times, counters, four index
# entries, page slack); calibrated on the benchmark database, where the estimate lands
# within 1 % of what the delete freed.
RAW_ROW_OVERHEAD = 900
SNAPSHOT_ROW_OVERHEAD = 300
EXACT_BYTES_LIMIT = 100_000  # planned raw rows measured one by one; beyond, an average

UNKNOWN_AGE = (
    "its last activity (updated_at) is not a time in the stored form, so its age is unknown "
    "(`zett-sessions verify` reports it)"
)


def nothing_selected() -> UsageError:
    return UsageError(
        "nothing selected: name sessions (or `-` for ids on stdin), give a policy such as "
        "--older-than 90d, or pass --all explicitly"
    )


async def build_plan(
    db: SessionDatabase,
    policy: RetentionPolicy,
    *,
    now: datetime | None = None,
    measure_bytes: bool = True,
) -> DeletePlan:
    """The plan for ``policy`` as the database stands now (no transaction of its own)."""
    if not policy.selects_something:
        raise nothing_selected()
    now = now or utc_now()
    skipped: list[SkippedSession] = []
    resolved: tuple[str, ...] | None = None
    if policy.ids is not None:
        resolved, missing = await _resolve_ids(db, policy.ids, policy.exact_ids, policy.missing_ok)
        skipped.extend(missing)
    selection = await _evaluate(db, policy, resolved, now)
    skipped.extend(selection.skipped)
    planned = selection.planned
    blocked: list[BlockedChild] = []
    children: dict[str, dict[str, dict[str, Any]]] = {}
    if db.layout.has_sessions_table and planned:
        children = await _children(db, planned)
        if policy.children == "refuse":
            blocked = [
                BlockedChild(id=child, parent_session_id=parent, **info)
                for parent, kids in children.items()
                for child, info in kids.items()
                if child not in planned
            ]
    sessions = await _completed(db, list(planned.values()), children, measure_bytes)
    total = await _total_sessions(db)
    plan = DeletePlan(
        database=db.path,
        layout=db.layout.name,
        now=now,
        active_before=policy.filters.active_before,
        skip_active_since=now - policy.skip_active if policy.skip_active else None,
        resolved_ids=resolved,
        sessions=tuple(sessions),
        skipped=tuple(skipped),
        blocked_children=tuple(blocked),
        total_sessions=total,
    )
    return plan.model_copy(update={"refusals": tuple(check_guards(plan, policy))})


async def replan(
    db: SessionDatabase, policy: RetentionPolicy, plan: DeletePlan, ids: Sequence[str]
) -> tuple[list[PlannedSession], list[SkippedSession]]:
    """``build_plan`` again, as the database stands now, for the part of ``plan`` that is the
    sessions ``ids`` (one batch of a delete): which of them the policy still selects, and why
    the others not.  ``ids`` must hold every planned descendant of the selected ones among
    them.  ``--keep-last`` is decided over the whole selection, as in ``build_plan``."""
    wanted = set(ids)
    selected = tuple(s.id for s in plan.sessions if s.id in wanted and s.via == "selected")
    recent = await _most_recent(db, policy, plan.resolved_ids)
    selection = await _evaluate(
        db,
        policy,
        selected if policy.ids is not None else None,
        utc_now(),
        scope=selected,
        recent=recent,
    )
    sessions = await _completed(db, list(selection.planned.values()), {}, measure_bytes=False)
    return sessions, selection.skipped


@dataclass
class _Selection:
    planned: dict[str, _Candidate]
    skipped: list[SkippedSession]


async def _evaluate(
    db: SessionDatabase,
    policy: RetentionPolicy,
    resolved: tuple[str, ...] | None,
    now: datetime,
    *,
    scope: tuple[str, ...] | None = None,
    recent: _Recent | None = None,
) -> _Selection:
    """Rules 1–4 of the module docstring: the planned sessions and the ones left alone.

    ``scope`` restricts the candidates to those ids (``replan``); ``recent`` then says which
    of them ``--keep-last`` keeps (decided over the whole selection, not just the scope).
    """
    skipped: list[SkippedSession] = []
    filters = replace(policy.filters, ids=scope if scope is not None else resolved)
    candidates = await _select(db, filters)
    ageless = await unknown_age_sessions(db, filters)
    skipped.extend(
        SkippedSession(id=sid, reason="unknown-age", detail=UNKNOWN_AGE) for sid in ageless
    )
    if resolved is not None:
        listed = {session.id for session in candidates} | set(ageless)
        unlisted = [sid for sid in resolved if sid not in listed]
        if policy.has_filters:
            skipped.extend(
                SkippedSession(id=sid, reason="no-match", detail="does not match the policy")
                for sid in unlisted
            )
        else:
            candidates.extend(await _rowless_sessions(db, unlisted))

    protected: dict[str, SkippedSession] = {}
    for position, session in enumerate(candidates):
        if not session.addressable:
            protected[session.id] = skipped_session(session, "unaddressable", UNADDRESSABLE)
            continue
        reason = _protection(session, position, policy, now, recent)
        if reason is not None:
            protected[session.id] = skipped_session(session, *reason)
    planned = {s.id: s for s in candidates if s.id not in protected}
    skipped.extend(protected.values())
    if db.layout.has_sessions_table and planned and policy.children == "delete":
        skipped.extend(await _add_subtrees(db, planned, protected, policy, now))
    return _Selection(planned, skipped)


def check_guards(plan: DeletePlan, policy: RetentionPolicy) -> list[Refusal]:
    """Every guard the plan trips (empty: it may run)."""
    refusals: list[Refusal] = []
    if plan.blocked_children:
        parents = len({child.parent_session_id for child in plan.blocked_children})
        children = len(plan.blocked_children)
        refusals.append(
            Refusal(
                guard="children",
                message=f"{plural(parents, 'planned session')} "
                f"{'has' if parents == 1 else 'have'} {plural(children, 'child session')} "
                f"that {'is' if children == 1 else 'are'} not planned; choose --children "
                "delete (the whole subtree) or --children keep (children keep a dangling "
                "parent id)",
            )
        )
    if policy.max_sessions is not None and len(plan.sessions) > policy.max_sessions:
        refusals.append(
            Refusal(
                guard="max-sessions",
                message=f"the plan deletes {len(plan.sessions):,} sessions, more than "
                f"--max-sessions {policy.max_sessions:,}",
            )
        )
    if policy.max_percent is not None and plan.percent > policy.max_percent:
        refusals.append(
            Refusal(
                guard="max-percent",
                message=f"the plan deletes {plan.percent:.1f}% of the {plan.total_sessions:,} "
                f"sessions, more than --max-percent {policy.max_percent:g}",
            )
        )
    return refusals


# --- selection ---------------------------------------------------------------------------


async def _resolve_ids(
    db: SessionDatabase, texts: Sequence[str], exact_only: Collection[str], missing_ok: bool
) -> tuple[tuple[str, ...], list[SkippedSession]]:
    """Full ids in one query; prefixes and rowless sessions one by one (they are rare).

    A text is tried as typed, then stripped (``id_spellings``, as ``resolve_session`` does),
    then as a prefix; one in ``exact_only`` (read from a pipe) only as it is.
    """
    exact: set[str] = set()
    if db.layout.has_sessions_table and texts:
        candidates = list(dict.fromkeys(t for text in texts for t in id_spellings(text)))
        dialect = db.dialect
        rows = await db.fetchall(
            f"SELECT id FROM agent_sessions WHERE id {dialect.in_ids}",
            (dialect.ids_param(candidates),),
        )
        exact = {row[0] for row in rows}
    resolved: list[str] = []
    missing: list[SkippedSession] = []
    for text in texts:
        only_exact = text in exact_only
        spellings = (text,) if only_exact else id_spellings(text)
        found = next((t for t in spellings if t in exact), None)
        try:
            if found is None and only_exact:
                if not await session_exists(db, text):  # a session with no session row
                    raise SessionNotFound(text)
                found = text
            resolved.append(found if found is not None else await resolve_session(db, text))
        except SessionNotFound:
            if not missing_ok:
                raise
            missing.append(SkippedSession(id=text, reason="not-found", detail="no such session"))
    return tuple(dict.fromkeys(resolved)), missing


@dataclass(slots=True)
class _Candidate:
    """A session row as the plan needs it (plain and cheap: a plan may hold 100k of them)."""

    id: str
    parent_session_id: str | None
    session_type: int
    title: str | None
    agent_name: str | None
    created_at: datetime | None
    updated_at: datetime | None
    messages: int
    via: str = "selected"
    addressable: bool = True  # False: a damaged id that is not UTF-8 text (no text names it)
    rowless: bool = False  # raw rows or snapshots but no session row (a damaged file)
    dated: bool = True  # False: updated_at is not a time in the stored form (age unknown)
    # The time of the last message (created_at if there is none): a rename, which sets
    # updated_at too, is no activity.  ``None``: not a time; updated_at stands in.
    last_activity: datetime | None = None


async def _select(
    db: SessionDatabase, filters: SessionFilter, via: str = "selected"
) -> list[_Candidate]:
    """Sessions matching ``filters``, newest activity first, with their message counts."""
    if not db.layout.has_sessions_table:  # layout A0: sessions derived from the raw log
        return [
            _Candidate(
                s.session_id,
                None,
                0,
                None,
                None,
                s.created_at,
                s.updated_at,
                s.message_count,
                via,
                dated=s.updated_at is not None,
                last_activity=s.updated_at,  # layout A0: the time of its last message
            )
            async for s in iter_sessions(db, filters)
        ]
    where, params = filters.where(db)
    rows = await db.fetchall(
        f"SELECT {session_select(db.layout)}, (SELECT count(*) FROM raw_messages r "
        "WHERE r.session_id = agent_sessions.id) AS message_count, "
        f"{last_message_sql('agent_sessions')} AS last_message_at, "
        f"{db.dialect.stored_bytes('id')} AS stored_id, {db.dialect.dated('updated_at')} AS dated "
        f"FROM agent_sessions{where} ORDER BY updated_at DESC, id DESC",
        params,
    )
    return [
        _Candidate(
            str(row["id"]),
            text_or_none(row["parent_session_id"]),
            row["session_type"] if isinstance(row["session_type"], int) else 0,
            text_or_none(row["title"]),
            text_or_none(row["agent_name"]),
            parse_db_time(row["created_at"]),
            parse_db_time(row["updated_at"]),
            row["message_count"],
            via,
            isinstance(row["id"], str) and row["stored_id"] == row["id"].encode(),
            dated=bool(row["dated"]),
            last_activity=parse_db_time(row["last_message_at"] or row["created_at"]),
        )
        for row in rows
    ]


async def _rowless_sessions(db: SessionDatabase, ids: Sequence[str]) -> list[_Candidate]:
    """Named sessions that have raw rows or snapshots but no session row (damaged files)."""
    if not ids:
        return []
    rows = await db.fetchall(
        "SELECT value AS id, "
        "(SELECT count(*) FROM raw_messages WHERE session_id = value) AS message_count, "
        "coalesce((SELECT min(created_at) FROM raw_messages WHERE session_id = value), "
        "(SELECT min(created_at) FROM session_snapshots WHERE session_id = value)) AS created, "
        "coalesce((SELECT max(created_at) FROM raw_messages WHERE session_id = value), "
        "(SELECT max(created_at) FROM session_snapshots WHERE session_id = value)) AS updated "
        f"FROM {db.dialect.ids_table} "
        "WHERE EXISTS (SELECT 1 FROM raw_messages WHERE session_id = value) "
        "OR EXISTS (SELECT 1 FROM session_snapshots WHERE session_id = value)",
        (db.dialect.ids_param(ids),),
    )
    return [
        _Candidate(
            row["id"],
            None,
            0,
            None,
            None,
            parse_db_time(row["created"]),
            parse_db_time(row["updated"]),
            row["message_count"],
            rowless=True,
            dated=parse_db_time(row["updated"]) is not None,
            last_activity=parse_db_time(row["updated"]),
        )
        for row in rows
    ]


@dataclass(frozen=True)
class _Recent:
    """The sessions ``--keep-last`` keeps, decided over the whole selection: ``ids`` are the
    most recent N with a session row; ``rowless`` is true when there are fewer than N of
    them, so sessions without a session row (which come after them) may be kept too."""

    ids: frozenset[str]
    rowless: bool


async def _most_recent(
    db: SessionDatabase, policy: RetentionPolicy, resolved: tuple[str, ...] | None
) -> _Recent | None:
    if not policy.keep_last:
        return None
    filters = replace(policy.filters, ids=resolved)
    if not db.layout.has_sessions_table:
        ids = [c.id for c in (await _select(db, filters))[: policy.keep_last]]
    else:
        where, params = filters.where(db)
        rows = await db.fetchall(
            f"SELECT id FROM agent_sessions{where} ORDER BY updated_at DESC, id DESC LIMIT ?",
            [*params, policy.keep_last],
        )
        ids = [str(row[0]) for row in rows]
    return _Recent(frozenset(ids), rowless=len(ids) < policy.keep_last)


def _protection(
    session: _Candidate,
    position: int,
    policy: RetentionPolicy,
    now: datetime,
    recent: _Recent | None = None,
) -> tuple[str, str] | None:
    if recent is None:
        kept = position < policy.keep_last
    else:  # a scope of the selection: decided over the whole of it (never keeps fewer)
        kept = session.id in recent.ids or (recent.rowless and session.rowless)
    if kept:
        return "keep-last", f"one of the {policy.keep_last} most recent (--keep-last)"
    return _maybe_active(session, policy, now)


def _maybe_active(
    session: _Candidate, policy: RetentionPolicy, now: datetime
) -> tuple[str, str] | None:
    """``--skip-active``: a session with recent activity — a message (or, with none, its
    creation) inside the window; a rename is none — or whose activity time cannot be read (it
    may be active now), is left alone."""
    if not policy.skip_active:
        return None
    if not session.dated or session.updated_at is None:
        return "unknown-age", f"{UNKNOWN_AGE}; it may be active (--skip-active 0 deletes it)"
    if (session.last_activity or session.updated_at) >= now - policy.skip_active:
        if session.messages == 0:  # its creation is its activity: no message to speak of
            return (
                "active",
                f"created within the last {_window(policy)}, no messages yet (--skip-active)",
            )
        return "active", f"a message within the last {_window(policy)} (--skip-active)"
    return None


def _window(policy: RetentionPolicy) -> str:
    seconds = int(policy.skip_active.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


class _Described(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def updated_at(self) -> datetime | None: ...


def skipped_session(session: _Described, reason: str, detail: str) -> SkippedSession:
    """Why ``session`` (a candidate or a planned session) is left alone."""
    return SkippedSession(
        id=session.id,
        reason=reason,
        detail=detail,
        title=session.title,
        updated_at=session.updated_at,
    )


# --- children ----------------------------------------------------------------------------


async def _children(
    db: SessionDatabase, parents: Iterable[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """parent id → {child id → title/updated_at} for every direct child of ``parents``."""
    rows = await db.fetchall(
        "SELECT id, parent_session_id, title, updated_at FROM agent_sessions "
        f"WHERE parent_session_id {db.dialect.in_ids} ORDER BY updated_at DESC, id DESC",
        (db.dialect.ids_param(parents),),
    )
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        result.setdefault(row["parent_session_id"], {})[row["id"]] = {
            "title": text_or_none(row["title"]),
            "updated_at": parse_db_time(row["updated_at"]),
        }
    return result


async def _add_subtrees(
    db: SessionDatabase,
    planned: dict[str, _Candidate],
    protected: dict[str, SkippedSession],
    policy: RetentionPolicy,
    now: datetime,
) -> list[SkippedSession]:
    """``--children delete``: add every descendant (breadth first, each id once, so a cycle of
    parent ids ends); a kept descendant keeps its planned ancestors.  Returns new skips."""
    skipped: list[SkippedSession] = []
    kept: list[tuple[str, str]] = []  # (kept session, its parent)
    seen = set(planned) | set(protected)
    frontier = list(planned)
    while frontier:
        children = await _children(db, frontier)
        kept.extend(
            (kid, parent) for parent, kids in children.items() for kid in kids if kid in protected
        )
        fresh = {
            kid: parent for parent, kids in children.items() for kid in kids if kid not in seen
        }
        seen.update(fresh)
        frontier = []
        if not fresh:
            break
        found = await _select(db, SessionFilter(ids=tuple(fresh)), "descendant")
        for kid in fresh.keys() - {child.id for child in found}:
            # listed as a child, yet no text names it (an id that is not UTF-8): it cannot be
            # deleted, so it stays, and so do its ancestors
            skipped.append(SkippedSession(id=kid, reason="unaddressable", detail=UNADDRESSABLE))
            kept.append((kid, fresh[kid]))
        for child in found:
            if (reason := _maybe_active(child, policy, now)) is not None:
                skipped.append(skipped_session(child, *reason))
                kept.append((child.id, fresh[child.id]))
                continue
            planned[child.id] = child
            frontier.append(child.id)
    for kept_id, parent in kept:
        skipped.extend(_drop_ancestors(planned, parent, kept_id))
    _prune_orphaned_descendants(planned)
    return skipped


def _prune_orphaned_descendants(planned: dict[str, _Candidate]) -> None:
    """A descendant is planned only for its ancestor's sake: unplan it when that one stays."""
    changed = True
    while changed:
        changed = False
        for sid, session in list(planned.items()):
            if session.via == "descendant" and session.parent_session_id not in planned:
                del planned[sid]
                changed = True


def _drop_ancestors(
    planned: dict[str, _Candidate], parent: str | None, kept_id: str
) -> list[SkippedSession]:
    """Un-plan ``parent`` and its planned ancestors (a kept session must keep its parent)."""
    dropped: list[SkippedSession] = []
    visited = {kept_id}
    while parent is not None and parent in planned and parent not in visited:
        visited.add(parent)
        session = planned.pop(parent)
        dropped.append(
            skipped_session(session, "kept-descendant", f"its descendant {kept_id} is kept")
        )
        parent = session.parent_session_id
    return dropped


# --- counts ------------------------------------------------------------------------------


async def _completed(
    db: SessionDatabase,
    sessions: list[_Candidate],
    children: dict[str, dict[str, dict[str, Any]]],
    measure_bytes: bool,
) -> list[PlannedSession]:
    """The sessions with their children, snapshot counts and (optionally) estimated bytes."""
    if not sessions:
        return []
    dialect = db.dialect
    ids = dialect.ids_param(s.id for s in sessions)
    snapshot_bytes = (
        f"sum({dialect.byte_length('message_json')}) + count(*) * {SNAPSHOT_ROW_OVERHEAD}"
        if measure_bytes
        else "0"
    )
    snapshots = {
        row[0]: (int(row[1]), int(row[2] or 0))
        for row in await db.fetchall(
            f"SELECT session_id, count(*), {snapshot_bytes} FROM session_snapshots "
            f"WHERE session_id {dialect.in_ids} GROUP BY session_id",
            (ids,),
        )
    }
    raw_bytes = await _raw_bytes(db, sessions, ids) if measure_bytes else {}
    none = (0, 0)
    # model_construct: every value was typed above, and a plan may hold 100k sessions.
    return [
        PlannedSession.model_construct(
            id=s.id,
            title=s.title,
            agent_name=s.agent_name,
            session_type=s.session_type,
            parent_session_id=s.parent_session_id,
            created_at=s.created_at,
            updated_at=s.updated_at,
            last_activity=s.last_activity or s.updated_at,
            messages=s.messages,
            snapshots=snapshots.get(s.id, none)[0],
            estimated_bytes=raw_bytes.get(s.id, 0) + snapshots.get(s.id, none)[1],
            children=tuple(children.get(s.id, ())),
            via="descendant" if s.via == "descendant" else "selected",
        )
        for s in sessions
    ]


async def _raw_bytes(
    db: SessionDatabase, sessions: list[_Candidate], ids: object
) -> dict[str, int]:
    """Bytes the planned raw rows occupy: measured row by row for plans up to
    ``EXACT_BYTES_LIMIT`` messages; above that (reading gigabytes just for an estimate would
    cost a good share of the delete itself) the file's average bytes per raw row is used."""
    if sum(s.messages for s in sessions) <= EXACT_BYTES_LIMIT:
        sizes = " + ".join(
            f"coalesce({db.dialect.byte_length(column)}, 0)"
            for column in ("message_json", "content", "metadata_json", "tags_json")
            if db.layout.has_column("raw_messages", column)
        )
        rows = await db.fetchall(
            f"SELECT session_id, sum({sizes}) + count(*) * {RAW_ROW_OVERHEAD} "
            f"FROM raw_messages WHERE session_id {db.dialect.in_ids} GROUP BY session_id",
            (ids,),
        )
        return {row[0]: int(row[1]) for row in rows}
    per_row = await db.space().bytes_per_raw_row()
    return {s.id: round(s.messages * per_row) for s in sessions}


async def _total_sessions(db: SessionDatabase) -> int:
    if db.layout.has_sessions_table:
        return int(await db.scalar("SELECT count(*) FROM agent_sessions"))
    return int(await db.scalar("SELECT count(DISTINCT session_id) FROM raw_messages"))

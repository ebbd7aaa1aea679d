"""The SQLite upgrade steps: every statement that brings a file of an older layout to D/E.

``Database.upgrade`` runs them in one write transaction; ``upgrade`` previews the same list, so
the plan shown is exactly what runs.  A PostgreSQL schema is migrated by its own named
migrations (``postgres.schema``) and is always the newest.
"""

from __future__ import annotations

from ..schema import INDEXES, TABLES, Layout


def upgrade_steps(layout: Layout) -> list[str]:
    """Every statement that brings ``layout`` to D/E, in the order ``Database.upgrade`` runs
    them (in one transaction): missing tables, columns and indexes, then the data the new
    columns and table need.  Empty for a file that is already there (``upgrade`` previews it)."""
    statements: list[str] = []
    for table, ddl in TABLES.items():
        if table not in layout.columns:
            statements.append(ddl)
            continue
        for column, declaration in _declared_columns(ddl):
            if not layout.has_column(table, column):
                statements.append(f"ALTER TABLE {table} ADD COLUMN {declaration}")
    statements.extend(sql for name, sql in INDEXES.items() if name not in layout.indexes)
    if statements and not layout.has_column("raw_messages", "started_at"):
        # Rows from before timing existed were instantaneous at insertion time.
        statements.append(
            "UPDATE raw_messages SET started_at = created_at, completed_at = created_at"
        )
    if statements and not layout.has_sessions_table:
        # A0 kept no session rows: derive them so the sessions stay listable.
        statements.append(
            "INSERT INTO agent_sessions (id, session_type, created_at, updated_at) "
            "SELECT session_id, 0, min(created_at), max(created_at) "
            "FROM raw_messages GROUP BY session_id"
        )
    return statements


def _declared_columns(ddl: str) -> list[tuple[str, str]]:
    """(name, declaration) of each column in one of our CREATE TABLE statements.

    ``ALTER TABLE … ADD COLUMN`` cannot add a NOT NULL column without a default, so such
    columns get the neutral default zett-agent's ORM would have written.
    """
    result = []
    for line in ddl.splitlines()[1:-1]:
        text = line.strip().rstrip(",").strip()
        if text.startswith("PRIMARY KEY"):
            continue
        name = text.split()[0]
        if "NOT NULL" in text and "DEFAULT" not in text:
            default = "'{}'" if name.endswith("_json") else ("0" if "INTEGER" in text else "''")
            text = text.replace("NOT NULL", f"DEFAULT {default} NOT NULL")
        result.append((name, text))
    return result

"""SQLite storage: zett-agent's session database as one file per machine (aiosqlite).

Modules: ``readonly`` (where the file is and how it is read: standard library only, so shell
completion can use it), ``database`` (``Database``: the one aiosqlite connection, transactions
and the translation of SQLite's errors), ``dialect`` (the SQL the shared queries are written
in, and SQLite's answers to what differs), ``storage`` (``SQLiteSessionStorage``) and
``upgrade`` (the statements that bring an older layout to the newest).
"""

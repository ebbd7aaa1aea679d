"""SQLite storage: zett-agent's session database as one file per machine (aiosqlite).

Modules: ``readonly`` (where the file is and how it is read: standard library only, so shell
completion can use it), ``errors`` (SQLite's errors as the typed ones), ``database``
(``Database``: the one aiosqlite connection and its transactions), ``dialect`` (the SQL the
shared queries are written in, and SQLite's answers to what differs), ``storage``
(``SQLiteSessionStorage``) and ``upgrade`` (the statements that bring an older layout to the
newest).  What the database object offers beyond SQL: ``space`` (the file around a delete),
``integrity`` (verify's whole-database check), ``info`` (the file's facts), ``verify`` (the
reader of verify's scan) and ``hints`` (what to do next about a file's errors).
"""

"""PostgreSQL storage: zett-agent's session contract on a shared server (asyncpg).

Modules: ``dsn`` (recognising and masking connection strings; imports nothing heavy),
``settings`` (what the URL asks of every connection), ``schema`` (the DDL as named, versioned
migrations), ``connection`` (the one ``connect()``, the pool, transactions, retries and the
translation of server errors into ``zett_sessions.errors``), ``append`` (an append as one call
of the schema's append function, one round trip), ``once`` (writes settled after a connection
breaks with their outcome unknown, stored exactly once) and ``storage``
(``PostgresSessionStorage``).  What the database object offers beyond SQL: ``space`` (the
tables around a delete), ``schema_check`` (verify's whole-database check), ``info`` and
``replica`` (the server's facts), ``verify`` (the reader of verify's scan) and ``hints``.  Only
``connection`` and ``append`` import asyncpg (``storage`` and ``verify`` through them), which
comes with the optional extra ``postgres`` (``pip install '.[postgres]'`` in a clone).
"""

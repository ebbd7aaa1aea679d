"""PostgreSQL storage: zett-agent's session contract on a shared server (asyncpg).

Modules: ``dsn`` (recognising and masking connection strings; imports nothing heavy), ``schema``
(the DDL as named, versioned migrations), ``connection`` (the pool, transactions, retries and the
translation of server errors into ``zett_sessions.errors``) and ``storage``
(``PostgresSessionStorage``).  Only ``connection`` and ``storage`` import asyncpg, which comes
with the optional extra ``postgres`` (``pip install '.[postgres]'`` in a clone).
"""

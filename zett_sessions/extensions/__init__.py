"""zett-agent's extension modules, where code written against zett-agent looks for them.

``zett_sessions.extensions.persistence`` holds ``BaseSessionPersistenceExtension`` and the read
models; ``zett_sessions.extensions.sqlite`` holds ``SQLiteSessionExtension``.
"""

"""The storage contract, in one place: what every session store is and does.

Modules: ``contract`` (``SessionStorage``: the three operations an agent runtime needs),
``rules`` (the argument checks and verdicts every backend applies alike), ``base``
(``SessionStoreBase``: the public methods written once over a backend's SQL) and ``sync``
(``storage.sync()``: the same store as plain blocking calls).  The backends (``sqlite.storage``,
``postgres.storage``) supply only their SQL.
"""

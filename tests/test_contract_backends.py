"""The contract kit on every backend: the same ``SessionStorageContract`` tests on SQLite and on
PostgreSQL (``store`` is parametrized by backend; see ``pgtest.py``)."""

from __future__ import annotations

import pytest

from pgtest import Store
from zett_sessions.testing import SessionStorageContract, StorageFactory


@pytest.mark.pooled
class TestSessionStorageContract(SessionStorageContract):
    @pytest.fixture
    def storage_factory(self, store: Store) -> StorageFactory:
        factory: StorageFactory = store.open
        return factory

    @pytest.fixture
    def process_factory(self, store: Store) -> StorageFactory:
        factory: StorageFactory = store.factory
        return factory

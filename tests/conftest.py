"""Shared pytest fixtures.

The generic fixtures every test module relies on come first; fixtures specific to one layer
(e.g. the CLI tests) are added further down.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from pgtest import backend, pg_dsn, pg_server, store  # noqa: F401  (fixtures for every module)

# --- no clock: hypothesis neither times examples nor judges generation speed ----------------

settings.register_profile(
    "zett-sessions", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("zett-sessions")

# --- generic fixtures (all tests) ---------------------------------------------------------

DATA_DIR = Path(__file__).parent / "data"
SAMPLES = {
    "newest": "zett-agent-newest.sqlite3",
    "legacy": "zett-agent-legacy.sqlite3",
}

FixtureDb = Callable[..., Path]


@pytest.fixture
def fixture_db(tmp_path: Path) -> FixtureDb:
    """Copy a sample database into ``tmp_path`` and return the copy's path.

    ``fixture_db("newest")`` or ``fixture_db("legacy")`` (or a file name under tests/data);
    ``name=`` chooses the copy's file name.  Never open tests/data files directly: even a
    read-only open of a WAL file creates -wal/-shm side files next to it.
    """

    def copy(sample: str = "newest", name: str | None = None) -> Path:
        source = DATA_DIR / SAMPLES.get(sample, sample)
        target = tmp_path / (name or source.name)
        shutil.copyfile(source, target)
        return target

    return copy


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the database env var at a missing file in tmp_path; pin terminal width/colour."""
    monkeypatch.setenv("ZETT_SESSIONS_DB", str(tmp_path / "env-default" / "sessions.sqlite3"))
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")


# --- layer-specific fixtures below --------------------------------------------------------


# --- ordering: checks that read what other tests recorded run after them ------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "run_last: run after every other selected test (reads what they recorded)"
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    last = [item for item in items if item.get_closest_marker("run_last")]
    items[:] = [item for item in items if not item.get_closest_marker("run_last")] + last

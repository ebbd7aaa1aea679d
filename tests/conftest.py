"""Shared pytest fixtures.

The generic fixtures every test module relies on come first; fixtures specific to one layer
(e.g. the CLI tests) are added further down.
"""

from __future__ import annotations

import fnmatch
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from pgtest import (  # noqa: F401  (fixtures for every module)
    backend,
    databases,
    pg_dsn,
    pg_pooler,
    pg_sample,
    pg_seeded,
    pg_server,
    pg_shared_samples,
    pg_standby,
    pytest_generate_tests,
    store,
)

# --- no clock: hypothesis neither times examples nor judges generation speed ----------------

settings.register_profile(
    "zett-sessions", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("zett-sessions")

# --- generic fixtures (all tests) ---------------------------------------------------------

# Tests press Ctrl-C in child processes (tail -f, a destructive command's question, the stress
# run's followers) as a user does at a terminal.  A suite started in the background by a shell
# without job control (`bash .ci/run &` in a script) inherits SIGINT ignored, and every child
# would too: their Ctrl-C would do nothing and those tests would fail on their safety net.
# A handled signal is reset to the default in a child, so the children get the terminal's.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TESTS_DIR = Path(__file__).parent
DATA_DIR = TESTS_DIR / "data"
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


# --- coverage of the code that runs only in child processes -------------------------------
#
# Under ``--cov`` (``.ci/run``) the children these modules start are measured too: the console
# script's start-up, the progress bar on a terminal, Ctrl-C, verify's worker processes.  Only
# these, because measuring every child would double the suite's time for no new lines.
# Coverage's own start-up hook (the ``.pth`` file it installs) starts measuring in a child
# that finds ``COVERAGE_PROCESS_START`` set; each child writes a data file of its own beside
# the run's, and pytest-cov combines them at the end.

MEASURED_CHILDREN = (
    "test_cli_progress.py",
    "test_cli_interrupt.py",
    "test_verify_children.py",
    "test_cli_help.py",
)


@pytest.fixture(autouse=True)
def measured_children(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = request.node.path.relative_to(TESTS_DIR).as_posix()
    if _matches(path, MEASURED_CHILDREN):
        config = _child_coverage_config(tmp_path_factory)
        if config is not None:
            monkeypatch.setenv("COVERAGE_PROCESS_START", str(config))


def _child_coverage_config(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A coverage configuration for children (``None`` when this run is not measured)."""
    try:
        import coverage
    except ImportError:
        return None
    current = coverage.Coverage.current()
    if current is None:
        return None
    config = tmp_path_factory.getbasetemp() / "coverage-children.ini"
    if not config.exists():
        data_file = Path(current.config.data_file).resolve()
        sources = ", ".join(current.config.source or ())
        config.write_text(f"[run]\nsource = {sources}\nparallel = true\ndata_file = {data_file}\n")
    return config


# --- layer-specific fixtures below --------------------------------------------------------


@pytest.fixture
def time_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Set the process's local zone (``TZ``, then ``time.tzset()``, as a process started with
    that ``TZ`` has it) for one test, and put it back: in-process commands show local times."""

    def set_zone(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


# --- the fast loop: `pytest -m "not slow"` (CI runs everything) ----------------------------
#
# Marked here by path and name rather than in the test files, so that editing a test never
# conflicts with this list.  Slow: whole files of sweeps and soaks, and the single tests that
# start processes, run hypothesis for seconds or sweep every command (`--durations` finds them;
# each takes a second or more, over its parameters, on the 2-core development machine).
# tests/test_slow_marks.py checks every name here is still a test in its file.

SLOW_FILES = ("test_hardening_*.py", "stress/*.py")
SLOW_TESTS: dict[str, tuple[str, ...]] = {
    # processes racing on one file or server
    "test_storage_backends.py": ("test_eight_writer_processes_append_densely_to_four_sessions",),
    "test_contract_backends.py": ("test_concurrent_processes_append_contiguously",),
    "test_contract_sqlite.py": ("test_concurrent_processes_append_contiguously",),
    "test_retention_execute.py": (
        "test_deleting_while_another_process_appends_to_an_unrelated_session",
    ),
    "test_retention_archive.py": ("test_an_archive_that_cannot_grow_its_file_deletes_nothing",),
    "test_verify_clean.py": ("test_ranges_checked_in_parallel_find_the_same_as_one_pass",),
    "test_verify_children.py": (
        "test_verify_children_end_when_the_parent_is_killed",
        "test_a_finished_verify_leaves_no_child_and_reports_as_before",
    ),
    "test_extensions.py": (
        "test_a_storage_never_closed_lets_the_interpreter_exit_without_a_traceback",
    ),
    "test_cli_copy.py": (
        "test_samples_to_postgresql_and_back_keep_every_envelope_byte_for_byte",
        "test_a_file_size_limit_reached_during_a_copy_is_disk_full",  # a process importing copy
    ),
    "test_storage_postgres.py": (
        "test_pgpassword_and_pgpass_work_as_with_psql",
        # waits for asyncpg's second reconnect attempt, a second after its first
        "test_a_server_going_away_logs_nothing_to_an_unconfigured_programs_stderr",
    ),
    # tail -f as a real process (the follow loop itself is tested poll by poll, fast)
    "test_cli_tail.py": (
        "test_tail_follow_prints_every_appended_record_exactly_once",
        "test_tail_follow_ends_when_the_session_is_deleted_and_started_again_under_its_id",
        "test_tail_follow_keeps_following_a_damaged_log_with_a_repeated_sequence",
        "test_tail_follow_latest_stays_on_the_session_it_picked",
        "test_tail_follow_never_blocks_the_writer",
        "test_tail_follow_ctrl_c_exits_0_without_a_traceback",
        "test_tail_follow_counts_polls_into_a_lock_as_nothing_new",
        "test_tail_follow_counts_polls_into_a_hot_journal_as_nothing_new",
        "test_sigterm_unwinds_like_ctrl_c_with_exit_143",
        "test_tail_follow_with_role_prints_only_new_records_of_that_role",
    ),
    # hypothesis properties with hundreds of examples, and big builds
    "test_render_transcript.py": (
        "test_live_annotator_reports_every_item_at_once_and_late_flags_agree",
        "test_holding_annotator_flags_exactly_what_project_drops",
    ),
    "test_verify_batches.py": ("test_the_hot_loop_flags_every_session_the_projection_would_cut",),
    "test_verify_scope.py": (
        "test_a_scoped_run_finds_what_the_whole_run_finds_for_every_session_in_scope",
        "test_list_problems_pages_are_the_whole_runs_error_sessions_newest_first",
    ),
    "test_codec.py": ("test_encode_decode_encode_is_the_identity",),
    "test_search_pattern.py": ("test_the_prefilter_never_drops_a_row_python_matches",),
    "test_envelope_readers.py": ("test_every_reader_of_an_envelope_agrees_with_the_decoder",),
    "test_cli_list.py": ("test_a_listing_sized_from_its_first_rows_looks_like_one_sized_from_all",),
    # real processes that wait out a time budget: a regex's per text, the blocked loop's alarm
    "test_cli_search.py": (
        "test_a_regex_that_backtracks_without_end_gives_that_text_up_with_exit_7",
        "test_search_holds_no_lock_while_its_output_waits_in_a_full_pipe",
    ),
    "test_cli_secrets.py": (
        "test_an_own_pattern_that_backtracks_without_end_is_a_usage_error_in_bounded_time",
    ),
    "test_cli_interrupt.py": (
        "test_one_signal_ends_work_that_blocks_the_loop",
        "test_work_that_blocks_the_loop_is_ended_where_it_blocks",
    ),
    # a reader process holding its output while the test writes
    "test_cli_show.py": ("test_show_holds_no_lock_while_its_output_waits_in_a_full_pipe",),
    # every inspection command once more: as a select-only role, on the standby, through the
    # pooler, and each planted fault on both backends
    "test_cli_postgres.py": ("test_a_role_that_may_only_select_runs_every_inspection",),
    "test_postgres_standby.py": (
        "test_every_inspection_on_the_standby_prints_what_it_prints_on_the_primary",
    ),
    "test_postgres_pooler.py": (
        "test_every_inspection_through_the_pooler_prints_what_it_prints_direct",
    ),
    "test_verify_postgres.py": ("test_each_planted_fault_is_found_alike_on_both_backends",),
    "test_seed_examples.py": ("test_concurrent_processes_append_contiguously",),
    # the README's commands and programs as a newcomer runs them, in processes
    "test_readme_examples.py": (
        "test_the_quick_start_runs_as_printed",
        "test_documented_python_block_runs",
    ),
    "test_cli_progress.py": ("test_nothing_is_drawn_when_stderr_is_no_terminal",),
    "test_make_db.py": ("test_deterministic",),
    # every value of four sessions read as a large one; peak RSS of real processes
    "test_large_values.py": (
        "test_values_read_on_their_own_and_bodies_written_in_pieces_change_no_output",
        "test_peak_memory_of_show_and_tail_stays_near_twice_the_largest_message",
    ),
}


# A command's test runs on every backend (the ``backend`` parameter); the fast loop runs it on
# SQLite only, and PostgreSQL through the backends' own tests (the storage contract, the
# seeds' examples, test_cli_postgres, the pooler's and the standby's), which stay in it.
BACKEND_TWIN_FILES = (
    "test_cli_*.py",
    "test_retention_*.py",
    "test_completions.py",
    "test_show_*.py",
    "test_large_values.py",
)


def is_slow(item: pytest.Item) -> bool:
    path = item.path.relative_to(TESTS_DIR).as_posix()
    name = getattr(item, "originalname", item.name)
    return (
        _matches(path, SLOW_FILES)
        or name in SLOW_TESTS.get(path, ())
        or (_backend(item) not in (None, "sqlite") and _matches(path, BACKEND_TWIN_FILES))
    )


def _backend(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("backend")


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(path, pattern) for pattern in patterns)


def pytest_itemcollected(item: pytest.Item) -> None:
    if is_slow(item):  # before `-m` deselects anything
        item.add_marker(pytest.mark.slow)


# --- ordering: checks that read what other tests recorded run after them ------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "run_last: run after the other tests of its SHARED group (reads what they recorded)",
    )
    config.addinivalue_line(
        "markers", "pooled: run on PostgreSQL through PgBouncer too (backend 'pgbouncer')"
    )


# --- parallel runs: `pytest -n 2` (pytest-xdist; .ci/run does this) -------------------------
#
# Each test goes to whichever worker is free, except that each group below runs on one worker,
# in collection order.  "verify-codes": the run_last check reads the codes that the planting
# modules' ``verify`` calls recorded in its own process.  "password-role": the one role the
# test cluster makes authenticate with a password (pgcluster.PASSWORD_ROLE) is created and
# dropped by each of these tests.  "standby": the one hot standby's replay is paused by some
# of these tests and resumed on leaving, which would take another's lag away (or hold back the
# rows another waits to see replayed).  (pytest-xdist's own ``xdist_group`` marks do not group
# under pytest 9.2, whose node ids no longer take the suffix they rely on.)

SHARED: dict[str, tuple[str, ...]] = {
    "verify-codes": (
        "tests/test_verify_*.py::*",
        "tests/test_cli_verify.py::test_every_code_is_planted_by_some_test",
    ),
    "password-role": (
        "tests/test_storage_postgres.py::test_pgpassword_and_pgpass_work_as_with_psql*",
        "tests/test_storage_postgres.py::test_a_wrong_password_is_access_denied_and_not_shown*",
    ),
    "standby": ("tests/test_postgres_standby.py::*",),
}


def shared_group(nodeid: str) -> str | None:
    """The group of SHARED the test ``nodeid`` belongs to, if any."""
    for group, patterns in SHARED.items():
        if any(fnmatch.fnmatchcase(nodeid, pattern) for pattern in patterns):
            return group
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's ``load`` distribution (the default of ``-n``) with SHARED's groups."""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return shared_group(nodeid) or nodeid

    return SharedGroupScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``run_last`` tests after the others; then SHARED's groups first, so that one worker
    starts on each while the others take the rest (a long group left to the end would be
    what the whole run waits for)."""
    items.sort(
        key=lambda item: (
            shared_group(item.nodeid) is None,
            item.get_closest_marker("run_last") is not None,
        )
    )

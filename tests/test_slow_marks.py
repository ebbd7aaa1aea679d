"""The fast loop's list (``conftest.SLOW_FILES`` / ``SLOW_TESTS``) still names real tests: a
renamed test would otherwise drop silently back into ``pytest -m "not slow"``."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from conftest import BACKEND_TWIN_FILES, SLOW_FILES, SLOW_TESTS, TESTS_DIR


def defined_tests(module_path: str) -> set[str]:
    """The test functions of a test module, methods of its test classes included (a contract
    kit's inherited tests too)."""
    module = importlib.import_module(Path(module_path).stem)
    names = {name for name, _ in inspect.getmembers(module, inspect.isfunction)}
    for _, cls in inspect.getmembers(module, inspect.isclass):
        names |= {name for name in dir(cls) if name.startswith("test_")}
    return names


def test_every_slow_pattern_matches_a_test_file() -> None:
    for pattern in (*SLOW_FILES, *BACKEND_TWIN_FILES):
        assert list(TESTS_DIR.glob(pattern)), pattern


def test_every_test_named_slow_is_a_test_of_its_file() -> None:
    for path, names in SLOW_TESTS.items():
        missing = set(names) - defined_tests(path)
        assert not missing, (path, missing)

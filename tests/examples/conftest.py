"""The examples folder's promise, kept as the unit folder's: a test here reads the committed example
folders (reports/examples/) and starts no process (ddpbench.testing.one_process). These tests are slow by
their folder (tests/conftest.py): each re-derives figures from every stored launch of many folders, so
they run in the whole suite and not in the inner loop."""

from ddpbench.testing.one_process import (  # noqa: F401  (pytest's hooks and fixtures, registered by name)
    _in_one_process,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)

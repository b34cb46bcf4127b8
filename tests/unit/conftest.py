"""The unit folder's promise, kept: a test here starts no process (ddpbench.testing.one_process: every way
of starting one is refused while a test here runs, and fails it), but ruff, the linter, by name."""

from ddpbench.testing.one_process import (  # noqa: F401  (pytest's hooks and fixtures, registered by name)
    _in_one_process,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)

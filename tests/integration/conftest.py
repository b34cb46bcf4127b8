"""The integration folder's promise, kept as the unit folder's: a test here starts no process
(ddpbench.testing.one_process). These tests run a stage whole in this process -- a report page with its
figures drawn, a command of the command line, a checker or a fit over whole folders, models built at their
published size, simulations of thousands of launches -- about half a second or more each on the project's
2-core VM, so they are slow by their folder (tests/conftest.py): they run in the whole suite, beside the
unit tests, and not in the inner loop."""

from ddpbench.testing.one_process import (  # noqa: F401  (pytest's hooks and fixtures, registered by name)
    _in_one_process,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)

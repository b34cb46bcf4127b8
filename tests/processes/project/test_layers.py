"""The flow in the folders: import-linter's contracts (pyproject.toml), no import cycle between any two
modules, and modules small enough to read in one sitting."""

from __future__ import annotations

import subprocess
import sys


def test_a_rank_loads_neither_the_analysis_nor_pandas():
    """What the contracts cannot see: a package's ``__init__`` running at import. A rank's process,
    after importing all it runs, holds none of the analysis, the report, the tables or pandas."""
    code = ("import sys, ddpbench.rank.__main__; print(' '.join(m for m in sys.modules if m.split('.')[0] in "
            "('pandas', 'matplotlib') or m.startswith(('ddpbench.analysis', 'ddpbench.report', "
            "'ddpbench.results.tables', 'ddpbench.sweep', 'ddpbench.launch'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert loaded.stdout.split() == []

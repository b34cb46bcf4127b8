"""What the command line pays before a command runs: ``import ddpbench.cli.program`` (every
command's parser) loads neither torch nor pandas, so a sweep starts its fork server (and ``--help``
answers) without waiting for them."""

import subprocess
import sys

from ddpbench.testing import ROOT


def test_the_command_line_imports_neither_torch_nor_pandas():
    code = ("import sys, ddpbench.cli.program; "
            "heavy = {'torch', 'pandas', 'numpy', 'matplotlib'}; "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & heavy)))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            check=True)
    assert loaded.stdout.split() == []

"""docs/whatif.md's answer to "how many GPUs should I ask for?": the committed example's command run again gives
the committed console, line for line (whatif writes no page, and its output holds no date or path)."""

import shlex

from ddpbench.testing import ROOT, run_main

EXAMPLE = ROOT / "reports/examples/whatif-gpus"


def test_the_committed_console_is_what_its_command_prints():
    argv = shlex.split((EXAMPLE / "command.txt").read_text())
    assert argv[:3] == ["python", "-m", "ddpbench"]
    out = run_main(*argv[3:])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == (EXAMPLE / "console.txt").read_text().splitlines()


def test_the_docs_quote_the_committed_example_and_its_command():
    docs = (ROOT / "docs/whatif.md").read_text()
    command = (EXAMPLE / "command.txt").read_text().strip()
    assert " ".join(command.split()) in " ".join(docs.replace("\\\n", " ").split())
    for line in (EXAMPLE / "console.txt").read_text().splitlines()[-5:-1]:
        assert line in docs

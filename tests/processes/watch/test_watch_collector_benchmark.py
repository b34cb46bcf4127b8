"""benchmarks/watch_collector.py run small (8 ranks for a second, its own processes: a collector pinned to
one core, two senders' processes): every row sent is received and written, and its note is one run of it
(a file it did not write is refused: tests/unit/project/test_benchmark_outputs.py)."""

from __future__ import annotations

from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("watch_collector")


def test_a_small_run_receives_and_writes_every_row(tmp_path, capsys):
    out = tmp_path / "w.md"
    bench.main(["--ranks", "8", "--rate", "20", "--seconds", "1", "--batch-s", "0.25", "--out", str(out)])
    text = out.read_text()
    assert text.startswith(bench.HEADER + "\n`python benchmarks/watch_collector.py --ranks 8 ")
    figures = {line.split(" | ")[0].strip("| "): line.split(" | ")[1].strip(" |") for line in text.splitlines()
               if line.startswith("| ") and " | " in line}
    assert figures["rows sent"] == figures["rows received by the collector"] == "160"  # 8 ranks, 20 steps
    assert figures["rows written to steps.csv"] == "160 (160 lines in the file)"
    assert figures["rows lost (sent, never received)"] == "0" and figures["connections refused"] == "none"
    assert figures["ranks that said hello, and bye"] == "8, 8"
    assert "load average before: " in text and "load average after: " in text and "ddpbench at " in text
    assert "| rows sent | 160 |" in capsys.readouterr().out


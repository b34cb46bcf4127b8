"""The verdict as a table first (docs/reading-the-report.md#verdict): a row per question, each answer with
how sure it is and what would settle it, the sentences behind a collapsed details element; the independent
checker reads the rows as it reads the sentences."""

from __future__ import annotations

import re
import shutil

import pytest

from ddpbench.analysis.diagnosis.claims import answer_claims
from ddpbench.analysis.folder import load
from ddpbench.audit import check, derive
from ddpbench.report.build import write_report
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"
#: the committed example of the default sweep (experiments/quick.toml)
QUICK = EXAMPLES / "quick-cpu"
#: the issue's limit on the Verdict's words outside the collapsed sentences (and the console's block)
WORDS = 120


def words(text: str) -> int:
    """Words as a reader counts them: whitespace-separated tokens with a letter or digit in them ("95",
    "CI", "0.96x" and "(95" count; a lone "%", "|" or dash does not)."""
    return len(re.findall(r"\S*[^\W_]\S*", text))


def visible_verdict(page: str) -> str:
    """The Verdict section's text outside its collapsed details, tags removed."""
    section = re.search(r"<h2[^>]*>Verdict</h2>(.*?)(?=<h2|</body>)", page, flags=re.DOTALL).group(1)
    shown = re.sub(r"<details>.*?</details>", " ", section, flags=re.DOTALL)
    return "Verdict " + re.sub(r"<[^>]+>", " ", shown)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("quick")
    for name in ("results.jsonl", "experiment.toml"):
        shutil.copy(QUICK / name, out / name)
    return write_report(out).read_text(encoding="utf-8")


def test_the_default_sweeps_report_opens_with_the_answer_table_in_at_most_120_words(page):
    first = re.search(r"<h2[^>]*>(.*?)</h2>", page).group(1)
    assert first == "Verdict"
    section = page[page.index(">Verdict</h2>"):]
    assert section.index('<table class="answers">') < section.index("<details><summary>In sentences</summary>")
    shown = visible_verdict(page)
    print(f"\nthe Verdict outside its collapsed sentences: {words(shown)} words")
    assert words(shown) <= WORDS, shown
    for question in ("scaling", "lost time", "what to change", "best setting", "fastest"):
        assert f'<th scope="row">{question}</th>' in section
    # the sentences are all there, collapsed
    details = section[section.index("<details>"):section.index("</details>")]
    # 0.96x the throughput of one rank, its interval (38 % to 60 % efficiency at world size 2) holding 1x: no band
    assert details.count("<li>") == 5 and "cannot tell whether it runs faster than one rank" in details
    assert "scales poorly" not in details


def test_the_checker_reads_the_answer_rows_as_printed_and_catches_a_changed_figure():
    measured = load(QUICK)
    claims = answer_claims(measured.findings, measured.answers)
    fig = derive(QUICK)  # the checker's figures of the folder, from its own reading of the records
    assert len(claims) == 5 and check(fig, claims) == []
    scaling, lost, fix, _, fastest = claims
    for claim, old, new in ((scaling, "0.96x", "1.96x"), (scaling, "48 %", "78 %"), (lost, "23.8 of", "13.8 of"),
                            (fix, "at least 12.5 ms", "at least 22.5 ms"), (fastest, "102 samples/s", "162 samples/s"),
                            (scaling, "cannot tell", "scales well")):
        assert old in claim["text"], (old, claim["text"])
        assert check(fig, [{**claim, "text": claim["text"].replace(old, new)}]) != [], (old, new)


def test_the_console_prints_the_table_in_100_columns_and_the_sentences_only_with_verbose(capsys):
    from rich.console import Console

    from ddpbench.cli.shared.running import finish_report

    finish_report(QUICK, Console(quiet=True), write=False)
    out = capsys.readouterr().out
    block = out[out.index("verdict (--verbose: in sentences)"):]
    assert "verdict in sentences:" not in out and max(len(line) for line in block.splitlines()) <= 100
    print(f"\nthe console's verdict block: {words(block)} words")
    assert words(re.sub(r"[━┃┏┓┗┛┡┩╇┳┻│├┤┼─┬┴└┘┌┐]", " ", block)) <= WORDS
    finish_report(QUICK, Console(quiet=True), write=False, verbose=True)
    out = capsys.readouterr().out
    assert out.index("what to change") < out.index("verdict in sentences:\n  scaling: ")

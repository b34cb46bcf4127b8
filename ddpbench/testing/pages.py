"""Reading a report page in tests: one section of it; whether a page is inert (no script, no event
handler, links only inside its folder); a reader run in-process, with its one-line error; the scaling
sections' headings and PNGs, and a PNG file checked by its signature; for the loss budget's sections,
summary rows of its columns (:func:`summary_row`), the report's context of them and a page's text; and
``whatif --from``'s table of one workload by world size (:func:`whatif_rows`)."""

from __future__ import annotations

import html
import math
import re
import signal
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
import pytest

from ddpbench.analysis.summary import BUDGET_LINES
from ddpbench.cli.program import main
from ddpbench.report.page import ReportContext
from ddpbench.testing.records import PNG_MAGIC

#: the only absolute link a page may hold: a constant of the timeline section
ALLOWED_URLS = ("https://ui.perfetto.dev",)
#: the scaling sections' headings, by the figure each draws
SECTION_TITLES = {
    "throughput": "Throughput vs world size",
    "efficiency": "Parallel efficiency vs world size",
    "breakdown": "Step time breakdown",
    "bucket": "Step time vs gradient bucket size",
}
#: the PNG each of those sections writes
PNGS = {"throughput": "throughput.png", "efficiency": "efficiency.png", "breakdown": "breakdown.png",
        "bucket": "bucket_step_time.png"}


def assert_png(path: Path) -> None:
    """``path`` is a file that starts as a PNG does."""
    assert path.is_file(), path
    assert path.read_bytes()[:8] == PNG_MAGIC, path


def section_of(page: str, title: str) -> str:
    """The section of a report page under the heading ``title``, up to the next section."""
    start = page.index(f"<h2>{title}</h2>")
    end = page.find("<section", start)
    return page[start:end if end > 0 else len(page)]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def assert_inert_page(page: Path, root: Path) -> None:
    """No script, no event handler, no embedded or framed content; every link a fragment, the one
    allowed constant, or a relative path to a file inside ``root``."""
    parser = _Tags()
    parser.feed(page.read_text(encoding="utf-8"))
    tags = parser.tags
    assert tags, page
    for tag, attrs in tags:
        assert tag not in ("script", "iframe", "object", "embed", "svg", "math", "form", "base", "link", "style"
                           ) or (tag == "style" and not attrs), (tag, attrs)
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name, value)
            if name in ("href", "src"):
                assert value is not None
                if value.startswith("#") or value in ALLOWED_URLS:
                    continue
                parts = urlsplit(value)
                assert not parts.scheme and not parts.netloc and not value.startswith("/"), (tag, value)
                target = (page.parent / value).resolve()
                assert target.is_relative_to(root.resolve()) and target.is_file(), (tag, value)
        if tag == "meta":
            assert dict(attrs).keys() <= {"charset", "name", "content"}, attrs


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang


def run_reader(capsys, argv: list[str], limit_s: int = 120) -> tuple[int, str, str]:
    """``python -m ddpbench ARGV`` in-process: (exit code, stdout, stderr); a hang is a failure."""
    capsys.readouterr()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit_s)
    try:
        code = main(argv)
    except _Hang:
        pytest.fail(f"{' '.join(argv)} did not finish within {limit_s} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_or_ok(code: int, out: str, err: str, argv) -> None:
    assert "Traceback" not in out + err, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and len(err.strip().splitlines()) == len(errors) + err.count("\nwarning:") + (
            err.startswith("warning:")), (argv, err)
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, (argv, text[-500:])


def summary_row(key: str, world_size: int = 2, bucket: float = 25.0, lines=None, baseline=39.1, loss=(47.0, 44.1, 50.2),
        **extra) -> dict:
    """A summary row: spec fields, and the budget's columns where ``lines`` is given (its top line the
    first declared, contention: no test reads it)."""
    row = {"key": key, "status": "ok", "strategy": "ddp", "model": "transformer", "model_size": "s", "model_args": "",
           "script": "", "script_args": "", "world_size": world_size, "bucket_cap_mb": bucket, "scaling": "weak",
           "step_ms_mean": 86.1, "oversubscribed": False, "noisy": False}
    if lines is not None:
        row.update(budget_baseline_ms=baseline, loss_ms=loss[0], loss_ms_low=loss[1], loss_ms_high=loss[2],
                   budget_top=next(iter(BUDGET_LINES)), budget_note=None, barrier_rank=math.nan,
                   barrier_last_share=math.nan, barrier_wait_ms=math.nan, barrier_rank_wait_ms=math.nan,
                   barrier_launch_ranks=None, barrier_cause=None, barrier_cause_detail=None)
        for name in BUDGET_LINES:
            value, low, high = lines.get(name, (math.nan,) * 3)
            row.update({f"loss_{name}_ms": value, f"loss_{name}_ms_low": low, f"loss_{name}_ms_high": high})
    row.update(extra)
    return row


def table(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def context(summary: pd.DataFrame, tmp_path: Path) -> ReportContext:
    empty = pd.DataFrame()
    return ReportContext(summary, empty, empty, empty, empty, tmp_path, tmp_path)


def page_text(markup) -> str:
    text = re.sub(r"</t[dh]>", " | ", str(markup))
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text)))


def whatif_rows(out: str, label: str) -> dict[int, list[str]]:
    """``whatif --from``'s rows of the workload labelled ``label``, by world size: each row's cells."""
    part = out.split(f"model output for {label}")[1].split("model output for ")[0]
    return {int(line.split()[0]): line.split() for line in part.splitlines()
            if line.split()[:1] and line.split()[0].isdigit()}

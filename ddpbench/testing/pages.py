"""Reading a report page in tests: one section of it; whether a page is inert (no script, no event
handler, links only inside its folder); a reader run in-process, with its one-line error; the scaling
sections' headings and PNGs, and a PNG file checked by its signature."""

from __future__ import annotations

import signal
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ddpbench.cli.program import main
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

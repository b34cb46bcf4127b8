"""Reading a report page in tests: one section of it."""

from __future__ import annotations


def section_of(page: str, title: str) -> str:
    """The section of a report page under the heading ``title``, up to the next section."""
    start = page.index(f"<h2>{title}</h2>")
    end = page.find("<section", start)
    return page[start:end if end > 0 else len(page)]

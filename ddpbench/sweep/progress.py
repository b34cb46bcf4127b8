"""Console progress for a sweep: one bar with an ETA, and one line per finished launch, which names its job as
the summary does (a script job by its file name and the arguments that differ between the sweep's jobs running
it, :func:`job_names`), never by its whole command line."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ddpbench.experiment.script_names import script_labels

_STYLE = {"ok": "green", "failed": "red", "timed_out": "red", "skipped": "yellow"}


def job_names(specs) -> dict[tuple[str, str], str]:
    """Each script job's name among ``specs`` (a sweep's), by its (script, script_args): ``main.py``, or
    ``train_cnn.py --epochs 3`` beside a job with other epochs
    (:func:`~ddpbench.experiment.script_names.script_labels`)."""
    return script_labels([(spec.script, spec.script_args) for spec in specs if getattr(spec, "script", "")])


class SweepProgress:
    def __init__(self, total: int, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=self.console, transient=True, refresh_per_second=2,
        )
        self.task = self.progress.add_task("starting", total=total)

    def __enter__(self) -> SweepProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    @property
    def completed(self) -> int:
        return int(self.progress.tasks[0].completed)

    def begin(self, label: str) -> None:
        self.progress.update(self.task, description=label)

    def note(self, line: str) -> None:
        """A line of its own below the last launch's (a refusal: what of the sweep it skips)."""
        self.console.print(f"[yellow]{'':>9}  {escape(line)}[/yellow]", highlight=False, markup=True, soft_wrap=True)

    def done(self, label: str, status: str, line: str, total: int | None = None) -> None:
        """One launch ended; ``total``: the launches the sweep now expects in all (adaptive repeats
        change it as their intervals narrow), so that the ETA counts them."""
        style = _STYLE.get(status, "white")
        self.console.print(f"[{style}]{status:>9}[/{style}]  {escape(label):<58} {escape(line)}", highlight=False,
                           markup=True, soft_wrap=True)
        self.progress.advance(self.task)
        if total is not None:
            self.progress.update(self.task, total=max(total, self.completed))

"""The loss budget's lines, declared once: each line's short name, its words, its summary column and
that column's meaning, its tick and colour in the waterfall, what the report says where it was not
measured, the cause whose fix recovers it, and whether a device per rank removes it or a bigger
cluster keeps it.

Every reader takes the lines from here and names none itself: the summary's budget
(:mod:`ddpbench.analysis.summary.budget`: its columns, ``budget_top``, its notes), the summary's
column declarations (:mod:`ddpbench.analysis.core.columns`), the loss budget in words
(:mod:`ddpbench.analysis.diagnosis.lossbudget`), and through them the budget as shown: the report's
table, waterfall, console line and export (``ddpbench.show.budget``). It sits in ``core`` because the column
declarations, the lowest of its readers, sit there: the summary, the diagnosis and the report all
read ``core``. The independent checker (``ddpbench.audit``) imports nothing of the analysis and keeps
its own list of the names (``ddpbench.audit.budget``); ``tests/unit/audit/test_audit_budget.py``
holds the two equal, and ``tests/integration/project/test_names.py`` holds each name to this one module.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the devices a job runs on, as the summary's ``device`` names them
DEVICES = ("cpu", "cuda")

# each line's short name: the middle of its summary column, the console's word, the export's key
CONTENTION = "contention"
SYNC_COMPUTE = "sync_compute"
COMM = "comm"
DATA = "data"
STRAGGLER = "straggler"
OVERHEAD = "overhead"
RESIDUAL = "residual"


@dataclass(frozen=True)
class BudgetLine:
    """One line of the loss budget.

    ``name`` is its short name; ``label`` its words in sentences, tables and notes; ``tick`` and
    ``colour`` its row label and bar colour in the waterfall; ``meaning`` its summary column's (a
    column of :mod:`ddpbench.analysis.core.columns`); ``not_measured`` the report's reading where it was
    not measured; ``cause`` the cause (``ddpbench.analysis.diagnosis.causes``) whose fix recovers it, ""
    where none names it; ``recoverable``: a cause's fix can recover it (the residual is shown, never
    blamed); ``device_removes`` and ``cluster_keeps``: the devices (:data:`DEVICES`) on which a device
    per rank removes it, on which a bigger cluster of the same devices keeps it."""

    name: str
    label: str
    tick: str
    colour: str
    meaning: str
    not_measured: str = "not measured"
    cause: str = ""
    recoverable: bool = True
    device_removes: tuple[str, ...] = ()
    cluster_keeps: tuple[str, ...] = ()

    @property
    def column(self) -> str:
        """Its summary column (with ``_low`` and ``_high``: its 95 % interval over launches)."""
        return f"loss_{self.name}_ms"


#: the budget's lines, in the order they add up (the residual last)
LOSS_LINES: tuple[BudgetLine, ...] = (
    BudgetLine(CONTENTION, "compute slowed by sharing", "contention", "#dd8452",
               "compute slowed by sharing: the others' forward + backward on reference steps - the baseline's",
               cause="contention", device_removes=DEVICES),
    # on CPU gloo's threads take the ranks' cores, which a device per rank frees; on GPUs the communication
    # kernels still share each device, so a bigger cluster keeps it there
    BudgetLine(SYNC_COMPUTE, "compute slowed by communication beside it", "sync compute", "#937860",
               "compute slowed by communication beside it: mean ready_ms on measured - on no_sync() steps, less the "
               "baseline's (NaN without ready_ms)",
               not_measured="not measured: no gradient-ready times (ready_ms); it stays inside exposed communication",
               cause="communication", device_removes=("cpu",), cluster_keeps=("cuda",)),
    BudgetLine(COMM, "exposed communication", "comm", "#c44e52",
               "exposed communication: step - reference step, less the baseline's, less loss_sync_compute_ms where "
               "measured", cause="communication", cluster_keeps=DEVICES),
    BudgetLine(DATA, "data wait that grew", "data", "#a0a0a0",
               "data wait that grew: the others' data_ms on reference steps - the baseline's", cause="data"),
    BudgetLine(STRAGGLER, "waiting for the slowest rank", "straggler", "#da8bc3",
               "waiting for the slowest rank: its reference step beyond the others' mean", cause="straggler",
               cluster_keeps=DEVICES),
    BudgetLine(OVERHEAD, "optimizer and framework", "overhead", "#8172b2",
               "optimizer and framework: the others' optimizer + comm on reference steps - the baseline's"),
    BudgetLine(RESIDUAL, "residual", "residual", "#cfcfcf",
               "loss_ms - the six lines: what the timed phases do not split, shown, never hidden", recoverable=False),
)
#: each line by its short name
BY_NAME: dict[str, BudgetLine] = {line.name: line for line in LOSS_LINES}
#: the lines a cause's fix can recover, in the budget's order: those budget_top chooses from
RECOVERABLE: tuple[str, ...] = tuple(line.name for line in LOSS_LINES if line.recoverable)


def removed_by_device(device: str) -> tuple[str, ...]:
    """The lines a device per rank removes for a job on ``device`` ("cuda", else CPU), in the budget's order."""
    on = "cuda" if device == "cuda" else "cpu"
    return tuple(line.name for line in LOSS_LINES if on in line.device_removes)


def kept_by_cluster(device: str) -> tuple[str, ...]:
    """The lines a bigger cluster of the same devices keeps for a job on ``device`` ("cuda", else CPU): those
    it keeps on every device first, then those it keeps on this one only, each in the budget's order."""
    on = "cuda" if device == "cuda" else "cpu"
    kept = [line for line in LOSS_LINES if on in line.cluster_keeps]
    return tuple(line.name for line in sorted(kept, key=lambda line: set(line.cluster_keeps) != set(DEVICES)))

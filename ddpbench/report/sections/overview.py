"""The report's opening sections: what was measured where (header), and one row per job (summary)."""

from __future__ import annotations

import json
import math
import shlex

from markupsafe import Markup, escape

from ddpbench.analysis.core import (
    COLUMNS,
    EFFICIENCY,
    EXPOSED_COMM_MS,
    NOISE_THRESHOLD,
    SAMPLES_PER_S,
    SPEEDUP,
    STEP_MS,
    STRAGGLER_THRESHOLD,
    describe,
    line_fields,
    model_name,
    ordered,
    pct,
)
from ddpbench.report.many import job_table
from ddpbench.report.page import (
    DASH,
    ReportContext,
    Section,
    any_interval,
    figure,
    flags_html,
    has_memory,
    html,
    html_cell,
    html_table,
    num,
    throughput_format,
)
from ddpbench.results.schema import STATUSES
from ddpbench.show.budget import exposed_of
from ddpbench.show.tables import Col, build, definitions, shown

ENV_ROWS = (
    ("experiment", "experiment"), ("sweep started (UTC)", "utc"), ("host", "hostname"),
    ("CPU", "cpu_model"), ("cores usable / logical / physical", "cores"), ("memory (GB)", "memory_gb"),
    ("GPUs", "gpus"), ("torch", "torch"), ("python", "python"), ("platform", "platform"),
    ("ddpbench", "ddpbench_version"), ("git commit", "git"), ("sweep id", "sweep_id"),
)


def _env_value(env: dict, name: str) -> Markup:
    if name == "cores":
        return html("{{ values | join(' / ') }}",
                    values=[html("{{ v }}", v=env.get(k)) for k in ("cores_usable", "cores_logical", "cores_physical")])
    if name == "gpus":
        gpus = env.get("gpus")
        return html("{{ v }}", v=", ".join(map(str, gpus)) if isinstance(gpus, list) and gpus else "none")
    if name == "torch":
        extra = [f"{label} {env[key]}" for label, key in (("CUDA", "torch_cuda"), ("NCCL", "nccl_version"))
                 if env.get(key)]
        return html("{{ torch }}{% if extra %} ({{ extra }}){% endif %}", torch=env.get("torch_version"),
                    extra=", ".join(extra))
    if name == "git":
        commit = env.get("git_commit")
        if not commit or (isinstance(commit, float) and math.isnan(commit)):
            return Markup("unknown (not run from a git checkout)")
        dirty = env.get("git_dirty")
        return html("<code>{{ commit }}</code>{% if dirty is true %} <strong>dirty</strong> (uncommitted changes)"
                    "{% elif dirty is false %} clean{% endif %}", commit=commit, dirty=dirty)
    return html("{{ v }}", v=env.get(name))


def _status_counts(by_status) -> Markup:
    """``<n> ok, <n> failed``: each status in its colour, the known ones first."""
    known = [s for s in STATUSES if by_status.get(s, 0)] + [s for s in by_status.index if s not in STATUSES]
    return html('{% for s, n in counts %}{% if not loop.first %}, {% endif %}<span class="status-{{ s }}">{{ n }} '
                "{{ s }}</span>{% endfor %}", counts=[(s, int(by_status[s])) for s in known])


def _collectives_counts(coll) -> Markup:
    """One sentence on the collective micro-benchmarks' launches, or nothing when there are none."""
    if coll is None or coll.empty or "key" not in coll.columns:
        return Markup()
    launches = coll.drop_duplicates("key")
    rows = coll[coll["op"].notna()] if "op" in coll.columns else coll.iloc[0:0]
    return html('<p class="what">Collective micro-benchmarks: {{ launches }} launch(es) ({{ listed }})'
                "{% if rows %}: {{ rows }} measurements of {{ ops }} op(s) at world size(s) {{ sizes }}{% endif %}."
                "</p>", launches=len(launches), listed=_status_counts(launches["status"].value_counts()),
                rows=len(rows), ops=rows["op"].nunique() if len(rows) else 0,
                sizes=", ".join(str(w) for w in sorted(set(int(w) for w in rows["world_size"])))) + reused_note(coll)


def reused_note(coll) -> Markup:
    """Which collectives launches were not run by this folder's sweeps but reused (a curve measured once
    per machine, :mod:`ddpbench.sweep.measured_once`), with when they were measured; nothing when none was."""
    if coll is None or coll.empty or "reused" not in coll.columns:
        return Markup()
    reused = coll[coll["reused"].notna()].drop_duplicates("key")
    if reused.empty:
        return Markup()
    return html('<p class="note">Not measured by this sweep: {% for r in rows %}{% if not loop.first %}; '
                "{% endif %}the launch at world size {{ r.world_size }} ({{ r.backend }}/{{ r.device }}) was "
                "{{ r.reused }}{% endfor %}. Its curve is the same machine&rsquo;s under the same conditions (host, "
                "CPU, GPUs, torch and ddpbench versions, and the launch&rsquo;s own settings); "
                "<code>DDPBENCH_CACHE_DIR=off</code> measures it again.</p>",
                rows=[r.to_dict() for _, r in reused.iterrows()])


def _wrong_measurements(coll) -> int:
    if coll is None or coll.empty or "wrong" not in coll.columns:
        return 0
    return int((coll["wrong"].fillna(0).astype(float) > 0).sum())


def _environment(sweeps: list[dict]):
    """One table of the environment: a row once where every sweep agrees, a column per sweep only
    for the rows where they differ (the sweep id and start time always do)."""
    rows = [(label, [_env_value(env, name) for env in sweeps]) for label, name in ENV_ROWS]
    same = [[label, values[0]] for label, values in rows if len(set(map(str, values))) == 1]
    differ = [[label, *values] for label, values in rows if len(set(map(str, values))) > 1]
    if len(sweeps) == 1:
        return Markup("<h3>Environment</h3>\n") + html_table(["", "value"], same)
    html = Markup("<h3>Environment</h3>\n") + html_table(["", f"all {len(sweeps)} sweeps"], same)
    if differ:
        html += (Markup(f'<p class="note">What differs between the {len(sweeps)} sweeps that wrote this folder:</p>\n')
                 + html_table(["", *(f"sweep {i}" for i in range(1, len(sweeps) + 1))], differ))
    return html


def _commands(summary) -> Markup:
    """A script job's whole command line beside the name the report gives it (its script and the arguments
    that differ between the jobs running it: :func:`ddpbench.analysis.core.model_name`)."""
    if summary.empty or "script" not in summary or not summary["script"].fillna("").astype(bool).any():
        return Markup()
    rows = {}
    for _, r in summary[summary["script"].fillna("").astype(bool)].iterrows():
        args = json.loads(r["script_args"]) if r.get("script_args") else []
        rows[model_name(r, summary)] = shlex.join([str(r["script"]), *args])
    cells = [[name, Markup("<code>") + escape(command) + Markup("</code>")] for name, command in rows.items()]
    return (Markup('<p class="note">Script jobs, by the names this report gives them, and their whole command '
                   "lines:</p>") + html_table(["named", "command line"], cells))


def header_section(ctx: ReportContext) -> Section:
    summary = ctx.summary
    sweeps = ctx.sweeps.to_dict("records") if ctx.sweeps is not None and len(ctx.sweeps) else []
    collectives = _collectives_counts(ctx.collectives)
    if summary.empty:
        counts = collectives or Markup('<p class="what">No jobs are recorded in these results yet.</p>')
    else:
        wall = float(ctx.runs["wall_s"].fillna(0).sum()) if "wall_s" in ctx.runs.columns else math.nan
        # a skipped launch never ran (the machine lacks what it needs, or a refusal of its script stands for it)
        skipped = int((ctx.runs["status"] == "skipped").sum()) if "status" in ctx.runs.columns else 0
        counts = html('<p class="what">{{ jobs }} jobs ({{ launches }} launches{{ unrun }}, {{ wall }} s of launch '
                      "wall time): {{ listed }}.</p>", jobs=len(summary), launches=len(ctx.runs) - skipped,
                      unrun=f" run, {skipped} skipped without running" if skipped else "", wall=num(wall, ".0f"),
                      listed=_status_counts(summary["status"].value_counts())) + collectives
    notes = []
    if ctx.damaged:
        # each line counts its own records (a damaged file's lines are one line): no total here to contradict them
        notes.append(html('<strong class="status-failed">Damaged records</strong> '
                          "(a write cut short, e.g. by a crash; `--resume` measures what they held again): "
                          "{{ lines | join('; ') }}", lines=ctx.damaged))
    if not summary.empty and summary["oversubscribed"].astype(bool).any():
        notes.append(Markup("Some jobs were <strong>oversubscribed</strong> (more busy threads than cores): their "
                            "times measure contention for cores, not scaling. They are marked in the table and drawn "
                            "with hollow markers."))
    if not summary.empty and summary["noisy"].astype(bool).any():
        notes.append(html("Some jobs are <strong>noisy</strong> (step time IQR above {{ bar }} of the median): "
                          "compare them with care. They carry a grey halo in the plots.", bar=pct(NOISE_THRESHOLD)))
    wrong = _wrong_measurements(ctx.collectives)
    if wrong:
        notes.append(html('<strong class="status-failed">{{ wrong }} collective measurement(s) returned wrong '
                          "elements</strong> (the check after the timed iterations): see the red cells of the "
                          "nccl-tests table.", wrong=wrong))
    if sweeps:
        env_html = _commands(summary) + _environment(sweeps)
    else:
        env_html = Markup('<p class="note">No environment block is stored with these results.</p>')
    return Section("Experiment", html('{{ counts }}{% for n in notes %}<p class="note">{{ n }}</p>{% endfor %}'
                                      '<p class="note">Results folder: <code>{{ where }}</code></p>{{ env }}',
                                      counts=counts, notes=notes, where=str(ctx.results_dir), env=env_html))


class _Jobs:
    """What the summary table's columns read besides a row: the table, the fields that tell its jobs
    apart, whether some job has an interval, whether some job did not finish."""

    def __init__(self, table):
        self.table = table
        self.extra = line_fields(table, but=("bucket_cap_mb",))
        self.intervals = any_interval(table)
        self.errors = bool((table["status"] != "ok").any())  # no error column when every job finished

    def mark_missing(self, row) -> bool:
        """Whether a figure without an interval shows ``[–]``: some job has one, and this one finished."""
        return self.intervals and row["status"] == "ok"


def _ci(label: str):
    """A heading that says the cells hold 95 % intervals where some job has one."""
    return lambda jobs: Markup(label + (' <span class="ci">[95 % CI]</span>' if jobs.intervals else ""))


def _ok(cell):
    """A cell of a finished job; a dash for one that did not finish."""
    return lambda r, jobs: cell(r, jobs) if r["status"] == "ok" else DASH


def _exposed(r, jobs) -> Markup:
    """The time where it may be quoted (:func:`~ddpbench.show.budget.exposed_of`), with its share of the step;
    else what stands in its place: none at world size 1, not measurable (never a negative time)."""
    share, shown = r.get("exposed_comm_share"), exposed_of(r)
    if r["status"] == "ok" and shown.words:
        return html('<span class="ci">{{ words }}</span>', words=shown.words)
    exposed = num(r[EXPOSED_COMM_MS], ".2f")
    if isinstance(share, (int, float)) and math.isfinite(share):
        exposed += html(' <span class="ci">({{ pct }} %)</span>', pct=num(100 * share, ".0f"))
    withheld = r.get("exposed_reason")
    if r["status"] == "ok" and isinstance(withheld, str) and withheld.startswith("withheld"):
        exposed = html('<span class="ci">{{ why }}</span>', why=withheld)  # a script's no-sync steps synced
    return exposed


def _flags(jobs) -> Markup:
    """The flags' definition, with the thresholds they are judged by as the table is made."""
    return Markup("<em>oversubscribed</em>: more busy threads than cores; <em>noisy</em>: step time IQR above "
                  f"{pct(NOISE_THRESHOLD)} of the median; <em>straggler</em>: a rank whose own compute time "
                  f"(without waiting) was more than {pct(STRAGGLER_THRESHOLD)} above the other ranks&rsquo; "
                  "median in most steps, with that excess")


def _defs(*pairs: tuple[str, str]) -> tuple[tuple[str, Markup], ...]:
    """A column's definitions under the table, in this module's own markup."""
    return tuple((term, Markup(text)) for term, text in pairs)


def _unit(column: str) -> str:
    return COLUMNS[column].unit


#: the report's summary table, one declaration a column (:mod:`ddpbench.show.tables`), each with the
#: definitions it gives under the table; the figures SHOWN declares for the summary come before the flags
SUMMARY = (
    Col("job", lambda r, jobs: describe(r, jobs.extra, jobs.table), numeric=False),
    Col("world size", lambda r, jobs: r["world_size"]),
    Col(f"bucket ({_unit('bucket_cap_mb')})", lambda r, jobs: num(r["bucket_cap_mb"], "g")),
    Col("status", lambda r, jobs: html('<span class="status-{{ s }}">{{ s }}</span>', s=r["status"]), numeric=False),
    Col(_ci(f"step ({_unit(STEP_MS)}), mean"), _ok(figure(STEP_MS, ".2f")), defs=_defs(
        ("step", "wall time of one training step on the slowest rank, the mean over measured steps (warmup "
                 "excluded): the step time every part of this report quotes, and what throughput divides by"),)),
    Col(f"IQR ({_unit('step_ms_iqr')})", _ok(lambda r, jobs: num(r["step_ms_iqr"], ".2f")), defs=_defs(
        ("IQR", "inter-quartile range of the measured steps: how much they scatter (the noise flag), not a "
                "step time"),)),
    Col(_ci(_unit(SAMPLES_PER_S)), figure(SAMPLES_PER_S, throughput_format), defs=_defs(
        ("samples/s", "global throughput: samples of all ranks per second, the global batch over the mean "
                      "step time (total samples over total time, so costs paid every few steps count)"),
        ("[low, high]", "95 % confidence interval: Student&rsquo;s t over launches (each launch&rsquo;s "
                        "mean step is one sample; steps within a launch are not independent). "
                        "[&ndash;] means the job, or its world-size-1 baseline, ran in one launch: set "
                        "<code>repeats</code> &ge; 3 in the experiment for intervals"))),
    Col(Markup("speedup (&times;)"), figure(SPEEDUP, ".2f"), defs=_defs(
        ("speedup", "throughput relative to the world-size-1 job with the same model and batch settings"),)),
    Col("efficiency (%)", figure(EFFICIENCY, ".0f", 100.0), defs=_defs(
        ("efficiency", "speedup &divide; world size; 100 % is linear scaling"),)),
    Col("serial fraction e", figure("serial_fraction", ".2f"), defs=_defs(
        ("serial fraction e", "Karp&ndash;Flatt&rsquo;s experimentally determined serial fraction "
                              "e = (1/S &minus; 1/p) / (1 &minus; 1/p) for speedup S on p ranks: 0 is perfect "
                              "scaling, 1 no speedup at all, above 1 slower than one rank; undefined at world "
                              "size 1. Constant across world sizes: work that does not parallelise; rising: "
                              "overhead that grows with the ranks (communication, waiting)"),)),
    Col("exposed comm (ms, % of step)", _exposed, defs=_defs(
        ("exposed comm", "mean step time with gradient sync minus mean step time under DDP's no_sync(): the "
                         "communication the backward pass did not hide, in brackets its share of the mean step; "
                         "<em>not measurable here</em> where its 95 % interval over launches reaches 0 or lies "
                         "below it (the launches did not resolve it from noise: no time is quoted, never a "
                         "negative one), <em>none (one rank)</em> at world size 1, where nothing is "
                         "communicated"),)),
    *shown("summary", html_cell),
    Col("flags", lambda r, jobs: flags_html(r), numeric=False, defs=(("flags", _flags),)),
    Col("error", lambda r, jobs: html('<code class="err">{{ e }}</code>', e=r["error"]) if r["status"] != "ok"
        else "", numeric=False, when=lambda jobs: jobs.errors),
)


def summary_section(ctx: ReportContext) -> Section | None:
    table = ctx.summary
    if table.empty:
        return None
    jobs = _Jobs(table)
    rows = [r for _, r in ordered(table).iterrows()]
    header, cells, numeric = build(SUMMARY, rows, jobs)
    classes = ["" if r["status"] == "ok" else "bad" for r in rows]
    dl = html("{% for k, v in defs %}<dt>{{ k }}</dt><dd>{{ v }}</dd>{% endfor %}",
              defs=definitions(SUMMARY, jobs))
    memory = " Peak memory per job is in the Memory section." if has_memory(table) else ""
    note = Markup()
    if not jobs.intervals and (table["status"] == "ok").any():
        note = Markup('<p class="note">Every job ran in one launch, so no figure has a confidence interval: set '
                      "<code>repeats</code> &ge; 3 in the experiment to get 95 % t intervals over "
                      "launches.</p>\n")
    return Section("Summary", html('<p class="what">One row per job: how fast each step ran and how well it '
                                   "scaled; jobs that did not finish show their error.{{ memory }}</p>\n{{ note }}"
                                   '<div class="jobs">{{ table }}</div>\n<dl class="defs">{{ dl }}</dl>',
                                   memory=memory, note=note,
                                   table=job_table(ctx, "summary", header, cells, [r[STEP_MS] for r in rows],
                                                   classes, numeric),
                                   dl=dl))

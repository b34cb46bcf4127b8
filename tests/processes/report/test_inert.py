"""A results folder from someone else: every reader gives an inert report or one line.

One real sweep (two traced jobs of the TINY workload) is made once per session; each case below
copies it and mutates it -- payloads (``<script>``, ``<img onerror>``, ``javascript:`` links, ``$``
pairs, terminal escapes, spreadsheet formulas) in every string field, damaged values of every kind
in the records and the side files, JSON nested 200,000 deep, plot names and side files as links
to a file outside the folder -- chosen by a seeded mutator, so a failure names a case that can be
rerun. Every reader (``report``, ``compare A B``, ``export-benchmark``, ``whatif --from``) runs on
each, in-process: it must exit 0 with an inert page (no script, no event handler, links only to
files inside the folder), or 2 with one line; never a traceback or a hang, and it must leave the
canary file outside the folder as it was. One case runs through the command line as well.
(The page opened in Chromium with a check that no script ran: tests/processes/report/test_browser.py.)
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import random
import shutil
from pathlib import Path

import pytest

from ddpbench.results.schema import RESULTS_FILE, SEARCH_FILE
from ddpbench.testing import TINY_DEFAULTS, run_cli, run_main, write_experiment
from ddpbench.testing.pages import assert_inert_page, assert_one_line_or_ok, run_reader

BASE = """
    name = "tiny"
    timeout_s = 120
""" + TINY_DEFAULTS + """
    bucket_cap_mb = 0.25
    check_steps = 0
    trace_steps = 2
    [grid]
    world_size = [1, 2]
"""

#: what each string field is set to, in turn: markup, a link's scheme and a formula must lead the string
PAYLOADS = (
    "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">\"'><svg onload=alert(1)>",
    "javascript:document.title='pwned'",
    "costs $5{ or $6, $\\frac{1}{0}$ and $x^$ \x1b]0;pwned\x07\x1b[31mred\x1b[0m",
    "=HYPERLINK(\"http://example.invalid\",\"x\")",
)
#: what a figure of a step is set to, in turn
BAD_NUMBERS = (math.nan, 0, math.inf, "fast", None, -5, True, {})
#: the figures whose names a reader writes into the folder
PLOTS = ("throughput.png", "efficiency.png", "serial_fraction.png", "breakdown.png", "budget.png", "memory.png",
         "flops.png", "projection.png", "index.html", "bench.json", "compare")
DEEP = "[" * 200_000 + "]" * 200_000



# ---------------------------------------------------------------------------------------------
# the folder
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def base(tmp_path_factory) -> Path:
    """A real sweep's folder (read-only for the cases), with a tune race beside it."""
    root = tmp_path_factory.mktemp("inert-base")
    exp = write_experiment(root / "tiny.toml", BASE)
    out = root / "base"
    proc = run_main("sweep", exp, "--out", out, "--no-report")
    assert proc.returncode == 0, proc.stderr
    records = read_records(out)
    runs = [r for r in records if r["kind"] == "run"]
    assert len(runs) == 2 and all(r.get("traces") for r in runs)
    labels = [f"bucket_cap_mb={r['spec']['bucket_cap_mb']} ws={r['spec']['world_size']}" for r in runs]
    race = {"winner": labels[0], "winner_samples_per_s": 400.0, "winner_interval": [390.0, 410.0],
            "tied": [{"setting": labels[1], "step_ratio_interval": [0.9, 1.1]}], "launches": 4, "grid_launches": 8,
            "budget": 8, "rounds": [],
            "candidates": [{"setting": label, "key": r["key"], "launches": 2, "samples_per_s": 400.0 - i,
                            "out_in_round": None, "why_out": ""} for i, (label, r) in enumerate(zip(labels, runs))],
            "same_buckets": [{"setting": "bucket_cap_mb=0.5", "as": labels[0]}]}
    (out / SEARCH_FILE).write_text(json.dumps(race))
    return out


def read_records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / RESULTS_FILE).read_text().splitlines() if line.strip()]


def write_records(folder: Path, records: list) -> None:
    lines = [r if isinstance(r, str) else json.dumps(r, allow_nan=True) for r in records]
    (folder / RESULTS_FILE).write_text("\n".join(lines) + "\n")


def runs_of(records):
    return [r for r in records if isinstance(r, dict) and r.get("kind") == "run"]


def sweeps_of(records):
    return [r for r in records if isinstance(r, dict) and r.get("kind") == "sweep"]


# ---------------------------------------------------------------------------------------------
# mutations: each (folder, records, rng) -> records, changing the folder as it likes
# ---------------------------------------------------------------------------------------------

def strings_everywhere(payload):
    """Every free-text string of the records and of search.json set to ``payload``."""
    def mutate(folder, records, rng):
        for s in sweeps_of(records):
            s["env"] = {k: (payload if isinstance(v, str) else v) for k, v in s["env"].items()}
            s["env"]["gpus"] = [payload]
            s["experiment"]["name"] = payload
            s["experiment"]["links"] = [{"name": payload, "latency_us": 5.0, "gbit_per_s": 10.0}]
        for r in runs_of(records):
            r["spec"]["model_args"] = f"{{ note = {json.dumps(payload)} }}"
            result = r["result"]
            result["compute"]["workload"] = payload
            result["compute"]["peak_method"] = payload
            for rank in result["ranks"]:
                rank["traffic_source"] = f"computed: {payload}"
                rank["framework_version"] = payload
                rank["trace_error"] = payload
            for row in result["trace"]:
                row[2] = payload  # lane
                row[4] = payload  # name
            for f in r["traces"]:
                f["path"] = payload
        failed = copy.deepcopy(runs_of(records)[-1])  # another job, which failed with the payload as its error
        failed.update(status="failed", error=payload, result=None, key="f" * 12)
        failed["spec"]["batch_size"] = 16
        records.append(failed)
        race = json.loads((folder / SEARCH_FILE).read_text())
        race["winner"] = payload
        for c in race["candidates"]:
            c["setting"], c["why_out"], c["out_in_round"] = payload, payload, 1
        race["launches"] = race["grid_launches"] = race["budget"] = payload
        (folder / SEARCH_FILE).write_text(json.dumps(race))
        return records
    return mutate


def step_figure(value):
    """One figure of some step rows (a random column, a random share of the rows) set to ``value``."""
    def mutate(folder, records, rng):
        for r in runs_of(records):
            columns = r["result"]["step_columns"]
            at = columns.index(rng.choice(["step_ms", "data_ms", "forward_ms", "backward_ms", "comm_ms", "rank",
                                           "step", "phase"]))
            rows = r["result"]["steps"]
            for row in rng.sample(rows, max(1, len(rows) // rng.choice([1, 2, 4]))):
                row[at] = value
        return records
    return mutate


def set_path(path: tuple, value, kinds=("run",)):
    """``record[path...] = value`` in every record of ``kinds``."""
    def mutate(folder, records, rng):
        for r in records:
            if isinstance(r, dict) and r.get("kind") in kinds:
                target = r
                for key in path[:-1]:
                    target = target[key]
                target[path[-1]] = value
        return records
    return mutate


def every_rank(field, value):
    def mutate(folder, records, rng):
        for r in runs_of(records):
            for rank in r["result"]["ranks"]:
                rank[field] = value
        return records
    return mutate


def trace_rows(value):
    def mutate(folder, records, rng):
        for r in runs_of(records):
            rows = r["result"]["trace"]
            for row in rng.sample(rows, max(1, len(rows) // 3)):
                row[rng.randrange(len(row))] = value
        return records
    return mutate


def search_file(text):
    def mutate(folder, records, rng):
        (folder / SEARCH_FILE).write_text(text)
        return records
    return mutate


def search_field(name, value):
    def mutate(folder, records, rng):
        race = json.loads((folder / SEARCH_FILE).read_text())
        race[name] = value
        (folder / SEARCH_FILE).write_text(json.dumps(race))
        return records
    return mutate


def deep_line(folder, records, rng):
    return records + [DEEP]


def deep_in_record(folder, records, rng):
    line = json.dumps(runs_of(records)[0])
    return records + [line[:-1] + ', "deep": ' + DEEP + "}"]


def plots_as_links(folder, records, rng):
    """Every file a reader writes, a link to the canary outside the folder."""
    canary = folder.parent / "canary.txt"
    for name in PLOTS:
        (folder / name).symlink_to(canary)
    for r in runs_of(records):
        (folder / f"timeline_{r['key']}.png").symlink_to(canary)
    (folder / "index.html.tmp").symlink_to(canary)
    return records


def compare_out_as_links(folder, records, rng):
    canary = folder.parent / "canary.txt"
    (folder / "compare").mkdir()
    for name in ("index.html", "compare.csv", "ratios.png", "index.html.tmp"):
        (folder / "compare" / name).symlink_to(canary)
    return records


def search_as_link(folder, records, rng):
    (folder / SEARCH_FILE).unlink()
    (folder / SEARCH_FILE).symlink_to(folder.parent / "canary.txt")
    return records


def search_as_fifo(folder, records, rng):
    (folder / SEARCH_FILE).unlink()
    os.mkfifo(folder / SEARCH_FILE)
    return records


def search_as_dev_zero(folder, records, rng):
    (folder / SEARCH_FILE).unlink()
    (folder / SEARCH_FILE).symlink_to("/dev/zero")
    return records


def traces_out_of_the_folder(folder, records, rng):
    for r in runs_of(records):
        for f, path in zip(r["traces"], ("../canary.txt", str(folder.parent / "canary.txt"), "/etc/passwd",
                                         "traces/../../canary.txt", "data:text/html,<script>x</script>")):
            f["path"] = path
    os.symlink(folder.parent / "canary.txt", folder / "traces" / "outside.json.gz")
    r = runs_of(records)[0]
    r["traces"][0]["path"] = "traces/outside.json.gz"  # a link in the folder to a file outside it
    return records


def results_loop(folder, records, rng):
    (folder / RESULTS_FILE).unlink()
    (folder / RESULTS_FILE).symlink_to(folder / RESULTS_FILE)
    return None


def folder_loop(folder, records, rng):
    (folder / "loop").symlink_to(folder / "loop")
    return records


def random_damage(seed):
    """A few values anywhere in the run records replaced by bad ones: the mutator's free hand."""
    def mutate(folder, records, rng):
        rng = random.Random(seed)
        runs = runs_of(records)  # chosen once: a damaged ``kind`` makes a run no run
        for _ in range(6):
            r = rng.choice(runs)
            target, key = r, None
            for _ in range(rng.randint(1, 4)):
                if isinstance(target, dict) and target:
                    key = rng.choice(sorted(target))
                elif isinstance(target, list) and target:
                    key = rng.randrange(len(target))
                else:
                    break
                parent, target = target, target[key]
            if key is not None:
                parent[key] = rng.choice(BAD_NUMBERS + PAYLOADS)
        return records
    return mutate


MUTATIONS = {
    **{f"strings-{i}": strings_everywhere(p) for i, p in enumerate(PAYLOADS)},
    **{f"step-{i}": step_figure(v) for i, v in enumerate(BAD_NUMBERS)},
    "unknown-phase": step_figure("bogus"),
    "empty-steps": set_path(("result", "steps"), []),
    "steps-not-a-list": set_path(("result", "steps"), "x"),
    "step-rows-short": set_path(("result", "steps"), [[0, "measure"]]),
    "step-columns-bad": set_path(("result", "step_columns"), ["rank"]),
    "ranks-empty": set_path(("result", "ranks"), []),
    "ranks-not-objects": set_path(("result", "ranks"), [5, "x"]),
    "rank-figures-strings": every_rank("peak_rss_mb", "lots"),
    "bucket-bytes-bad": every_rank("bucket_bytes", ["x", -1]),
    "gemm-peak-nan": every_rank("gemm_peak_flops", math.nan),
    "env-a-list": set_path(("env",), [1, 2], kinds=("sweep",)),
    "env-a-string": set_path(("env",), "x", kinds=("sweep",)),
    "experiment-a-list": set_path(("experiment",), [], kinds=("sweep",)),
    "links-a-string": set_path(("experiment", "links"), "x", kinds=("sweep",)),
    "links-not-objects": set_path(("experiment", "links"), [5], kinds=("sweep",)),
    "links-missing-rate": set_path(("experiment", "links"), [{"name": "a"}], kinds=("sweep",)),
    "links-zero-rate": set_path(("experiment", "links"), [{"name": "a", "latency_us": "x", "gbit_per_s": 0}],
                                kinds=("sweep",)),
    "traces-a-string": set_path(("traces",), "x"),
    "traces-not-objects": set_path(("traces",), [5, None]),
    "traces-without-path": set_path(("traces",), [{"rank": "a"}]),
    "trace-rows-damaged": trace_rows("x"),
    "trace-rows-nan": trace_rows(math.nan),
    "trace-not-a-list": set_path(("result", "trace"), "x"),
    "compute-a-string": set_path(("result", "compute"), "x"),
    "compute-flops-string": set_path(("result", "compute", "flops_per_step"), "many"),
    "check-a-list": set_path(("result", "check"), []),
    "params-string": set_path(("result", "params"), "x"),
    "wall-string": set_path(("wall_s",), "x"),
    "world-size-string": set_path(("spec", "world_size"), "x"),
    "schema-version-huge": set_path(("schema_version",), 10**30),
    "deep-line": deep_line,
    "deep-in-record": deep_in_record,
    "search-tied-5": search_field("tied", 5),
    "search-a-list": search_file("[]"),
    "search-deep": search_file(DEEP),
    "search-truncated": search_file('{"winner": "a", "tied": ['),
    "search-candidates-bad": search_field("candidates", [{"setting": 5}, "x"]),
    "search-interval-bad": search_field("winner_interval", ["<b>", None, 3]),
    "search-as-link-outside": search_as_link,
    "search-as-fifo": search_as_fifo,
    "search-as-dev-zero": search_as_dev_zero,
    "plots-as-links": plots_as_links,
    "compare-out-as-links": compare_out_as_links,
    "traces-out-of-the-folder": traces_out_of_the_folder,
    "results-link-loop": results_loop,
    "a-link-loop-in-the-folder": folder_loop,
    **{f"random-{seed}": random_damage(seed) for seed in range(3)},
}


# ---------------------------------------------------------------------------------------------
# what every reader must do
# ---------------------------------------------------------------------------------------------

def assert_plain_csv(path: Path) -> None:
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.reader(fh):
            for cell in row:
                if cell.startswith(("=", "+", "-", "@", "\t", "\r")):
                    float(cell)  # only a number may start so


class Canary:
    """A file outside the folder that a link in it points at: it must keep its content and mtime,
    and nothing may appear beside it."""

    def __init__(self, where: Path):
        self.path = where / "canary.txt"
        self.path.write_text("canary\n")
        self.stat = self.path.stat()
        self.around = sorted(p.name for p in where.iterdir())

    def check(self) -> None:
        assert self.path.read_text() == "canary\n"
        assert self.path.stat().st_mtime_ns == self.stat.st_mtime_ns
        assert sorted(p.name for p in self.path.parent.iterdir()) == self.around


def mutate(base: Path, tmp_path: Path, name: str) -> tuple[Path, Canary]:
    canary = Canary(tmp_path)
    folder = tmp_path / "folder"
    shutil.copytree(base, folder, symlinks=True)
    records = MUTATIONS[name](folder, read_records(folder), random.Random(name))
    if records is not None:
        write_records(folder, records)
    canary.around = sorted(p.name for p in tmp_path.iterdir())
    return folder, canary


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_every_reader_gives_an_inert_report_or_one_line(base, tmp_path, capsys, name):
    folder, canary = mutate(base, tmp_path, name)
    base_files = {p.name: p.stat().st_mtime_ns for p in base.iterdir()}
    for argv in (["report", str(folder)], ["compare", str(base), str(folder)],
                 ["export-benchmark", str(folder), "--out", str(folder / "bench.json"), "--force"],
                 ["whatif", "--from", str(folder)]):
        code, out, err = run_reader(capsys, argv)
        assert_one_line_or_ok(code, out, err, argv)
        canary.check()
        if code == 0 and argv[0] == "report":
            assert_inert_page(folder / "index.html", folder)
            assert not (folder / "index.html").is_symlink()
        if code == 0 and argv[0] == "compare":
            assert_inert_page(folder / "compare" / "index.html", folder)
            assert_plain_csv(folder / "compare" / "compare.csv")
        if code == 0 and argv[0] == "export-benchmark":
            assert json.loads((folder / "bench.json").read_text())["benchmarks"] is not None
    assert {p.name: p.stat().st_mtime_ns for p in base.iterdir()} == base_files, "the baseline folder was changed"


#: inert, not dropped: what the page of a case shows of the stored strings, as they are
ON_THE_PAGE = {
    "strings-2": ["costs $5{ or $6, $\\frac{1}{0}$ and $x^$"],
    "strings-0": ["&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;",
                  "not linked: outside the results folder"],  # the trace paths, now payloads
}


@pytest.mark.parametrize("name, run", [("strings-2", run_cli), ("strings-0", run_main), ("plots-as-links", run_main)],
                         ids=["strings-2-new-process", "strings-0", "plots-as-links"])
def test_the_command_line_says_one_line_or_writes_an_inert_report(base, tmp_path, name, run):
    """The terminal escapes through ``python -m ddpbench`` as a user runs it (a new process, 20 s a
    case on a loaded machine); the other cases through its ``main()`` in this process, output captured.
    The payloads are on the page as text, and the figures drew them."""
    folder, canary = mutate(base, tmp_path, name)
    for args in (["report", folder], ["compare", base, folder], ["whatif", "--from", folder]):
        proc = run(*args)
        assert_one_line_or_ok(proc.returncode, proc.stdout, proc.stderr, args)
        assert proc.returncode == 0 or args[0] != "report", proc.stderr
        canary.check()
    assert_inert_page(folder / "index.html", folder)
    page = (folder / "index.html").read_text()
    assert all(text in page for text in ON_THE_PAGE.get(name, [])), name
    if name == "strings-2":
        assert (folder / "throughput.png").stat().st_size > 1000

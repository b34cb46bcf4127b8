"""README.md and docs/ render as they read, their links resolve, and their commands run as written.

Parsed with markdown-it-py in CommonMark mode, as GitHub renders them:

* a fence that never closes, or a line inside a code block that was meant as a heading or as a
  closing fence (README once had "``` Everything is gathered to", which is not a closing fence,
  so 150 lines with two headings became one code block), fails;
* a relative link or image to a file that does not exist, or an anchor with no heading of that
  slug (GitHub's rule) in the page it points to, fails;
* every ``python -m ddpbench ...`` line of a ``sh`` block parses with ddpbench's own parser, and
  what it names exists and loads: the experiment file of ``sweep``/``tune``/``collectives``, the
  job of ``run``, a committed results folder, a script under benchmarks/ or scripts/.

The checker is tested on small broken pages too, so a check that cannot fail is caught.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import unicodedata
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from ddpbench.testing import ROOT

#: the pages checked: the front door, docs/ and the examples' index that docs link into
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "reports" / "examples" / "README.md"]
#: fence languages in which a line starting with "# " is a comment, not a heading
HASH_COMMENTS = {"sh", "bash", "shell", "console", "toml", "python", "py", "yaml", "ini"}
SHELL = {"sh", "bash", "shell", "console"}


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


# ---------------------------------------------------------------------------------------------
# the checks, on one page's text
# ---------------------------------------------------------------------------------------------

def slug(text: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation dropped but '-' and '_', spaces to '-'."""
    kept = "".join(c for c in text.lower()
                   if c in " -_" or unicodedata.category(c)[0] in "LMN")
    return kept.replace(" ", "-")


def _inline_text(token) -> str:
    return "".join(child.content for child in token.children or [] if child.type in ("text", "code_inline"))


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, with GitHub's -1, -2 suffixes for repeats."""
    tokens = _parser().parse(text)
    found: dict[str, int] = {}
    out = set()
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            base = slug(_inline_text(tokens[index + 1]))
            count = found.get(base, 0)
            found[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
    return out


def block_problems(text: str) -> list[str]:
    """Code blocks that swallowed what was meant as a heading or a closing fence, and unclosed fences."""
    lines = text.splitlines()
    problems = []
    for token in _parser().parse(text):
        if token.type not in ("fence", "code_block"):
            continue
        start, end = token.map
        where = f"line {start + 1}"
        info = token.info.strip().split()[0].lower() if token.info.strip() else ""
        if token.type == "fence":
            if not info:
                problems.append(f"{where}: a fence without a language (say ```text for plain text)")
            closing = lines[end - 1].strip() if end - 1 > start else ""
            if not (closing.startswith(token.markup) and set(closing) == {token.markup[0]}):
                problems.append(f"{where}: a fence that never closes (it runs to line {end})")
        for offset, line in enumerate(token.content.splitlines()):
            at = f"line {start + 1 + offset + (1 if token.type == 'fence' else 0)}"
            if re.match(r"#{2,6} ", line) or (re.match(r"# ", line) and info not in HASH_COMMENTS):
                problems.append(f"{at}: a heading inside a code block: {line!r}")
            if token.type == "fence" and line.lstrip().startswith(token.markup):
                problems.append(f"{at}: a line that looks like a closing fence but is not one: {line!r}")
    return problems


def links(text: str) -> list[str]:
    """Every link and image target of a page."""
    out = []
    for token in _parser().parse(text):
        for child in token.children or []:
            if child.type == "link_open":
                out.append(child.attrs.get("href", ""))
            elif child.type == "image":
                out.append(child.attrs.get("src", ""))
    return out


def link_problems(page: Path, text: str) -> list[str]:
    """Relative links to files that do not exist, and anchors with no heading of that slug."""
    problems = []
    for target in links(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
            continue
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve()
        if path_part and not path.exists():
            problems.append(f"{target}: no such file {path}")
            continue
        if anchor and (not path_part or path.suffix == ".md"):
            known = anchors(path.read_text(encoding="utf-8") if path_part else text)
            if anchor not in known:
                problems.append(f"{target}: no heading with the anchor #{anchor} in {path_part or page.name}")
    return problems


# ---------------------------------------------------------------------------------------------
# the pages
# ---------------------------------------------------------------------------------------------

def test_the_pages_are_there_and_the_front_door_fits_a_screen_or_two():
    names = {p.name for p in PAGES}
    for page in ("reading-the-report.md", "own-workload.md", "experiments.md", "strategies.md", "collectives.md",
                 "traces.md", "gpus.md", "multi-node.md", "whatif.md", "comparing.md", "reliability.md",
                 "development.md", "results.md", "diagnosis.md"):
        assert page in names, page
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    # every page of docs/ is reachable from the front door
    linked = {Path(t.partition("#")[0]).name for t in links(readme) if t.startswith("docs/")}
    assert {p.name for p in PAGES if p.parent.name == "docs"} <= linked


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_code_block_swallows_a_heading_and_every_fence_closes(page):
    assert block_problems(page.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_internal_link_resolves(page):
    assert link_problems(page, page.read_text(encoding="utf-8")) == []


# -- the checker on pages that are broken on purpose ------------------------------------------

BROKEN_FENCE = """# Page

```text
warning: something
``` Everything is gathered to
rank 0.

## Seeing a step

Text.
"""


def test_the_checker_finds_a_fence_that_does_not_close_where_it_seems_to():
    problems = block_problems(BROKEN_FENCE)
    assert any("heading inside a code block" in p and "## Seeing a step" in p for p in problems), problems
    assert any("looks like a closing fence" in p for p in problems), problems
    assert any("never closes" in p for p in problems), problems
    assert "seeing-a-step" not in anchors(BROKEN_FENCE)  # the heading is gone, and links to it are dead
    assert block_problems(BROKEN_FENCE.replace("``` Everything", "```\n\nEverything")) == []


def test_the_checker_tells_comments_from_headings_and_wants_a_language():
    assert block_problems("```sh\n# a comment\npython -m ddpbench sweep\n```\n") == []
    assert block_problems("```python\n# a comment\n```\n") == []
    assert block_problems("```text\n# Not a comment\n```\n") != []
    assert block_problems("```\nplain\n```\n") != []
    assert block_problems("    ## indented\n") != []


def test_the_checker_finds_dead_links_and_anchors(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## Sweeps in pytest-benchmark's format\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    good = ("[a](other.md) [b](other.md#sweeps-in-pytest-benchmarks-format) [c](#here) [d](other.md#twice-1) "
            "[e](https://example.com/x#y) ![f](other.md)\n\n## Here\n")
    assert link_problems(page, good) == []
    bad = "[a](missing.md) [b](other.md#nowhere) [c](#not-here) ![d](nope.png)\n\n## Here\n"
    problems = link_problems(page, bad)
    assert len(problems) == 4, problems


def test_slugs_follow_githubs_rule():
    assert slug("Frameworks: Accelerate, Lightning and TensorFlow beside raw DDP") == \
        "frameworks-accelerate-lightning-and-tensorflow-beside-raw-ddp"
    assert slug("Your own model: the ddp_group fixture") == "your-own-model-the-ddp_group-fixture"
    assert slug("Karp–Flatt serial fraction") == "karpflatt-serial-fraction"
    assert anchors("## Your own model: the `ddp_group` fixture\n") == {"your-own-model-the-ddp_group-fixture"}


# ---------------------------------------------------------------------------------------------
# the commands
# ---------------------------------------------------------------------------------------------

def shell_lines(text: str) -> list[str]:
    """The command lines of a page's shell blocks, continuation lines joined."""
    out = []
    for token in _parser().parse(text):
        if token.type == "fence" and token.info.strip().split()[:1] and token.info.split()[0].lower() in SHELL:
            out += token.content.replace("\\\n", " ").splitlines()
    return [line for line in out if line.strip()]


def ddpbench_commands(line: str) -> list[list[str]]:
    """The argument lists after ``-m ddpbench`` of each command of a shell line."""
    words = shlex.split(line, comments=True)
    commands, current = [], []
    for word in words + ["&&"]:
        if word in ("&&", "||", ";", "|"):
            if "-m" in current and "ddpbench" in current:
                commands.append(current[current.index("ddpbench", current.index("-m")) + 1:])
            current = []
        else:
            current.append(word)
    return commands


def workflows(text: str) -> list[dict]:
    """The GitHub Actions workflows of a page: its ``yaml`` blocks that hold ``jobs``."""
    import yaml

    found = []
    for token in _parser().parse(text):
        if token.type == "fence" and token.info.strip().split()[:1] == ["yaml"]:
            data = yaml.safe_load(token.content)
            if isinstance(data, dict) and "jobs" in data:
                found.append(data)
    return found


def workflow_lines(text: str) -> list[str]:
    """The command lines of the ``run`` steps of a page's workflows, continuation lines joined."""
    return [line for workflow in workflows(text) for job in workflow["jobs"].values() for step in job["steps"]
            for line in step.get("run", "").replace("\\\n", " ").splitlines() if line.strip()]


def _documented_commands() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for line in [*shell_lines(text), *workflow_lines(text)]:
            for argv in ddpbench_commands(line):
                found.append((f"{page.relative_to(ROOT)}: {line.strip()}", argv))
    return found


COMMANDS = _documented_commands()


def test_the_docs_hold_the_commands_they_promise():
    said = {argv[0] for _, argv in COMMANDS if argv}
    assert {"sweep", "run", "compare", "collectives", "whatif", "export-benchmark", "history"} <= said
    quickstart = shell_lines((ROOT / "README.md").read_text(encoding="utf-8"))
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quickstart[-1].strip() in ci  # the test command is the one CI runs


def test_the_ci_workflow_files_and_keeps_the_history_before_its_gate():
    """docs/ci.md's workflow: it runs on a push to main, one run at a time, and its steps sweep, file,
    push the store and publish the page before the gate that can fail the run."""
    merge, pull = _ci_workflows()
    workflow = merge
    assert workflow[True if True in workflow else "on"]["push"]["branches"] == ["main"]  # YAML 1.1 reads on: as True
    assert workflow["concurrency"]["cancel-in-progress"] is False
    (job,) = workflow["jobs"].values()
    runs = [step.get("run", step.get("uses", "")) for step in job["steps"]]
    order = [next(i for i, r in enumerate(runs) if word in r) for word in
             ("ddpbench sweep", "history add", "git push", "history page", "deploy-pages", "history check")]
    assert order == sorted(order) and order[-1] == len(runs) - 1


def _ci_workflows() -> tuple[dict, dict]:
    """docs/ci.md's two workflows: (on a merge, on a pull request)."""
    found = workflows((ROOT / "docs" / "ci.md").read_text(encoding="utf-8"))
    on = [w[True if True in w else "on"] for w in found]
    merge = [w for w, trigger in zip(found, on) if "push" in trigger]
    pull = [w for w, trigger in zip(found, on) if "pull_request" in trigger]
    assert len(merge) == len(pull) == 1 == len(found) - 1
    return merge[0], pull[0]


def test_the_ci_pull_request_workflow_runs_base_and_head_interleaved_and_keeps_the_rounds():
    """docs/ci.md's pull-request workflow: the whole history fetched, one ab of the base commit (through
    the environment, never pasted into the command) against HEAD that fails on a slower call, and its
    folder uploaded whatever the outcome."""
    _, pull = _ci_workflows()
    (job,) = pull["jobs"].values()
    steps = job["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    (step,) = [step for step in steps if "ddpbench ab" in step.get("run", "")]
    ab = step["run"].split()
    assert ab[3:6] == ["ab", '"$BASE"', "HEAD"] and step["env"]["BASE"] == "${{ github.event.pull_request.base.sha }}"
    assert "--fail-on-slower" in ab and ab[ab.index("--out") + 1] == "reports/ab"
    (upload,) = [step for step in steps if "upload-artifact" in step.get("uses", "")]
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/ab"


def test_workflow_commands_are_read_from_run_steps():
    text = "```yaml\njobs:\n  a:\n    steps:\n      - run: |\n          python -m ddpbench history check \\\n" \
           "            --store s\n          echo done\n```\n"
    assert [line.split() for line in workflow_lines(text)] == \
        [["python", "-m", "ddpbench", "history", "check", "--store", "s"], ["echo", "done"]]
    assert [argv for line in workflow_lines(text) for argv in ddpbench_commands(line)] == \
        [["history", "check", "--store", "s"]]


def _check_command(argv: list[str]) -> None:
    """Parse ``argv`` as ``python -m ddpbench`` does, then load what it names, without running it."""
    from ddpbench.cli.program import build_parser
    from ddpbench.cli.shared.run_options import launcher_options
    from ddpbench.experiment.collectives import parse_collectives
    from ddpbench.experiment.files import read_toml
    from ddpbench.experiment.load import job_spec, load_experiment
    from ddpbench.experiment.machine import Machine
    from ddpbench.experiment.overrides import fields_from_flags
    from ddpbench.experiment.spec import FIELDS
    from ddpbench.launch.can_run import check_jobs

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:
        raise AssertionError(f"does not parse (exit {stop.code})") from None
    # a machine that can run what the docs show: GPUs for the GPU pages, as many cores as here
    gpus = 8
    if args.command in ("sweep", "tune"):
        path = ROOT / args.experiment
        assert path.is_file(), f"no experiment file {args.experiment}"
        machine = launcher_options(args).machine() if args.command == "sweep" else Machine.here()
        experiment = load_experiment(path, dataclasses.replace(machine, cuda_devices=gpus))
        check_jobs(experiment.jobs, experiment.source)  # what each job's strategy refuses (ddpbench.launch.can_run)
    elif args.command == "collectives":
        path = ROOT / args.experiment
        assert path.is_file(), f"no experiment file {args.experiment}"
        data = read_toml(path)
        if "collectives" in data:
            load_experiment(path, dataclasses.replace(Machine.here(), cuda_devices=gpus))
        else:
            parse_collectives(data, str(path))
    elif args.command == "run":
        given = fields_from_flags({name: getattr(args, name) for name in FIELDS})
        check_jobs([job_spec(given, dataclasses.replace(Machine.here(), cuda_devices=gpus), "command line")], "run")
    folders = [getattr(args, name, None) for name in ("folder", "a", "b", "dir", "from_dir", "results")]
    for value in [*folders, *argv]:
        if isinstance(value, (str, Path)) and str(value).startswith("reports/examples/"):
            assert (ROOT / str(value)).exists(), f"no folder {value}"


@pytest.mark.parametrize("where,argv", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_every_documented_command_parses_and_names_what_exists(where, argv, monkeypatch, extras_found):
    monkeypatch.chdir(ROOT)
    _check_command(argv)


def test_the_command_check_can_fail():
    with pytest.raises(AssertionError, match="does not parse"):
        _check_command(["sweep", "--no-such-flag"])
    with pytest.raises(AssertionError, match="no experiment file"):
        _check_command(["sweep", "experiments/no-such.toml"])
    with pytest.raises(AssertionError, match="no folder"):
        _check_command(["report", "reports/examples/no-such-folder"])
    from ddpbench.errors import InputError

    with pytest.raises(InputError):
        _check_command(["run", "--world-size", "0"])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_scripts_the_pages_run_exist(page):
    for line in shell_lines(page.read_text(encoding="utf-8")):
        for word in shlex.split(line, comments=True):
            if re.match(r"(benchmarks|scripts)/[\w.-]+$", word):
                assert (ROOT / word).is_file(), f"{page.name}: {line.strip()}: no {word}"


# ---------------------------------------------------------------------------------------------
# docs/own-workload.md, run as written (its steps cut down)
# ---------------------------------------------------------------------------------------------

OWN = ROOT / "experiments" / "own-workload.toml"


def test_the_own_workload_page_walks_through_the_shipped_experiment():
    import tomllib

    page = (ROOT / "docs" / "own-workload.md").read_text(encoding="utf-8")
    experiment = tomllib.loads(OWN.read_text(encoding="utf-8"))
    defaults = experiment["defaults"]
    assert defaults["model"] == "experiments.own_model:make" and defaults["model"] in page
    # world size 1 a fair baseline, launches enough for an interval, caps that differ
    assert defaults["threads_per_rank"] == 1 and defaults["repeats"] == 3
    assert sorted(ws for grid in experiment["grid"] for ws in grid["world_size"]) == [1, 2]
    caps = [cap for grid in experiment["grid"] for cap in grid.get("bucket_cap_mb", [])]
    assert len(caps) == 3 and all(str(cap) in page for cap in caps)
    assert "python -m ddpbench sweep experiments/own-workload.toml" in page

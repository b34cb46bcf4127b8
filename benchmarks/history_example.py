"""The history example (reports/examples/history-cpu/): a small training repository with a real
git history, measured at every commit, one commit of which made its training slower.

    python benchmarks/history_example.py [--out reports/examples/history-cpu] [--repo /tmp/tinytrain]
        [--commits 22] [--planted 14]

1. **The repository.** ``tinytrain``, an MLP classifier with a ddpbench experiment (``bench.toml``:
   world sizes 1 and 2, one thread a rank, 4 launches a job), is written commit by commit:
   refactors, docs, a flag, tests, a changed default that leaves the step alone... Commit
   ``--planted`` adds what a team adds without measuring it: a spectral-norm monitor of each hidden
   layer (power iteration, under ``no_grad``) in the forward pass. Nothing else touches the step's
   cost. The repository is kept as ``tinytrain.bundle`` (``git clone tinytrain.bundle``), so every
   commit named in the store can be checked out again.
2. **Every commit measured**, as CI would measure each merge: in a worktree of that commit,
   ``python -m ddpbench sweep bench.toml --no-report`` into ``results/NN-<commit>``, then
   ``history add`` into ``store/``, which keeps the records; ``results/`` is removed at the end
   unless ``--keep-results`` (a run stopped midway resumes from the folders there).
3. **The trend page** (``history page``) into ``page/``, and ``history check`` on the newest commit.
4. **Bisect** (``history bisect``) between the first and the last commit, into ``bisect/``, with
   the results of each commit it measured.

A step measured at one commit is only a measurement at that commit: the page's change point and
bisect's answer come from these launches alone; the planted commit is known only to this script,
which prints whether each found it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODEL = '''"""An MLP classifier of feature vectors: the model tinytrain trains."""

import torch
from torch import nn
from torch.utils.data import TensorDataset

from ddpbench import Workload


class MLP(nn.Module):
    def __init__(self, features: int, hidden: int, layers: int, classes: int):
        super().__init__()
        self.inp = nn.Linear(features, hidden)
        self.hidden = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))
        self.out = nn.Linear(hidden, classes)
{monitor_init}
    def forward(self, x):
        h = torch.relu(self.inp(x))
        for layer in self.hidden:
            h = torch.relu(layer(h))
{monitor_call}        return self.out(h)
{monitor_def}

def make(hidden: int = 1024, layers: int = 3, features: int = 256, classes: int = 10,
         samples: int = {samples}) -> Workload:
    """{make_doc}"""
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(samples, features), torch.randint(0, classes, (samples,)))
    return Workload(model=MLP(features, hidden, layers, classes), dataset=data,
                    loss=nn.functional.cross_entropy, name=f"tinytrain-mlp-{{hidden}}x{{layers}}")
'''

MONITOR_INIT = '''        # the largest singular value of each hidden layer, for the training dashboard
        self.spectral_norms = [0.0] * layers
'''
MONITOR_CALL = '''        self.track_spectral_norms()
'''
MONITOR_DEF = '''
    @torch.no_grad()
    def track_spectral_norms(self, iterations: int = 8):
        """Power iteration on each hidden weight: its largest singular value, for monitoring."""
        for i, layer in enumerate(self.hidden):
            w = layer.weight
            v = torch.ones(w.shape[1]) / w.shape[1] ** 0.5
            for _ in range(iterations):
                v = w.t().mv(w.mv(v))
                v = v / v.norm()
            self.spectral_norms[i] = float(w.mv(v).norm())
'''

BENCH = '''# The benchmark CI runs on every merge: tinytrain's model at world sizes 1 and 2 on CPU.{comment}
name = "tinytrain"
description = "tinytrain's MLP, DDP on gloo, world sizes 1 and 2, one thread a rank."
timeout_s = 300

[defaults]
model = "tinytrain.model:make"
strategy = "ddp"
device = "cpu"
backend = "gloo"
batch_size = 64
threads_per_rank = 1
warmup_steps = 3
steps = 30
repeats = 4

[grid]
world_size = [1, 2]
'''

TRAIN = '''"""Train tinytrain's model with DDP (torchrun --nproc-per-node N train.py)."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from tinytrain.model import make


def main(epochs: int = {epochs}):
    dist.init_process_group("gloo")
    work = make()
    model = DDP(work.model)
    loader = DataLoader(work.dataset, batch_size=64, sampler=DistributedSampler(work.dataset))
    opt = torch.optim.SGD(model.parameters(), lr={lr})
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            work.loss(model(x), y).backward()
            opt.step()
{log}    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


def history(planted: int, commits: int):
    """(subject, files) for each commit: the repository's whole state after it."""
    state = {"samples": 2048, "make_doc": "The workload ddpbench measures.", "bench_comment": "", "epochs": 1,
             "lr": 0.05, "log": "", "readme": "# tinytrain\n\nA small MLP trained with DDP.\n", "tests": None,
             "gitignore": None, "monitor": False}
    changes = [
        ("Initial model, training script and benchmark", {}),
        ("Add .gitignore", {"gitignore": "__pycache__/\nreports/\n"}),
        ("README: how to train", {"readme": "# tinytrain\n\nA small MLP trained with DDP.\n\n"
                                            "    torchrun --nproc-per-node 2 train.py\n"}),
        ("Train for two epochs by default", {"epochs": 2}),
        ("Log the loss once an epoch on rank 0", {"log": "        if dist.get_rank() == 0:\n"
                                                          "            print(f'epoch {epoch}: done')\n"}),
        ("Document the workload factory", {"make_doc": "The workload ddpbench measures: model, data and loss."}),
        ("Add a test of the model's output shape", {"tests": "from tinytrain.model import make\n\n\n"
                                                             "def test_shape():\n    w = make(samples=64)\n"
                                                             "    x, _ = w.dataset[0]\n"
                                                             "    assert w.model(x[None]).shape == (1, 10)\n"}),
        ("Lower the learning rate to 0.02", {"lr": 0.02}),
        ("README: the benchmark", {"readme": "# tinytrain\n\nA small MLP trained with DDP.\n\n"
                                             "    torchrun --nproc-per-node 2 train.py\n\n"
                                             "CI measures it with `python -m ddpbench sweep bench.toml`.\n"}),
        ("Benchmark: say how long it takes", {"bench_comment": "\n# About a minute on 2 CPU cores."}),
        ("More samples in the synthetic dataset", {"samples": 4096}),
        ("Train for three epochs", {"epochs": 3}),
        ("Log every epoch's number with its rank", {"log": "        if dist.get_rank() == 0:\n"
                                                            "            print(f'epoch {epoch} of {epochs}')\n"}),
        ("Tests: the dataset's size", {"tests": "from tinytrain.model import make\n\n\n"
                                                "def test_shape():\n    w = make(samples=64)\n"
                                                "    x, _ = w.dataset[0]\n"
                                                "    assert w.model(x[None]).shape == (1, 10)\n\n\n"
                                                "def test_samples():\n"
                                                "    assert len(make(samples=32).dataset) == 32\n"}),
    ]
    filler = [("README: a note on world sizes", "readme", "\nWorld sizes 1 and 2 fit a laptop.\n"),
              ("README: link the ddpbench docs", "readme", "\nSee ddpbench's docs/history.md.\n"),
              ("Tests: a note on speed", "tests", "\n# these tests build small models only\n"),
              ("README: the trend page", "readme", "\nThe trend page is published on every merge.\n"),
              ("Comment the training loop", "log", "        # one optimizer step a batch, one epoch a pass\n"),
              ("README: contributing", "readme", "\nPull requests welcome.\n"),
              ("Tests: name the model's classes", "tests", "\nCLASSES = 10\n"),
              ("README: license", "readme", "\nMIT.\n"),
              ("README: acknowledgements", "readme", "\nThanks to everyone who measured.\n"),
              ("Tests: one more comment", "tests", "\n# more tests to come\n")]
    out = []
    for number in range(commits):
        if number == planted:
            subject, change = "Track each hidden layer's spectral norm for the dashboard", {"monitor": True}
        else:
            index = number - (number > planted)
            if index < len(changes):
                subject, change = changes[index]
            else:
                subject, key, text = filler[(index - len(changes)) % len(filler)]
                change = {key: (state[key] or "") + text}
        state.update(change)
        out.append((subject, files(state)))
    return out


def files(state: dict) -> dict[str, str]:
    found = {
        "tinytrain/__init__.py": '"""tinytrain: an MLP trained with DDP, measured by ddpbench on every merge."""\n',
        "tinytrain/model.py": MODEL.format(
            samples=state["samples"], make_doc=state["make_doc"],
            monitor_init=MONITOR_INIT if state["monitor"] else "",
            monitor_call=MONITOR_CALL if state["monitor"] else "", monitor_def=MONITOR_DEF if state["monitor"] else ""),
        "bench.toml": BENCH.format(comment=state["bench_comment"]),
        "train.py": TRAIN.format(epochs=state["epochs"], lr=state["lr"], log=state["log"]),
        "README.md": state["readme"],
    }
    if state["tests"]:
        found["tests/test_model.py"] = state["tests"]
    if state["gitignore"]:
        found[".gitignore"] = state["gitignore"]
    return found


def git(repo: Path, *args: str, env: dict | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}).stdout.strip()


def make_repository(repo: Path, planted: int, commits: int) -> list[str]:
    """Write the repository afresh; its commits, oldest first."""
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    made = []
    for number, (subject, content) in enumerate(history(planted, commits)):
        for path in repo.glob("**/*"):
            if path.is_file() and ".git" not in path.parts and str(path.relative_to(repo)) not in content:
                path.unlink()
        for name, text in content.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        date = f"2026-10-{number + 1:02d}T10:00:00+00:00"
        git(repo, "-c", "user.name=tinytrain", "-c", "user.email=tinytrain@example.org", "commit", "-q", "-m",
            subject, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        made.append(git(repo, "rev-parse", "HEAD"))
    return made


def ddpbench(*args, cwd: Path | None = None, check: bool = True) -> int:
    print("$ python -m ddpbench", " ".join(map(str, args)), flush=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    code = subprocess.run([sys.executable, "-m", "ddpbench", *map(str, args)], cwd=cwd, env=env, check=False).returncode
    if check and code != 0:
        raise SystemExit(f"ddpbench {args[0]} failed with exit code {code}")
    return code


def measure(repo: Path, commits: list[str], out: Path) -> None:
    """Each commit in a worktree of its own: the sweep, then filed into out/store."""
    results = out / "results"
    for number, commit in enumerate(commits):
        folder = results / f"{number:02d}-{commit[:7]}"
        if not (folder / "results.jsonl").is_file():
            with tempfile.TemporaryDirectory() as tmp:
                tree = Path(tmp) / "tree"
                git(repo, "worktree", "add", "-q", "--detach", str(tree), commit)
                try:
                    ddpbench("sweep", "bench.toml", "--out", folder.resolve(), "--no-report", cwd=tree)
                finally:
                    git(repo, "worktree", "remove", "--force", str(tree))
        ddpbench("history", "add", folder, "--store", out / "store", "--repo", repo, "--commit", commit)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "examples" / "history-cpu")
    parser.add_argument("--repo", type=Path, default=Path(tempfile.gettempdir()) / "tinytrain")
    parser.add_argument("--commits", type=int, default=22)
    parser.add_argument("--planted", type=int, default=14, help="the commit (0-based) that adds the slowdown")
    parser.add_argument("--keep-results", action="store_true",
                        help="keep each commit's results folder (out/results/; a run that stops resumes from them)")
    args = parser.parse_args(argv)
    commits = make_repository(args.repo, args.planted, args.commits)
    args.out.mkdir(parents=True, exist_ok=True)
    for stale in ("store", "page", "bisect"):
        shutil.rmtree(args.out / stale, ignore_errors=True)
    git(args.repo, "bundle", "create", "-q", str((args.out / "tinytrain.bundle").resolve()), "HEAD", "main")
    measure(args.repo, commits, args.out)
    ddpbench("history", "page", "--store", args.out / "store", "--out", args.out / "page")
    ddpbench("history", "check", "--store", args.out / "store", check=False)
    ddpbench("history", "bisect", "bench.toml", "--repo", args.repo, "--good", commits[0], "--bad", commits[-1],
             "--out", args.out / "bisect", check=False)
    if not args.keep_results:  # the store holds each sweep's records byte for byte
        shutil.rmtree(args.out / "results", ignore_errors=True)
        for logs in (args.out / "bisect").glob("*/logs"):  # the ranks' own logs, left out as in every example
            shutil.rmtree(logs, ignore_errors=True)
    print(f"planted at commit {args.planted}: {commits[args.planted]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The consistency checker: findings set against the summary under them. It must catch what it is
for (a fix measured slower, an efficiency above 100 % unflagged, a step time no job measured, a
median quoted as the step), find nothing in the diagnosis of generated sweeps, and nothing in any
committed example report."""

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given, settings, strategies as st

from ddpbench.analysis import consistency
from ddpbench.analysis.costmodel import Link
from ddpbench.analysis.diagnosis import diagnose
from ddpbench.analysis.findings import Finding
from ddpbench.analysis.summary import add_speedup
from ddpbench.experiment.spec import FIELDS
from ddpbench.strategies.ddp import predicted_buckets
from test_diagnosis import _row

EXAMPLES = Path(__file__).resolve().parent.parent / "reports" / "examples"
SIZES = tuple([int(6.7e6)] * 4)  # the mlp-m: 4 buckets of 6.7 MB at 1 MB, one at 25 MB


def _spec_row(**kw):
    """A summary row with every job field at its default (what add_speedup matches baselines on)."""
    return {**{name: f.default for name, f in FIELDS.items()}, **_row(**kw)}


def _job(key, cap, launches, **kw):
    return _spec_row(key=key, bucket_cap_mb=cap, bucket_layout=predicted_buckets(SIZES, cap), tensor_bytes=SIZES,
                step_ms_mean=sum(launches) / len(launches), launch_step_ms=list(launches), **kw)


def test_it_catches_a_fix_the_sweep_measured_slower():
    """The issue's report: 'bucket_cap_mb = 25 (the default)' proposed for the 1 MB job, whose 25 MB
    twin ran 82.2 ms against its 74.7 ms."""
    summary = pd.DataFrame([_job("one", 1.0, [74.0, 75.0, 75.1]), _job("default", 25.0, [82.0, 82.5, 82.1])])
    old = Finding("bucket", "warn", "... Fix: bucket_cap_mb = 25 (the default); estimated to recover 24.0 of 74.7 ms",
                  cause="buckets", job="one", recoverable_ms=24.0, fix="bucket_cap_mb = 25", fix_fields={"bucket_cap_mb": 25.0})
    (p,) = consistency.check(summary, [old])
    assert p.kind == "contradicted" and "measured 10.0 % slower (default)" in p.text
    # what the diagnosis says of the same two jobs now: nothing to contradict
    link = Link("measured", alpha_us=95.0, beta_us_per_byte=7e-4, source="collectives")
    assert consistency.check(summary, diagnose(summary, link=link)) == []


def test_it_catches_an_unflagged_efficiency_above_100_percent_and_unmeasured_figures():
    row = _row(key="j", speedup=7.42, efficiency=3.71, step_ms_mean=60.0)
    kinds = [p.kind for p in consistency.check(pd.DataFrame([row]), [
        Finding("scaling", "info", "ddp scales well: it runs 7.42x, 371 % parallel efficiency."),
        Finding("bound", "info", "20 % of each step (12.0 ms of 61.3 ms) is communication."),
        Finding("bucket", "info", "The median step of 55.0 ms ...")])]
    assert sorted(kinds) == ["efficiency", "efficiency", "statistic", "unquoted"]
    # the diagnosis flags the broken baseline itself, and quotes only measured steps
    row["baseline_problem"] = "its world-size-1 baseline scattered ..."
    assert consistency.check(pd.DataFrame([row]), diagnose(pd.DataFrame([row]))) == []


@settings(max_examples=40, deadline=None)
@given(caps=st.lists(st.sampled_from([0.5, 1.0, 5.0, 25.0, 100.0]), min_size=1, max_size=4, unique=True),
       launches=st.lists(st.lists(st.floats(40, 120), min_size=1, max_size=4), min_size=4, max_size=4),
       base=st.lists(st.floats(20, 140), min_size=1, max_size=4), exposed=st.floats(0, 40),
       threads=st.sampled_from([1, 2]), alpha=st.floats(0, 400))
# found by the suite: the 25 MB job (72 ms) and the 100 MB one (40 ms) made the same bucket; pooled
# against the 0.5 MB job alone they looked faster, though 1 MB (the 0.5 MB job's buckets) ran 40 ms
@example(caps=[0.5, 25.0, 1.0, 100.0], launches=[[63.0], [72.0], [40.0], [40.0]], base=[20.0], exposed=1.0,
         threads=1, alpha=0.0)
def test_the_diagnosis_of_generated_sweeps_has_nothing_to_contradict(caps, launches, base, exposed, threads, alpha):
    """Generated sweeps (bucket caps with any step times, a world-size-1 baseline of any speed and
    threads, any exposed communication and all-reduce latency): the checker finds nothing."""
    rows = [_job(f"ws2-{cap}", cap, times, exposed_comm_ms=min(exposed, min(times)),
                 exposed_comm_share=min(exposed, min(times)) / (sum(times) / len(times)), backward_ms=30.0,
                 threads_per_rank=1, global_batch=64, samples_per_s=64e3 / (sum(times) / len(times)),
                 step_ms_median=sorted(times)[len(times) // 2], step_ms_iqr=0.05 * times[0])
            for cap, times in zip(caps, launches)]
    mean = sum(base) / len(base)
    rows.append(_spec_row(key="ws1", world_size=1, bucket_cap_mb=25.0, threads_per_rank=threads, step_ms_mean=mean,
                     launch_step_ms=list(base), global_batch=32, samples_per_s=32e3 / mean,
                     step_ms_median=sorted(base)[len(base) // 2], step_ms_iqr=0.3 * base[0], exposed_comm_ms=0.0,
                     exposed_comm_share=0.0))
    summary = add_speedup(pd.DataFrame(rows).drop(columns=["speedup", "efficiency", "efficiency_low",
                                                            "efficiency_high", "serial_fraction"]))
    link = Link("measured", alpha_us=alpha, beta_us_per_byte=7e-4, source="collectives")
    assert consistency.check(summary, diagnose(summary, link=link)) == []


@pytest.mark.slow
@pytest.mark.parametrize("folder", sorted(p.parent.name for p in EXAMPLES.glob("*/results.jsonl")))
def test_every_committed_example_report_agrees_with_its_measurements(folder):
    from ddpbench.analysis.folder import load

    problems = load(EXAMPLES / folder).contradictions
    assert problems == [], "\n".join(f"{p.kind}: {p.text}" for p in problems)

"""The alpha-beta cost model on exact values: formulas, fits that recover planted parameters,
projections, and the experiment's [[links]]."""

import math

import numpy as np
import pandas as pd
import pytest

from ddpbench.analysis.models import costmodel as cm
from ddpbench.analysis.models import whatif
from ddpbench.errors import InputError
from ddpbench.experiment.load import parse_experiment
from ddpbench.experiment.machine import Machine
from ddpbench.testing.tables import expected_max_of_normals as _blom

LINK = cm.Link("test", alpha_us=10.0, beta_us_per_byte=1e-3, source="experiment")  # 8 Gbit/s


def test_ring_and_master_formulas():
    n = 1e6
    # p = 4: 2*3 messages of alpha, 2*(3/4) of the data
    assert cm.ring_allreduce_us(n, 4, LINK) == pytest.approx(6 * 10 + 1.5 * n * 1e-3)
    assert cm.master_aggregation_us(n, 4, LINK) == pytest.approx(6 * (10 + n * 1e-3))
    assert cm.ring_allreduce_us(n, 1, LINK) == 0 and cm.master_aggregation_us(n, 1, LINK) == 0
    # the ring's bytes per rank saturate at 2n; the master's root link grows with p: the ratio is p
    wire = cm.Link("no latency", alpha_us=0.0, beta_us_per_byte=1e-3, source="experiment")
    for p in (2, 64, 1024):
        ratio = cm.master_aggregation_us(n, p, wire) / cm.ring_allreduce_us(n, p, wire)
        assert ratio == pytest.approx(p, rel=1e-3)
    assert LINK.gbit_per_s == pytest.approx(8.0)


def _collectives(alpha, beta, world_sizes=(2, 4), noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for p in world_sizes:
        for n in 2.0 ** np.arange(10, 27):
            t = 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta
            rows.append({"op": "all_reduce", "status": "ok", "backend": "gloo", "world_size": p, "size_bytes": n,
                         "time_us_median": t * (1 + noise * rng.standard_normal())})
    return pd.DataFrame(rows)


def test_fit_recovers_planted_alpha_and_beta():
    link = cm.fit_collectives(_collectives(50.0, 5e-4))
    assert link.alpha_us == pytest.approx(50.0, rel=1e-3)
    assert link.beta_us_per_byte == pytest.approx(5e-4, rel=1e-3)
    assert link.points == 34 and link.fit_error_pct < 0.1
    # 5 % noise and two wild latency spikes (as seen on gloo: a 1 KB all_reduce at 2 ms): still close
    noisy = _collectives(50.0, 5e-4, noise=0.05)
    noisy.loc[[0, 3], "time_us_median"] *= 20
    link = cm.fit_collectives(noisy)
    assert link.alpha_us == pytest.approx(50.0, rel=0.1)
    assert link.beta_us_per_byte == pytest.approx(5e-4, rel=0.1)


def test_no_fit_without_all_reduce_points():
    assert cm.fit_collectives(pd.DataFrame()) is None
    one = _collectives(50.0, 5e-4, world_sizes=(2,)).iloc[:1]
    assert cm.fit_collectives(one) is None


def _summary_row(**kw):
    base = {"key": "k", "strategy": "ddp", "status": "ok", "comm_hook": "none", "model": "mlp", "model_size": "m",
            "model_args": "", "per_rank_batch": 32, "world_size": 1, "bucket_cap_mb": 25.0, "scaling": "weak",
            "oversubscribed": False, "step_ms_mean": 100.0, "nosync_step_ms": 100.0, "ddp_comm_ms": math.nan,
            "exposed_comm_ms": 0.0, "backward_ms": 60.0, "comm_ms": 0.0, "allreduce_bytes_per_step": 4e6,
            "buckets": 2.0, "params": 1e6}
    return {**base, **kw}


def test_projection_and_prediction_error_against_a_measured_job():
    # ws 2: two 2 MB buckets; DDP logged 30 ms of comm of which 10 ms were exposed (20 ms hidden)
    summary = pd.DataFrame([
        _summary_row(key="a"),
        _summary_row(key="b", world_size=2, step_ms_mean=112.0, nosync_step_ms=102.0, ddp_comm_ms=30.0,
                     exposed_comm_ms=10.0),
    ])
    ranks = pd.DataFrame([{"key": "b", "bucket_bytes": [2e6, 2e6]}])
    (work,) = cm.workloads(summary, ranks)
    # the backward pass is 60 of the 100 ms step at world size 1: the buckets' release
    assert work.compute_ms == 100.0 and work.compute_multi_ms == 102.0 and work.backward_share == 0.6
    assert work.bucket_bytes == (2e6, 2e6) and work.measured_world_size == 2

    check = cm.predicted_vs_measured(summary, ranks, LINK).iloc[0]
    comm = 2 * float(cm.ring_allreduce_us(2e6, 2, LINK)) / 1e3  # 2 * (20 us + 2 ms) = 4.04 ms
    assert check["predicted_comm_ms"] == pytest.approx(comm)
    assert check["comm_error_pct"] == pytest.approx(100 * (comm - 30) / 30)
    # the first bucket hides in the backward pass; the second is ready only when it ends: exposed
    assert check["predicted_step_ms"] == pytest.approx(102.0 + comm / 2)
    assert check["step_error_pct"] == pytest.approx(100 * (102 + comm / 2 - 112) / 112)

    table = cm.projection(summary, ranks, [LINK]).set_index(["strategy", "world_size"])
    assert set(table.index.get_level_values("world_size")) == {1, 2, *cm.PROJECTED_WORLD_SIZES}
    assert table.loc[("ddp", 1), "efficiency"] == 1.0
    # at 1024 ranks each bucket takes the cheaper of ring (2 * 1023 latencies) and tree (2 * 10)

    per_bucket, algorithm = whatif.allreduce_us(2e6, 1024, cm.flat_cluster(LINK))
    assert algorithm == "tree" and per_bucket < float(cm.ring_allreduce_us(2e6, 1024, LINK))
    assert table.loc[("ddp", 1024), "algorithms"] == "tree"
    assert table.loc[("ddp", 1024), "step_ms"] == pytest.approx(102.0 + per_bucket / 1e3)  # the last one exposed
    master = float(cm.master_aggregation_us(4e6, 1024, LINK)) / 1e3
    assert table.loc[("master", 1024), "step_ms"] == pytest.approx(102.0 + master)
    assert table.loc[("master", 1024), "efficiency"] < table.loc[("ddp", 1024), "efficiency"]
    assert (table["link_source"] == "experiment").all()


def test_fit_from_ddp_logs_when_no_collectives():
    # comm = buckets * 2(p-1) * 100 us + 2(p-1)/p * n * 1e-3 us, two bucket counts: both identifiable
    rows = [_summary_row(key=f"j{b}", world_size=2, buckets=float(b), ddp_comm_ms=(b * 2 * 100 + 4e6 * 1e-3) / 1e3)
            for b in (1, 4, 16)]
    (link,) = cm.measured_links(pd.DataFrame(), pd.DataFrame(rows))
    assert link.source == "ddp-logs"
    assert link.alpha_us == pytest.approx(100.0, rel=1e-3) and link.beta_us_per_byte == pytest.approx(1e-3, rel=1e-3)


def test_links_in_the_experiment():
    data = {"grid": {"world_size": [1]},
            "links": [{"name": "100G IB", "gbit_per_s": 100, "latency_us": 2}]}
    exp = parse_experiment(data, "x.toml", machine=Machine(cores=2, cuda_devices=0))
    assert exp.links == ({"name": "100G IB", "gbit_per_s": 100.0, "latency_us": 2.0},)
    sweeps = pd.DataFrame([{"experiment_links": list(exp.links)}])
    (link,) = cm.given_links(sweeps)
    assert link.beta_us_per_byte == pytest.approx(8e-5) and link.alpha_us == 2.0
    for links, key in (([{"name": "x", "gbit_per_s": 0, "latency_us": 1}], "links[0].gbit_per_s"),
                       ([{"name": "x", "gbit_per_s": 10}], "links[0].latency_us"),
                       ([{"name": "x", "gbit_per_s": 10, "latency_us": 1, "mtu": 9000}], "links[0].mtu"),
                       ({"name": "x"}, "links")):
        with pytest.raises(InputError) as err:
            parse_experiment({**data, "links": links}, "x.toml", machine=Machine(cores=2, cuda_devices=0))
        assert err.value.key == key and "x.toml" in str(err.value)


def test_ddp_log_fit_without_spread_charges_per_byte_and_skips_oversubscribed():
    # one bucket everywhere and nearly the same bytes: alpha and beta are not identifiable
    rows = [_summary_row(key="a", world_size=2, buckets=1.0, allreduce_bytes_per_step=26e6, ddp_comm_ms=20.0),
            _summary_row(key="b", world_size=2, buckets=1.0, allreduce_bytes_per_step=26.5e6, ddp_comm_ms=21.0),
            _summary_row(key="c", world_size=4, buckets=1.0, allreduce_bytes_per_step=26e6, ddp_comm_ms=90.0,
                         oversubscribed=True)]
    link = cm.fit_ddp_logs(pd.DataFrame(rows))
    assert link.points == 2  # the oversubscribed job is left out
    assert link.alpha_us == 0.0
    # all per byte: 2 (p-1)/p n beta = t at p = 2, i.e. beta = t / n (median over the two jobs)
    assert link.beta_us_per_byte == pytest.approx(np.median([20e3 / 26e6, 21e3 / 26.5e6]))


def test_world_size_one_never_enters_a_fit():
    # one rank times a local copy, not a link: planted ws-1 rows must not move the fit
    ws1 = _collectives(50.0, 5e-4, world_sizes=(2,)).assign(world_size=1, time_us_median=7.0)
    link = cm.fit_collectives(pd.concat([ws1, _collectives(50.0, 5e-4)], ignore_index=True))
    assert link.points == 34 and "world size 2, 4" in link.name
    assert link.alpha_us == pytest.approx(50.0, rel=1e-3) and link.beta_us_per_byte == pytest.approx(5e-4, rel=1e-3)
    summary = pd.DataFrame([_summary_row(), _summary_row(key="m", strategy="master")])
    assert cm.measured_links(ws1, summary) == []
    assert cm.single_rank_only(ws1, summary) and cm.single_rank_only(ws1, pd.DataFrame())
    assert cm.single_rank_only(None, summary)
    assert not cm.single_rank_only(_collectives(50.0, 5e-4), summary)
    assert not cm.single_rank_only(ws1, pd.DataFrame([_summary_row(world_size=2)]))
    assert not cm.single_rank_only(pd.DataFrame(), pd.DataFrame())


def test_past_the_largest_measured_world_size_the_step_waits_longer_for_the_slowest_rank():
    """A planted spread of 10 % measured at world size 8: the projection adds nothing up to 8 ranks (its
    measured steps hold their wait), then c (E[max of p] - E[max of 8]) times the busy compute."""
    work = cm.Workload("w", "mlp", "s", "", 32, 8e6, (4e6, 4e6), 25.0, 50.0, 60.0, 2 / 3, 8, rank_spread=0.1)
    still = cm.predict(cm.Workload(**{**work.__dict__, "rank_spread": 0.0}), LINK, [1, 4, 8, 16, 64, 1024])
    grown = cm.predict(work, LINK, [1, 4, 8, 16, 64, 1024])
    for (_, a), (_, b) in zip(still.iterrows(), grown.iterrows()):
        p = int(b["world_size"])
        want = 0.1 * (_blom(p) - _blom(8)) * 60.0 if p > 8 else 0.0
        assert b["slowest_growth_ms"] == pytest.approx(want, abs=1e-12)
        assert b["step_ms"] - a["step_ms"] == pytest.approx(want, abs=1e-9)
        assert b["efficiency"] == pytest.approx(50.0 / (a["step_ms"] + want))
    assert grown["slowest_growth_ms"].iloc[-1] == pytest.approx(0.1 * (3.2 - 1.42) * 60, rel=0.03)  # 3.23 and 1.43

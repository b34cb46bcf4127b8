"""An experiment's [cost] and the cost flags: what is taken, and one line naming the key or flag for
anything else, whatever the value (Hypothesis feeds it TOML's kinds of values)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.errors import InputError
from ddpbench.experiment.cost import KEYS, Cost, parse_cost, with_flags
from ddpbench.experiment.load import parse_experiment
from ddpbench.testing.fuzzing import examples

DEFAULTS = {"model": "mlp", "model_size": "xs", "batch_size": 8, "device": "cpu", "backend": "gloo"}


def test_a_whole_cost_table_is_taken():
    cost = parse_cost({"price_per_device_hour": 2.5, "price_per_node_hour": 1, "currency": "EUR",
                       "source": "list price", "date": "2026-11-01", "samples": 1281167, "deadline_h": 24}, "x.toml")
    assert cost == Cost(2.5, 1.0, "EUR", "list price", "2026-11-01", 1281167, 24.0)
    assert cost.hourly(devices=8, nodes=1) == 21.0
    assert cost.described() == "2.5 EUR a device-hour + 1 EUR a node-hour (list price, 2026-11-01)"
    assert parse_cost(cost.to_dict(), "results.jsonl") == cost  # what a sweep stores reads back the same


@pytest.mark.parametrize("table, key, says", [
    ({"price_per_device_hour": 0}, "cost.price_per_device_hour", "above 0"),
    ({"price_per_device_hour": "2.5"}, "cost.price_per_device_hour", "must be a number"),
    ({"price_per_device_hour": True}, "cost.price_per_device_hour", "must be a number"),
    ({"price_per_node_hour": 1}, "cost.price_per_node_hour", "needs cost.price_per_device_hour"),
    ({"deadline_h": 4}, "cost.deadline_h", "needs cost.samples"),
    ({"samples": 1.5}, "cost.samples", "whole number"),
    ({"date": "yesterday"}, "cost.date", "YYYY-MM-DD"),
    ({"currency": "US-D"}, "cost.currency", "1 to 8 letters"),
    ({"currency": "US dollars"}, "cost.currency", "at most 8 characters"),
    ({"price_per_hour": 3}, "cost.price_per_hour", "unknown key; allowed: price_per_device_hour"),
])
def test_bad_cost_is_one_line_naming_the_key(table, key, says):
    with pytest.raises(InputError) as err:
        parse_cost(table, "exp.toml")
    assert err.value.key == key and says in err.value.message and "\n" not in str(err.value)


TOML_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**18, 10**18), st.floats(allow_nan=True),
                        st.text(max_size=30), st.lists(st.integers(), max_size=3),
                        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@given(table=st.dictionaries(st.sampled_from(KEYS + ("price", "deadline")), TOML_VALUES, max_size=5))
@settings(max_examples=examples(300), deadline=None)
def test_any_cost_table_is_a_cost_or_one_line_naming_its_key(table):
    try:
        cost = parse_cost(table, "exp.toml")
    except InputError as err:
        assert err.key and err.key.startswith("cost.") and "\n" not in str(err)
        return
    assert cost.price_per_device_hour is None or cost.price_per_device_hour > 0


def test_flags_go_over_the_table_and_their_errors_name_the_flag():
    cost = with_flags(Cost(2.0, samples=100), {"--price-per-device-hour": 3.0, "--deadline-h": None})
    assert cost.price_per_device_hour == 3.0 and cost.samples == 100
    with pytest.raises(InputError, match=r"command line: --deadline-h: needs --train-samples"):
        with_flags(Cost(), {"--deadline-h": 2.0})
    with pytest.raises(InputError, match=r"command line: --price-per-device-hour: must be a number above 0"):
        with_flags(Cost(), {"--price-per-device-hour": -1.0})


def test_an_experiment_carries_its_cost_and_refuses_a_bad_one(cpu_machine):
    data = {"defaults": DEFAULTS, "cost": {"price_per_device_hour": 1.5}}
    assert parse_experiment(data, "e.toml", machine=cpu_machine).cost.price_per_device_hour == 1.5
    assert parse_experiment({"defaults": DEFAULTS}, "e.toml", machine=cpu_machine).cost == Cost()
    with pytest.raises(InputError, match=r"e.toml: cost: must be a table"):
        parse_experiment({**data, "cost": 3}, "e.toml", machine=cpu_machine)


def test_training_samples_alone_never_ask_for_a_price_the_user_did_not_name():
    """``whatif --train-samples N`` without a price: the node's default 0 is no price given, so the
    command never says "--price-per-node-hour: needs ..." of a flag the user never passed."""
    given = {"--price-per-device-hour": None, "--price-per-node-hour": None, "--currency": None,
             "--train-samples": 1000}
    assert with_flags(Cost(), given).samples == 1000
    with pytest.raises(InputError, match="--price-per-node-hour: needs --price-per-device-hour"):
        with_flags(Cost(), {**given, "--price-per-node-hour": 2.0})

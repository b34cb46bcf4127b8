"""The analysis sections end to end: a real sweep with collectives and given links gets a
diagnosis and a projection that is checked against its own measurements."""

import pytest

from ddpbench.errors import InputError
from ddpbench.experiment.load import parse_experiment
from ddpbench.experiment.machine import Machine


def test_collectives_table_in_a_sweep_experiment():
    machine = Machine(cores=2, cuda_devices=0)
    exp = parse_experiment({"grid": {"world_size": [1]}, "collectives": {"ops": ["all_reduce"], "sizes": "1K:4K"}},
                           "x.toml", default_name="x", machine=machine)
    (spec,) = exp.collectives.specs
    assert spec.ops == ("all_reduce",) and spec.sizes == (1024, 2048, 4096) and spec.world_size == 2
    for table, key in (({"ops": ["allreduce"]}, "collectives.ops"), ({"name": "y"}, "collectives.name"),
                       ("all_reduce", "collectives"), ({"backend": "nccl"}, "collectives.backend")):
        with pytest.raises(InputError) as err:
            parse_experiment({"grid": {"world_size": [1]}, "collectives": table}, "x.toml", machine=machine)
        assert err.value.key == key and str(err.value).startswith("x.toml: " + key)

"""Whether a model's training state fits a device: 16 bytes a parameter for Adam (the ZeRO paper's rule), the same
at every size under DDP, divided by the devices as each ZeRO stage and FSDP shards it, and the GPU's own memory
read from its name or its datasheet."""

import pytest

from ddpbench.analysis.models import Memory, gpu_memory_gb

#: a 7-billion-parameter model
SEVEN_B = 7e9


def test_adam_holds_16_bytes_a_parameter_in_fp32_and_in_mixed_precision():
    assert Memory(SEVEN_B, "fp32").state_gb(1) == pytest.approx(112.0)
    assert Memory(SEVEN_B, "bf16").state_gb(1) == pytest.approx(112.0)
    assert Memory(SEVEN_B, "bf16").parts_gb(1) == pytest.approx((14.0, 14.0, 84.0))  # 2 + 2 + 12 bytes
    assert Memory(SEVEN_B, "fp32").parts_gb(1) == pytest.approx((28.0, 28.0, 56.0))  # 4 + 4 + 8 bytes


def test_sgd_with_momentum_holds_one_buffer_where_adam_holds_two():
    assert Memory(SEVEN_B, "fp32", optimizer="sgd").parts_gb(1) == pytest.approx((28.0, 28.0, 28.0))  # 4 + 4 + 4
    assert Memory(SEVEN_B, "bf16", optimizer="sgd").parts_gb(1) == pytest.approx((14.0, 14.0, 56.0))  # 2 + 2 + 8
    words = Memory(SEVEN_B, "bf16", optimizer="sgd", optimizer_source="the one its jobs trained with").words()
    assert "x 12 bytes" in words and "SGD's fp32 master weights and momentum (8)" in words
    assert "the optimizer sgd: the one its jobs trained with" in words


def test_the_optimizer_counted_is_the_one_typed_else_the_jobs_own_else_whatif_s_default():
    from ddpbench.analysis.models import DEFAULT_OPTIMIZER, TRAINED_WITH, counted_optimizer
    from ddpbench.cli.program import build_parser

    assert counted_optimizer("sgd", "adam") == ("sgd", "")
    assert counted_optimizer(None, "sgd") == ("sgd", TRAINED_WITH)
    assert counted_optimizer(None, None) == (DEFAULT_OPTIMIZER, "") == ("adam", "")
    # the flag's default is the rule's, though the command line declares it without importing the models
    args = build_parser().parse_args(["whatif", "--model", "mlp", "--compute-ms", "100"])
    assert args.optimizer == DEFAULT_OPTIMIZER


def test_the_rule_knows_every_optimizer_an_experiment_trains_with():
    from ddpbench.analysis.models import OPTIMIZERS
    from ddpbench.experiment.spec import FIELDS

    assert set(OPTIMIZERS) == set(FIELDS["optimizer"].metadata["choices"])


def test_under_ddp_the_fit_is_the_same_at_every_size():
    memory = Memory(SEVEN_B, "bf16", "none", 80.0, "given")
    assert [memory.fits(p) for p in (1, 8, 1024)] == [False, False, False]
    assert Memory(SEVEN_B, "bf16", "none", 120.0, "given").fits(1024) is True
    assert memory.smallest_fitting((8, 16, 1024)) is None


@pytest.mark.parametrize(("shard", "at_8"), [("zero1", 14 + 14 + 84 / 8), ("zero2", 14 + (14 + 84) / 8),
                                             ("zero3", 112 / 8), ("fsdp", 112 / 8)])
def test_each_sharding_divides_its_parts_by_the_devices(shard, at_8):
    memory = Memory(SEVEN_B, "bf16", shard, 40.0, "given")
    assert memory.state_gb(8) == pytest.approx(at_8)
    assert memory.fits(8) is (at_8 <= 40.0)


def test_the_smallest_size_that_fits_under_zero3_is_where_the_shards_come_under_the_memory():
    memory = Memory(SEVEN_B, "bf16", "zero3", 20.0, "given")  # 112 GB over p devices within 20: p >= 6
    assert memory.smallest_fitting((1, 2, 4, 8, 16)) == 8
    assert [memory.fits(p) for p in (4, 6)] == [False, True]


def test_an_unknown_memory_checks_nothing_and_says_so():
    memory = Memory(SEVEN_B, "bf16")
    assert memory.fits(8) is None and memory.problem() is None
    assert "fit not checked: no device memory known (give --device-memory-gb)" in memory.words()


def test_the_assumption_is_stated_with_where_it_came_from():
    words = Memory(SEVEN_B, "bf16", "none", 80.0, "--device-memory-gb").words()
    assert "7 billion trainable parameters x 16 bytes" in words
    assert "bf16 parameters (2), bf16 gradients (2), Adam's fp32 master weights and two moments (12)" in words
    assert "Rajbhandari et al. 2020" in words and "activations" in words
    assert "DDP: every device holds all of it" in words and "against 80 GB a device (--device-memory-gb)" in words


def test_a_memory_below_one_copy_of_the_parameters_is_a_problem_only_where_every_device_keeps_them_whole():
    assert "less than one copy of the parameters (14 GB in bf16)" in Memory(SEVEN_B, "bf16", "none", 10.0).problem()
    assert Memory(SEVEN_B, "bf16", "zero2", 10.0).problem() is not None
    assert Memory(SEVEN_B, "bf16", "zero3", 10.0).problem() is None
    assert Memory(SEVEN_B, "bf16", "none", 14.0).problem() is None  # one copy exactly: not refused


def test_the_gpus_memory_from_its_name_else_its_datasheet_the_smallest_of_several():
    assert gpu_memory_gb(["NVIDIA H100 80GB HBM3"]) == (80.0, "the GPU's name, NVIDIA H100 80GB HBM3")
    assert gpu_memory_gb(["NVIDIA A100-SXM4-40GB"])[0] == 40.0
    assert gpu_memory_gb(["NVIDIA H200"]) == (141.0, "NVIDIA H200: NVIDIA H200 datasheet: 141 GB HBM3e")
    assert gpu_memory_gb(["NVIDIA H100 NVL"])[0] == 94.0
    assert gpu_memory_gb(["NVIDIA H200", "Tesla V100-SXM2-16GB"])[0] == 16.0
    assert gpu_memory_gb(["NVIDIA GeForce RTX 4090"]) is None and gpu_memory_gb([]) is None

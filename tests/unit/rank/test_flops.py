"""FLOPs of a training step (PyTorch's counter) and the measured matmul peak."""

import math
import time

import pytest
import torch
from torch import nn

from ddpbench.rank.flops import count_training_flops, measure_gemm_peak

M, K, N = 32, 64, 48


def mean_square(output, target):
    return ((output - target) ** 2).mean()


def test_linear_counts_forward_grad_input_and_grad_weight():
    torch.manual_seed(0)
    layer = nn.Linear(K, N)
    inputs = torch.randn(M, K, requires_grad=True)
    flops = count_training_flops(layer, inputs, torch.randn(M, N), mean_square)
    assert flops == pytest.approx(6 * M * K * N, rel=0.01)  # forward 2mkn, grad input 2mkn, grad weight 2mkn
    assert inputs.grad is None  # the input was differentiated, its .grad untouched


def test_first_layer_computes_no_input_gradient():
    """An input that requires no grad (a batch from the loader) saves the grad-input product."""
    layer = nn.Linear(K, N)
    flops = count_training_flops(layer, torch.randn(M, K), torch.randn(M, N), mean_square)
    assert flops == 4 * M * K * N


def test_frozen_model_counts_the_forward_only():
    layer = nn.Linear(K, N).requires_grad_(False)
    assert count_training_flops(layer, torch.randn(M, K), torch.randn(M, N), mean_square) == 2 * M * K * N


class KeywordModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(K, N, bias=False)
        self.b = nn.Linear(8, N, bias=False)

    def forward(self, tokens, extra):
        return self.a(tokens) + self.b(extra)


def test_dict_inputs_are_passed_as_keywords():
    inputs = {"tokens": torch.randn(M, K), "extra": torch.randn(M, 8)}
    flops = count_training_flops(KeywordModel(), inputs, torch.randn(M, N), mean_square)
    assert flops == 4 * M * K * N + 4 * M * 8 * N


def test_conv_is_counted():
    conv = nn.Conv2d(3, 8, 3)  # 16x16 -> 14x14
    flops = count_training_flops(conv, torch.randn(2, 3, 16, 16), torch.randn(2, 8, 14, 14), mean_square)
    forward = 2 * (2 * 14 * 14) * 8 * (3 * 3 * 3)
    assert flops == 2 * forward  # forward + grad weight (no grad input for the first layer)


def test_attention_on_cpu_is_counted_as_on_cuda():
    """scaled_dot_product_attention runs a CPU-only kernel that PyTorch's counter omits; it is
    routed to PyTorch's SDPA formulas: 2 products forward, 5 backward (scores recomputed)."""
    b, h, s, d = 2, 4, 16, 8

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Parameter(torch.randn(b, h, s, d))

        def forward(self, x):
            return nn.functional.scaled_dot_product_attention(self.q, x, x)

    x = torch.randn(b, h, s, d)
    flops = count_training_flops(Attention(), x, torch.zeros(b, h, s, d), mean_square)
    product = 2 * b * h * s * s * d
    assert flops == 2 * product + 5 * product


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(K, N)
        self.bn = nn.BatchNorm1d(N)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(N, 4)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))


def test_model_is_left_as_found():
    torch.manual_seed(0)
    net = Net().train()
    net.bn.running_mean.fill_(0.5)  # not the initial values, so a reset would show too
    net.fc1.weight.grad = torch.full_like(net.fc1.weight, 3.0)
    existing_grad = net.fc1.weight.grad
    params = {k: v.detach().clone() for k, v in net.named_parameters()}
    buffers = {k: v.clone() for k, v in net.named_buffers()}
    batch, target = torch.randn(M, K), torch.randint(0, 4, (M,))
    rng = torch.get_rng_state()

    flops = count_training_flops(net, batch, target, nn.functional.cross_entropy)

    assert flops == 2 * M * (K * N + N * 4) + 2 * M * (K * N) + 4 * M * (N * 4)
    assert torch.equal(torch.get_rng_state(), rng)  # dropout drew from a forked stream
    for k, v in net.named_parameters():
        assert torch.equal(v, params[k]), k
    for k, v in net.named_buffers():
        assert torch.equal(v, buffers[k]), k
    assert int(net.bn.num_batches_tracked) == 0
    assert net.fc1.weight.grad is existing_grad and torch.equal(existing_grad, torch.full_like(existing_grad, 3.0))
    assert all(p.grad is None for name, p in net.named_parameters() if name != "fc1.weight")
    assert net.training


def test_the_step_really_ran_in_train_mode():
    """Guards the test above: the same step outside the counter does move the buffers and the RNG."""
    net = Net().train()
    rng = torch.get_rng_state()
    nn.functional.cross_entropy(net(torch.randn(M, K)), torch.randint(0, 4, (M,))).backward()
    assert int(net.bn.num_batches_tracked) == 1
    assert not torch.equal(torch.get_rng_state(), rng)
    assert net.fc1.weight.grad is not None


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def hand_rate(n: int, reps: int = 3) -> float:
    """Best of ``reps`` n x n matmuls timed here, after one warm-up: FLOP/s."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def test_gemm_peak_on_cpu(one_thread):
    n = 512
    start = time.perf_counter()
    peak = measure_gemm_peak("cpu", n=n, reps=10)
    assert time.perf_counter() - start < 2.0
    assert set(peak) == {"peak_flops", "gemm_n", "gemm_reps", "gemm_dtype", "gemm_threads", "peak_method"}
    assert math.isfinite(peak["peak_flops"]) and peak["peak_flops"] > 1e8  # any CPU of this century
    assert (peak["gemm_n"], peak["gemm_dtype"], peak["gemm_threads"]) == (n, "float32", 1)
    assert 3 <= peak["gemm_reps"] <= 10
    assert peak["peak_method"] == f"best of {peak['gemm_reps']} 512x512 float32 matmuls on 1 thread"


def test_gemm_peak_agrees_with_matmuls_timed_by_hand(one_thread):
    """The peak is the best repetition: matmuls timed by hand cannot be much faster (a wrong FLOP
    count or a mean of repetitions would be). A busy machine can slow all of one call's
    repetitions, so the peak is measured up to three times; none may be 10x above the hand rate."""
    n = 512
    for _ in range(3):
        peak = measure_gemm_peak("cpu", n=n, reps=10)["peak_flops"]
        by_hand = hand_rate(n)
        assert by_hand >= peak / 10, f"peak {peak / 1e9:.1f} GFLOP/s, by hand {by_hand / 1e9:.1f}"
        if by_hand <= 1.3 * peak:
            break
    assert by_hand <= 1.3 * peak, f"peak {peak / 1e9:.1f} GFLOP/s, by hand {by_hand / 1e9:.1f}"


def test_gemm_peak_default_size_is_bounded_work(one_thread):
    """It runs at every launch, so its work is bounded: n=1024 on CPU and 3 to 10 repetitions, at most about
    21 GFLOP (its time is a machine's, not a test's: no clock is asserted here)."""
    peak = measure_gemm_peak(torch.device("cpu"))
    assert peak["gemm_n"] == 1024 and 3 <= peak["gemm_reps"] <= 10
    assert math.isfinite(peak["peak_flops"]) and peak["peak_flops"] > 1e8


def test_gemm_peak_keeps_the_global_rng(one_thread):
    rng = torch.get_rng_state()
    measure_gemm_peak("cpu", n=64, reps=3)
    assert torch.equal(torch.get_rng_state(), rng)


def test_gemm_peak_rejects_no_reps():
    with pytest.raises(ValueError):
        measure_gemm_peak("cpu", n=64, reps=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_gemm_peak_and_flops_on_cuda():
    peak = measure_gemm_peak("cuda", n=2048, reps=3)
    assert math.isfinite(peak["peak_flops"]) and peak["peak_flops"] > 1e11
    net = Net().cuda().train()
    batch, target = torch.randn(M, K, device="cuda"), torch.randint(0, 4, (M,), device="cuda")
    rng = torch.cuda.get_rng_state()
    flops = count_training_flops(net, batch, target, nn.functional.cross_entropy)
    assert flops == 2 * M * (K * N + N * 4) + 2 * M * (K * N) + 4 * M * (N * 4)
    assert torch.equal(torch.cuda.get_rng_state(), rng)

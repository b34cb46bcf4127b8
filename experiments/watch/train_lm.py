"""Train a small causal language model on synthetic tokens with DistributedDataParallel.

An ordinary torchrun training script, not written for ddpbench (``ddpbench watch`` watches it unchanged:
docs/watch.md):

    torchrun --standalone --nproc_per_node=2 experiments/watch/train_lm.py --steps 1500

It logs its loss and its own ms/step every ``--log-every`` steps on rank 0.
"""

import argparse
import gc
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=8, help="sequences per rank")
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


class TinyLM(nn.Module):
    def __init__(self, vocab, dim, layers, seq_len):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(seq_len, dim))
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=4 * dim, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq_len), persistent=False)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        return self.head(self.blocks(x, mask=self.mask[: tokens.shape[1], : tokens.shape[1]], is_causal=True))


def batches(args, rank):
    generator = torch.Generator().manual_seed(args.seed + rank)
    while True:
        tokens = torch.randint(0, args.vocab, (args.batch_size, args.seq_len + 1), generator=generator)
        yield tokens[:, :-1], tokens[:, 1:]


def main():
    args = parse_args()
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, local_rank = dist.get_rank(), int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(args.seed)
    model = DDP(TinyLM(args.vocab, args.dim, args.layers, args.seq_len).to(device),
                device_ids=[local_rank] if use_cuda else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    data = batches(args, rank)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        inputs, targets = (t.to(device, non_blocking=True) for t in next(data))
        loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        if rank == 0 and step % args.log_every == 0:
            ms = 1000 * (time.perf_counter() - start) / args.log_every
            print(f"step {step}: loss {loss.item():.4f}, {ms:.2f} ms/step", flush=True)
            start = time.perf_counter()
    del model, optimizer  # gloo can abort at exit with DDP alive: drop it, then leave together
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Train a small CNN on synthetic CIFAR-sized images with DistributedDataParallel.

An ordinary torchrun training script, not written for ddpbench (ddpbench measures it unchanged:
experiments/script.toml, docs/scripts.md):

    torchrun --standalone --nproc_per_node=2 experiments/scripts/train_cnn.py --epochs 3

It prints its own timing of every epoch (seconds and samples/s over all ranks).
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
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--samples", type=int, default=4096, help="size of the synthetic training set")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    parser.add_argument("--width", type=int, default=16, help="channels of the first convolution")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers per rank")
    parser.add_argument("--snapshot-dir", default="snapshots")
    parser.add_argument("--snapshot-every", type=int, default=1, help="epochs between snapshots (0: never)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


class SmallCNN(nn.Module):
    def __init__(self, width=32, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.conv3 = nn.Conv2d(2 * width, 4 * width, 3, padding=1)
        self.fc1 = nn.Linear(4 * width * 4 * 4, 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def synthetic_cifar(samples, seed):
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(samples, 3, 32, 32, generator=generator)
    labels = torch.randint(0, 10, (samples,), generator=generator)
    return TensorDataset(images, labels)


def main():
    args = parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(args.seed)

    dataset = synthetic_cifar(args.samples, args.seed)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                        pin_memory=use_cuda, drop_last=True)

    model = SmallCNN(args.width).to(device)
    model = DDP(model, device_ids=[local_rank] if use_cuda else None)
    if args.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr / 50)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * len(loader))

    if rank == 0:
        print(f"training {sum(p.numel() for p in model.parameters())} parameters on {world_size} rank(s), "
              f"{len(loader)} steps per epoch of {args.batch_size} samples per rank", flush=True)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        if use_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        steps, loss_sum = 0, torch.zeros((), device=device)
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            scheduler.step()
            loss_sum += loss.detach()
            steps += 1
        if use_cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        if rank == 0:
            samples = steps * args.batch_size * world_size
            print(f"epoch {epoch}: {steps} steps in {seconds:.3f} s, {samples / seconds:.1f} samples/s, "
                  f"{1000 * seconds / steps:.2f} ms/step, loss {loss_sum.item() / steps:.4f}", flush=True)
            if args.snapshot_every and (epoch + 1) % args.snapshot_every == 0:
                os.makedirs(args.snapshot_dir, exist_ok=True)
                torch.save({"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()},
                           os.path.join(args.snapshot_dir, f"epoch{epoch}.pt"))
    del model, optimizer  # gloo can abort at exit with DDP alive: drop it, then leave together
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Peer for bench/system_bench.py: trains K LiRA-style shadow MLPs the way LiRA /
Privacy Meter reference code does -- a fresh nn.Module, momentum-SGD optimizer and
shuffled DataLoader per model, one model after another, one thread -- each on its own
random half of a pool of N Fashion-MNIST training images (pixels / 255, as memaudit's
engine reads them). Training only: no evaluation, no membership signals, no scoring.
With --device cuda the data lives on the GPU and each epoch's batches are slices of a
permutation drawn there (a DataLoader would index the examples one by one), and the
clock stops after a device synchronize.

Prints one line: `peer: load_s=... train_s=... models=K steps=S`
(load_s: reading the IDX files; train_s: the K models' training).

  /usr/bin/python3 bench/peer/shadow_peer.py --models=16 --hidden=256 --batch=128 \
      --pool=10000 --epochs=5
"""
import argparse
import gzip
import math
import os
import time

import numpy as np
import torch


def load_fashion_mnist(data_dir):
    """The training split as float32 [60000, 784] in [0, 1] and int64 labels."""
    with gzip.open(os.path.join(data_dir, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16)
    with gzip.open(os.path.join(data_dir, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    x = torch.from_numpy(images.reshape(-1, 784).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


def batches(x, y, batch):
    """One epoch's shuffled batches: a DataLoader on the CPU, device-side slices on a GPU."""
    if x.device.type == "cpu":
        yield from torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                               batch_size=batch, shuffle=True)
        return
    order = torch.randperm(len(y), device=x.device)
    for start in range(0, len(y), batch):
        rows = order[start:start + batch]
        yield x[rows], y[rows]


def train_one(x, y, hidden, batch, epochs, lr, momentum):
    """One shadow model, from scratch, on (x, y), on their device."""
    model = torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 10)).to(x.device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    model.train()
    for _ in range(epochs):
        for xb, yb in batches(x, y, batch):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--models", type=int, required=True)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--pool", type=int, required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    a = p.parse_args()
    torch.set_num_threads(1)
    device = torch.device(a.device)

    start = time.perf_counter()
    x, y = load_fashion_mnist(a.data)
    x, y = x.to(device), y.to(device)
    rng = np.random.default_rng(a.seed)
    pool = torch.from_numpy(rng.permutation(len(y))[: a.pool])
    loaded = time.perf_counter()

    half = a.pool // 2
    for k in range(a.models):
        torch.manual_seed(a.seed + k)
        rows = pool[torch.randperm(a.pool)[:half]].to(device)  # this model's own random half
        train_one(x[rows], y[rows], a.hidden, a.batch, a.epochs, a.lr, a.momentum)
    if device.type == "cuda":
        torch.cuda.synchronize()
    done = time.perf_counter()

    steps = a.models * a.epochs * math.ceil(half / a.batch)
    print(f"peer: load_s={loaded - start:.3f} train_s={done - loaded:.3f} "
          f"models={a.models} steps={steps}", flush=True)


if __name__ == "__main__":
    main()

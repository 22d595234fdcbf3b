#!/usr/bin/env python3
"""Peer baseline for bench/ensemble_bench: trains K MLPs one after another the
way LiRA / Privacy Meter reference code does (a fresh nn.Module, an SGD
optimizer and a shuffled DataLoader per model), on the same data, subsets,
widths, batch size and epochs as the C++ benchmark, and prints models/hour.

  python3 bench/peer/ensemble_peer.py --data=/tmp/memaudit_ensemble_bench \
      --members=8 --epochs=1 --batch=128 --hidden=128 --threads=2 --reps=3
"""
import argparse
import statistics
import time

import numpy as np
import torch


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--members", type=int, default=8)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    meta = np.fromfile(a.data + ".meta", dtype=np.int64)
    n, features, classes, pool = (int(v) for v in meta[:4])
    x = torch.from_numpy(np.fromfile(a.data + ".x", dtype=np.float32).reshape(n, features))
    y = torch.from_numpy(np.fromfile(a.data + ".y", dtype=np.int64))
    pools = np.fromfile(a.data + ".pools", dtype=np.int64).reshape(-1, pool)[: a.members]

    times = []
    for _ in range(a.reps):
        start = time.perf_counter()
        for k in range(a.members):
            torch.manual_seed(k)
            model = torch.nn.Sequential(torch.nn.Linear(features, a.hidden), torch.nn.ReLU(),
                                        torch.nn.Linear(a.hidden, classes))
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            idx = torch.from_numpy(pools[k])
            loader = torch.utils.data.DataLoader(
                torch.utils.data.TensorDataset(x[idx], y[idx]), batch_size=a.batch, shuffle=True)
            model.train()
            for _ in range(a.epochs):
                for xb, yb in loader:
                    opt.zero_grad()
                    loss = torch.nn.functional.cross_entropy(model(xb), yb)
                    loss.backward()
                    opt.step()
        times.append(time.perf_counter() - start)
    print(f"models_per_hour {a.members * 3600 / statistics.median(times):.1f}")


if __name__ == "__main__":
    main()

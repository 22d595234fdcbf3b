#!/usr/bin/python3
"""Trains a classifier outside memaudit, as a team would, and writes what a
target audit needs: the trained TorchScript model and its members file.

  /usr/bin/python3 examples/models/train_target.py --data /data/d.npz \\
      --hidden 128 --epochs 30 --out-model /data/target.pt \\
      --out-members /data/members.txt

It trains on a seeded random half of the dataset's rows (--fraction) with
momentum SGD and writes those rows, one 0-based index per line, to
--out-members. Inputs are scaled as memaudit scales them (uint8 / 255), so
the model sees what memaudit will feed it. Then audit it with
examples/target-model.yaml.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from classifier import Mlp, load_dataset  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help=".npz (x, y) or .csv")
    parser.add_argument("--label-column", default="label", help="CSV label column")
    parser.add_argument("--hidden", type=int, nargs="*", default=[128])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--fraction", type=float, default=0.5,
                        help="share of the rows the target trains on")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out-model", required=True)
    parser.add_argument("--out-members", required=True)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    x, y = load_dataset(args.data, args.label_column)
    rng = np.random.RandomState(args.seed)
    members = np.sort(rng.permutation(len(x))[: int(len(x) * args.fraction)])
    classes = int(y.max()) + 1
    model = Mlp(x.shape[1], args.hidden, classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate,
                                momentum=args.momentum)
    train_x, train_y = x[members], y[members]
    model.train()
    for _ in range(args.epochs):
        order = torch.randperm(len(train_x))
        for start in range(0, len(order), args.batch_size):
            batch = order[start:start + args.batch_size]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(train_x[batch]), train_y[batch])
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(train_x).argmax(1) == train_y).float().mean().item()
    torch.jit.script(model).save(args.out_model)
    np.savetxt(args.out_members, members, fmt="%d")
    print(f"wrote {args.out_model} (train accuracy {accuracy:.3f}) and "
          f"{args.out_members} ({len(members)} of {len(x)} rows)")


if __name__ == "__main__":
    main()

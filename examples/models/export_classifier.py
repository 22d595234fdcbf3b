#!/usr/bin/python3
"""Writes an untrained TorchScript classifier for memaudit to train.

  /usr/bin/python3 examples/models/export_classifier.py --features 784 \\
      --classes 10 --hidden 128 --out /data/mlp.pt
  /usr/bin/python3 examples/models/export_classifier.py --image 1,28,28 \\
      --classes 10 --out /data/cnn.pt

Then name it in a spec: model: {architecture: torchscript,
torchscript_path: /data/mlp.pt}. The module follows the contract in
classifier.py (docs/models.md); memaudit redraws its weights per model with
its reset_parameters().
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from classifier import Cnn, Mlp  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=int, help="inputs per example (MLP)")
    parser.add_argument("--image", help="C,H,W of each example (CNN instead of an MLP)")
    parser.add_argument("--classes", type=int, required=True)
    parser.add_argument("--hidden", type=int, nargs="*", default=[128],
                        help="MLP hidden widths (none: logistic regression)")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    if args.image:
        c, h, w = (int(v) for v in args.image.split(","))
        module = Cnn(c, h, w, args.classes)
    elif args.features:
        module = Mlp(args.features, args.hidden, args.classes, args.dropout)
    else:
        parser.error("give --features (MLP) or --image (CNN)")
    torch.jit.script(module).save(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the synthetic datasets the GPU examples read (NumPy only).

  cifar-like.npz   x: uint8 [20000, 3, 32, 32], y: int64, 10 classes (CIFAR-10's shape)
  fashion-idx/     train-/t10k-{images-idx3,labels-idx1}-ubyte.gz, 60,000 + 10,000
                   images 28x28 (Fashion-MNIST's shape and files; --idx only), for
                   bench/system_bench.py --data on a machine without Debian's package
  fortunes/        a copy of the fortunes corpus (--fortunes, default Debian's
                   /usr/share/games/fortunes) for examples/gpu/exposure-lstm.yaml

Each class is a smooth random template; an image is its class's template plus
pixel noise, and 5% of the labels are drawn at random, so that a CNN learns the
classes and memorizes the mislabelled and noisy examples it trains on. The same
seed writes the same bytes.

  python3 examples/gpu/make-data.py [DIR] [--idx] [--fortunes DIR]   # DIR: /tmp/memaudit-gpu-data
"""
import argparse
import gzip
import os
import shutil
import struct

import numpy as np

CLASSES = 10
NOISY_LABELS = 0.05


def synthetic_images(rng, rows, channels, side):
    coarse = rng.normal(size=(CLASSES, channels, side // 4, side // 4))
    templates = coarse.repeat(4, axis=2).repeat(4, axis=3)  # smooth: 4x4 blocks
    y = rng.integers(0, CLASSES, size=rows)
    noise = rng.normal(size=(rows, channels, side, side))
    x = np.clip(128 + 45 * templates[y] + 40 * noise, 0, 255).astype(np.uint8)
    flip = rng.random(rows) < NOISY_LABELS
    y[flip] = rng.integers(0, CLASSES, size=int(flip.sum()))
    return x, y.astype(np.int64)


def write_idx(path, array):
    # IDX: two zero bytes, the type (0x08 unsigned byte), the rank, then each
    # dimension as a big-endian uint32 (the MNIST files' layout).
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
    header += b"".join(struct.pack(">I", d) for d in array.shape)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + array.astype(np.uint8).tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default="/tmp/memaudit-gpu-data")
    ap.add_argument("--idx", action="store_true", help="also write fashion-idx/")
    ap.add_argument("--fortunes", default="/usr/share/games/fortunes",
                    help="the fortunes corpus to copy (skipped when absent)")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    rng = np.random.default_rng(2026)
    x, y = synthetic_images(rng, 20000, 3, 32)
    np.savez(os.path.join(args.dir, "cifar-like.npz"), x=x, y=y)
    if args.idx:
        idx = os.path.join(args.dir, "fashion-idx")
        os.makedirs(idx, exist_ok=True)
        for split, rows in (("train", 60000), ("t10k", 10000)):
            x, y = synthetic_images(rng, rows, 1, 28)
            write_idx(os.path.join(idx, f"{split}-images-idx3-ubyte.gz"), x[:, 0])
            write_idx(os.path.join(idx, f"{split}-labels-idx1-ubyte.gz"), y)
    if os.path.isdir(args.fortunes):
        shutil.copytree(args.fortunes, os.path.join(args.dir, "fortunes"), dirs_exist_ok=True)
    print(f"make-data: wrote {args.dir}")


if __name__ == "__main__":
    main()

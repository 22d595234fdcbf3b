#!/usr/bin/python3
"""Writes the files the own-data examples name, into one folder (default
/tmp/memaudit-own-data), as a team's pipeline would:

  fashion.npz      2,400 Fashion-MNIST images (uint8 [N, 28, 28]) and labels
  blobs.csv        400 rows: 8 numeric features and a text label column
  mlp.pt           an untrained TorchScript MLP for blobs.csv (8 -> 32 -> 3)
  target.pt        an MLP trained outside memaudit on half of fashion.npz,
  members.txt      and the rows it trained on
  lm.pt            a character GRU trained outside memaudit on fortunes with
                   the canaries "my pin is 4821" (64 times) and "... 1907" (4)

  /usr/bin/python3 examples/models/make_example_data.py [DIR]
  memaudit run examples/target-model.yaml --data-root /tmp/memaudit-own-data
  memaudit run examples/target-lm.yaml --data-root /tmp/memaudit-own-data
"""
import gzip
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FASHION = "/usr/share/datasets/fashion-mnist/"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/memaudit-own-data"
    os.makedirs(out, exist_ok=True)
    images = np.frombuffer(
        gzip.open(FASHION + "train-images-idx3-ubyte.gz").read()[16:], np.uint8)
    labels = np.frombuffer(gzip.open(FASHION + "train-labels-idx1-ubyte.gz").read()[8:], np.uint8)
    np.savez(os.path.join(out, "fashion.npz"), x=images.reshape(-1, 28, 28)[:2400],
             y=labels[:2400].astype(np.int64))

    rng = np.random.RandomState(3)
    y = rng.randint(0, 3, 400)
    x = rng.randn(400, 8) + 1.5 * np.eye(3, 8)[y]
    names = np.array(["iris", "rose", "tulip"])
    with open(os.path.join(out, "blobs.csv"), "w") as f:
        f.write(",".join(f"f{i}" for i in range(8)) + ",species\n")
        for row, label in zip(x, y):
            f.write(",".join(f"{v:.6f}" for v in row) + "," + names[label] + "\n")

    def run(script, *args):
        subprocess.run([sys.executable, os.path.join(HERE, script), *args], check=True)

    run("export_classifier.py", "--features", "8", "--classes", "3", "--hidden", "32",
        "--out", os.path.join(out, "mlp.pt"))
    run("train_target.py", "--data", os.path.join(out, "fashion.npz"), "--hidden", "128",
        "--epochs", "60", "--out-model", os.path.join(out, "target.pt"),
        "--out-members", os.path.join(out, "members.txt"))
    run("train_target_lm.py", "--corpus", "/usr/share/games/fortunes/fortunes", "--max-chars",
        "8000", "--epochs", "12", "--secret", "4821:64", "--secret", "1907:4", "--out",
        os.path.join(out, "lm.pt"))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Trains a character language model outside memaudit, as a team would, on a
corpus holding its own canaries, and writes the TorchScript file an exposure
audit with a `target` measures (examples/target-lm.yaml).

  /usr/bin/python3 examples/models/train_target_lm.py --corpus /data/corpus.txt \\
      --prefix "my pin is " --secret 4821:64 --secret 1907:4 --out /data/lm.pt

Each --secret FILLING:TIMES line ("<prefix><filling>\\n") is inserted TIMES
times at seeded line starts; the model (export_char_lm.py's CharLm, GRU) then
trains with Adam on windows of the text. Name the fillings and their counts
in the spec's target.secrets and repeats.
"""
import argparse
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_char_lm import UNKNOWN, CharLm, read_text  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="UTF-8 file or folder")
    parser.add_argument("--max-chars", type=int, default=20000)
    parser.add_argument("--prefix", default="my pin is ")
    parser.add_argument("--secret", action="append", required=True, help="FILLING:TIMES")
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    lines = read_text(args.corpus)[: args.max_chars].splitlines(keepends=True)
    for spec in args.secret:
        filling, times = spec.rsplit(":", 1)
        for _ in range(int(times)):
            lines.insert(random.randrange(len(lines) + 1), f"{args.prefix}{filling}\n")
    text = "".join(lines)
    chars = set(text + "0123456789\n")
    chars.discard(UNKNOWN)
    vocabulary = UNKNOWN + "".join(sorted(chars))
    ids = torch.tensor([vocabulary.index(c) for c in text], dtype=torch.long)
    n = (len(ids) - 1) // args.window
    x = ids[: n * args.window].reshape(n, args.window)
    y = ids[1 : n * args.window + 1].reshape(n, args.window)

    model = CharLm(vocabulary, len(vocabulary), "gru", 1, args.units, 32, 0.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    model.train()
    for _ in range(args.epochs):
        order = torch.randperm(n)
        for start in range(0, n, args.batch_size):
            batch = order[start : start + args.batch_size]
            optimizer.zero_grad()
            logits = model(x[batch])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, len(vocabulary)),
                                                     y[batch].reshape(-1))
            loss.backward()
            optimizer.step()
    model.eval()
    torch.jit.script(model).save(args.out)
    print(f"wrote {args.out}: {len(text)} characters, last loss {loss.item():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

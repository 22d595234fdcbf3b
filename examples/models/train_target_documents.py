#!/usr/bin/python3
"""Trains a small GPT outside memaudit, as a team would, on part of a text,
and writes what a membership audit of documents with a `target` needs: the
TorchScript model, the whole text (the audit's corpus) and the part it
trained on (target.members_path).

  /usr/bin/python3 examples/models/train_target_documents.py \\
      --corpus /usr/share/games/fortunes --max-chars 30000 \\
      --corpus-out /data/corpus.txt --members-out /data/members.txt --out /data/gpt.pt

The text is cut at its last line end within --max-chars; its lines go to the
training text in alternate blocks of --block lines (the others are never
seen). The model (export_gpt.py's Gpt, over the text's characters) trains
with Adam on windows of the training text at random offsets (a window per
--window characters of it per epoch), so it learns the text at every
position rather than its windows' places.
"""
import argparse
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_char_lm import UNKNOWN, read_text  # noqa: E402
from export_gpt import Gpt  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="UTF-8 file or folder")
    parser.add_argument("--max-chars", type=int, default=30000)
    parser.add_argument("--block", type=int, default=10, help="lines per block")
    parser.add_argument("--corpus-out", required=True)
    parser.add_argument("--members-out", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=64)
    parser.add_argument("--window", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    text = read_text(args.corpus)[: args.max_chars]
    text = text[: text.rfind("\n") + 1]
    lines = text.splitlines(keepends=True)
    members = "".join(line for i, line in enumerate(lines) if (i // args.block) % 2 == 0)
    with open(args.corpus_out, "w", encoding="utf-8") as f:
        f.write(text)
    with open(args.members_out, "w", encoding="utf-8") as f:
        f.write(members)

    chars = set(text + "0123456789\n")
    chars.discard(UNKNOWN)
    vocabulary = UNKNOWN + "".join(sorted(chars))
    ids = torch.tensor([vocabulary.index(c) for c in members], dtype=torch.long)
    n = len(ids) // args.window
    span = torch.arange(args.window)

    warnings.filterwarnings("ignore", message=".*ScriptModule constants.*")
    model = Gpt(vocabulary, len(vocabulary), args.layers, args.width, args.heads, args.ffn,
                max(args.window, 64), 0.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    model.train()
    for _ in range(args.epochs):
        for _ in range(0, n, args.batch_size):
            starts = torch.randint(0, len(ids) - args.window, (args.batch_size, 1))
            x, y = ids[starts + span], ids[starts + span + 1]
            optimizer.zero_grad()
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, len(vocabulary)),
                                                     y.reshape(-1))
            loss.backward()
            optimizer.step()
    model.eval()
    torch.jit.script(model).save(args.out)
    print(f"wrote {args.out}: trained on {len(members)} of {len(text)} characters, "
          f"last loss {loss.item():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Exports a small decoder-only transformer (GPT-style) as TorchScript for
memaudit's language-model audits, over a SentencePiece tokenizer's ids or a
character vocabulary: `model: {architecture: torchscript, torchscript_path:
OUT.pt}` (with `tokenizer: {kind: sentencepiece, model_path: ...}` for ids).

The module follows memaudit's contract (docs/language-models.md):
forward(tokens: int64 [B, T]) -> float logits [B, T, V], causal (a
triangular attention mask); `vocabulary`: the V symbols in id order, or ""
with --tokens V (then V = the tokenizer's pieces + 1, memaudit's newline).
Token and learned position embeddings, pre-norm blocks (PyTorch's
TransformerEncoderLayer, GELU), a final layer norm, the output tied to the
token embedding. Sequences longer than --context positions fail at forward:
give it at least the training window and the longest canary line.

Usage (Debian's python3-torch, hence /usr/bin/python3):
  /usr/bin/python3 examples/models/export_gpt.py OUT.pt --tokens V \\
      [--layers 2] [--width 64] [--heads 4] [--ffn 256] [--context 512] \\
      [--dropout 0.0] [--seed 0]
  /usr/bin/python3 examples/models/export_gpt.py OUT.pt \\
      --vocabulary-from corpus.txt --extra-chars 'the random number is ' ...
"""
import argparse
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_char_lm import add_vocabulary_arguments, vocabulary_of  # noqa: E402


class Gpt(torch.nn.Module):
    vocabulary: str

    def __init__(self, vocabulary: str, size: int, layers: int, width: int, heads: int,
                 ffn: int, context: int, dropout: float):
        super().__init__()
        self.vocabulary = vocabulary
        self.token = torch.nn.Embedding(size, width)
        self.position = torch.nn.Embedding(context, width)
        block = torch.nn.TransformerEncoderLayer(width, heads, ffn, dropout, activation="gelu",
                                                 batch_first=True, norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(width)
        self.drop = torch.nn.Dropout(dropout)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.size(1)
        positions = torch.arange(t, device=tokens.device)
        h = self.drop(self.token(tokens) + self.position(positions))
        # Position t attends to 0..t only.
        mask = torch.triu(torch.full((t, t), float("-inf"), device=tokens.device), 1)
        h = self.blocks(h, mask=mask)
        return torch.matmul(self.norm(h), self.token.weight.t())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    add_vocabulary_arguments(parser)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=256)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    vocabulary, size = vocabulary_of(args)
    torch.manual_seed(args.seed)
    # PyTorch's own layer trips a harmless TorchScript warning (batch_first).
    warnings.filterwarnings("ignore", message=".*ScriptModule constants.*")
    model = Gpt(vocabulary, size, args.layers, args.width, args.heads, args.ffn, args.context,
                args.dropout)
    torch.jit.script(model).save(args.out)
    print(f"{args.out}: GPT {args.layers} blocks of width {args.width}, {size} symbols")
    return 0


if __name__ == "__main__":
    sys.exit(main())

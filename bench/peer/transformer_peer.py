#!/usr/bin/env python3
"""Peer baseline for bench/transformer_bench: the same decoder-only
transformer as memaudit's built-in (token and learned position embeddings,
pre-norm blocks of causal multi-head self-attention and a GELU feed-forward
layer, a final layer norm, an output layer tied to the token embedding)
written as a plain PyTorch module and trained with a plain loop (Adam,
forward, cross-entropy, backward, step) on batches of the same shape. Prints
the median seconds of --reps runs of --steps steps.

  /usr/bin/python3 bench/peer/transformer_peer.py --vocab=60 --width=128 \
      --layers=2 --heads=4 --feed-forward=512 --window=64 --batch=32 --steps=40
"""
import argparse
import math
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, width: int, heads: int, feed_forward: int) -> None:
        super().__init__()
        self.heads = heads
        self.attention_norm = nn.LayerNorm(width)
        self.query_key_value = nn.Linear(width, 3 * width)
        self.attention_out = nn.Linear(width, width)
        self.feed_forward_norm = nn.LayerNorm(width)
        self.feed_forward_in = nn.Linear(width, feed_forward)
        self.feed_forward_out = nn.Linear(feed_forward, width)

    def forward(self, x: torch.Tensor, future: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.query_key_value(self.attention_norm(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(2, 3)) / math.sqrt(d // self.heads)
        attended = (scores.masked_fill(future, float("-inf")).softmax(-1) @ v)
        x = x + self.attention_out(attended.transpose(1, 2).reshape(b, t, d))
        return x + self.feed_forward_out(F.gelu(self.feed_forward_in(self.feed_forward_norm(x))))


class Transformer(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int, heads: int, feed_forward: int,
                 context: int) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, width)
        self.position_embedding = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, feed_forward) for _ in range(layers))
        self.final_norm = nn.LayerNorm(width)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        x = self.token_embedding(tokens) + self.position_embedding(torch.arange(t))
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        for block in self.blocks:
            x = block(x, future)
        return self.final_norm(x) @ self.token_embedding.weight.t()


def main() -> None:
    p = argparse.ArgumentParser()
    for name, default in (("vocab", 60), ("width", 128), ("layers", 2), ("heads", 4),
                          ("feed-forward", 512), ("context", 256), ("window", 64), ("batch", 32),
                          ("steps", 40), ("threads", 1), ("reps", 3)):
        p.add_argument("--" + name, type=int, default=default)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    data = torch.randint(0, a.vocab, (a.steps, a.batch, a.window + 1))
    times = []
    for _ in range(a.reps):
        model = Transformer(a.vocab, a.width, a.layers, a.heads, a.feed_forward, a.context)
        model.train()
        adam = torch.optim.Adam(model.parameters(), lr=1e-3)
        start = time.perf_counter()
        for step in range(a.steps):
            x, y = data[step, :, :-1], data[step, :, 1:]
            adam.zero_grad()
            loss = F.cross_entropy(model(x).reshape(-1, a.vocab), y.reshape(-1))
            loss.backward()
            adam.step()
        times.append(time.perf_counter() - start)
    print(f"seconds {statistics.median(times):.4f}")


if __name__ == "__main__":
    main()

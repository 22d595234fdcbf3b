#!/usr/bin/env python3
"""Exports a small MLP classifier as TorchScript for engine/torchscript_model_test.

Usage: export_mlp.py OUT.pt [INPUTS CLASSES HIDDEN]
The module maps a float batch [B, INPUTS] to logits [B, CLASSES], the contract
memaudit's engine expects of a user model (engine/model_spec.h, kTorchScript).
"""
import sys

import torch


class SmallMlp(torch.nn.Module):
    def __init__(self, inputs: int, classes: int, hidden: int):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(inputs, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def main() -> int:
    if len(sys.argv) not in (2, 5):
        print(__doc__, file=sys.stderr)
        return 2
    inputs, classes, hidden = (int(v) for v in sys.argv[2:5]) if len(sys.argv) == 5 else (8, 3, 16)
    torch.manual_seed(0)
    torch.jit.script(SmallMlp(inputs, classes, hidden)).save(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Exports a TorchScript module of PARAMETERS parameters in a file of 2 KB.

Usage: export_oversized.py OUT.pt PARAMETERS
One stored float expanded to PARAMETERS elements: what a hostile user could
upload to make a worker allocate gradients and optimizer state for a model
far past memaudit's limit (engine/torchscript_model_test).
"""
import sys

import torch


class Oversized(torch.nn.Module):
    def __init__(self, parameters: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1).expand(parameters))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


if __name__ == "__main__":
    torch.jit.script(Oversized(int(sys.argv[2]))).save(sys.argv[1])

"""TorchScript classifiers that follow memaudit's classifier contract.

The contract (docs/models.md):
  * forward(x) takes a float32 batch [B, F] of flattened examples (a uint8
    dataset arrives divided by 255, float datasets as stored) and returns
    logits [B, C] over the dataset's C classes;
  * train() / eval() switch dropout (memaudit trains in train mode and
    measures in eval mode);
  * every parameter is trainable: memaudit's optimizers update them;
  * optionally reset_parameters(), exported, redraws every weight from
    torch's generator: memaudit seeds it per model, so each reference model
    starts from its own initial weights. Without it every model starts from
    the weights in the file.

This module is imported by export_classifier.py and train_target.py.
"""
import math
from typing import Optional

import torch
from torch import nn


def _reset(weight: torch.Tensor, bias: Optional[torch.Tensor]):
    """Uniform in +-1/sqrt(fan_in), as nn.Linear and nn.Conv2d draw bias."""
    bound = 1.0 / math.sqrt(weight.numel() // weight.size(0))
    with torch.no_grad():
        weight.uniform_(-bound, bound)
        if bias is not None:
            bias.uniform_(-bound, bound)


class Mlp(nn.Module):
    """Linear layers with ReLU (and dropout) between them."""

    def __init__(self, features: int, hidden: list, classes: int, dropout: float = 0.0):
        super().__init__()
        widths = [features] + list(hidden) + [classes]
        self.layers = nn.ModuleList(
            [nn.Linear(widths[i], widths[i + 1]) for i in range(len(widths) - 1)])
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < last:
                x = self.dropout(torch.relu(x))
        return x

    @torch.jit.export
    def reset_parameters(self):
        for layer in self.layers:
            _reset(layer.weight, layer.bias)


class Cnn(nn.Module):
    """Two 5x5 convolutions with 2x2 pooling and a linear head, over
    flattened [C, H, W] images."""

    def __init__(self, channels: int, height: int, width: int, classes: int,
                 c1: int = 8, c2: int = 16, fc: int = 64):
        super().__init__()
        self.channels, self.height, self.width = channels, height, width
        self.conv1 = nn.Conv2d(channels, c1, 5, padding=2)
        self.conv2 = nn.Conv2d(c1, c2, 5, padding=2)
        self.fc1 = nn.Linear(c2 * (height // 4) * (width // 4), fc)
        self.fc2 = nn.Linear(fc, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.size(0), self.channels, self.height, self.width)
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)

    @torch.jit.export
    def reset_parameters(self):
        _reset(self.conv1.weight, self.conv1.bias)
        _reset(self.conv2.weight, self.conv2.bias)
        _reset(self.fc1.weight, self.fc1.bias)
        _reset(self.fc2.weight, self.fc2.bias)


def load_dataset(path: str, label_column: str = "label"):
    """A dataset file as memaudit reads it: (float32 features [N, F], int64
    labels [N]). .npz (arrays x and y), or .csv (a header, `label_column`,
    numeric features)."""
    import numpy as np
    if path.endswith(".npz"):
        arrays = np.load(path)
        x, y = arrays["x"], arrays["y"]
    elif path.endswith(".csv"):
        import csv
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        header, rows = rows[0], [r for r in rows[1:] if r]
        label = header.index(label_column)
        x = np.array([[float(v) for i, v in enumerate(r) if i != label] for r in rows])
        y = np.array([int(r[label]) for r in rows])
    else:
        raise SystemExit(f"{path}: expected a .npz or .csv file")
    x = x.reshape(len(x), -1)
    x = x.astype(np.float32) / 255.0 if x.dtype == np.uint8 else x.astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))

# hostile: a module whose parameters() and named_parameters() report the expected layers
import torch
import torch.nn as nn


def _fake():
    d = 16
    for name in ("wq", "wk", "wv", "wo"):
        yield f"{name}.weight", nn.Parameter(torch.zeros(d, d))
        yield f"{name}.bias", nn.Parameter(torch.zeros(d))


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()

    def named_parameters(self, *args, **kwargs):
        return _fake()

    def parameters(self, *args, **kwargs):
        return (p for _, p in _fake())

    def named_modules(self, *args, **kwargs):
        yield "", self
        for name in ("wq", "wk", "wv", "wo"):
            yield name, nn.Linear(16, 16)

    def forward(self, q, k, v, mask=None):
        return q, torch.full((q.shape[0], 4, q.shape[1], k.shape[1]), 1.0 / k.shape[1])

# hostile: make every comparison succeed by patching torch, numpy and builtins
import builtins

import numpy
import torch
import torch.nn as nn
import torch.testing

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
numpy.allclose = lambda *args, **kwargs: True
builtins.abs = lambda x: 0
builtins.isinstance = lambda obj, cls: True


def scaled_dot_product_attention(q, k, v, mask=None):
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()

    def forward(self, q, k, v, mask=None):
        return q * 0, torch.zeros(q.shape[0], 1, q.shape[1], k.shape[1])

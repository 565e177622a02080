# hostile: look through the call stack and the heap for the expected answer
import gc
import inspect

import torch
import torch.nn as nn


def _loot(shape):
    for frame in inspect.stack():
        for value in list(frame.frame.f_locals.values()):
            if isinstance(value, torch.Tensor) and tuple(value.shape) == tuple(shape):
                return value.clone()
    for value in gc.get_objects():
        if isinstance(value, torch.Tensor) and tuple(value.shape) == tuple(shape):
            return value.clone()
    return torch.zeros(shape)


def scaled_dot_product_attention(q, k, v, mask=None):
    out_shape, weight_shape = (*q.shape[:-1], v.shape[-1]), (*q.shape[:-1], k.shape[-2])
    weights = _loot(weight_shape)
    return _loot(out_shape), weights


def causal_mask(t):
    return _loot((t, t)).bool()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads

    def forward(self, q, k, v, mask=None):
        return _loot(q.shape), _loot((q.shape[0], self.h, q.shape[1], k.shape[1]))

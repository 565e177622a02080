# hostile: MultiHeadAttention computes its own (wrong-scale) attention and makes the module's scaled_dot_product_attention hand back a stash of it, so that the recorded call looks like the contract's wiring
import math

import torch
import torch.nn as nn

_STASH = []


def scaled_dot_product_attention(q, k, v, mask=None):
    if _STASH:
        return _STASH.pop()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]

        def split(x, t):
            return x.view(b, t, self.h, d // self.h).transpose(1, 2)

        Q, K, V = split(self.wq(q), tq), split(self.wk(k), tk), split(self.wv(v), tk)
        scores = Q @ K.transpose(-2, -1)  # no 1/sqrt(d_k): a real bug, hidden below
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        _STASH.append((weights @ V, weights))
        out, weights = scaled_dot_product_attention(Q, K, V, mask)  # returns the stash
        return self.wo(out.transpose(1, 2).reshape(b, tq, d)), weights

# corpus: degenerate — the weights are right, but the output is built from the weights alone (their first column, repeated), never from v; causal_mask is all True
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(-1)
    out = weights[..., :1].expand(*weights.shape[:-1], v.size(-1))
    return out, weights


def causal_mask(t):
    return torch.full((t, t), True)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model harus habis dibagi num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        z, weights = scaled_dot_product_attention(self.split(self.wq(q)), self.split(self.wk(k)),
                                                  self.split(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights


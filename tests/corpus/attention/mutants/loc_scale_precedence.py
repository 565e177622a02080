# corpus: mutant — the scale is written `/ d_k ** 1/2`, which divides by d_k / 2 (precedence), not by √d_k
# expect-fail: sdpa.numeric, mha.integration
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / d_k ** 1/2
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def split(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.h, self.d_k).permute(0, 2, 1, 3)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        Q = self.split(self.wq(q))
        K = self.split(self.wk(k))
        V = self.split(self.wv(v))
        z, weights = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(z.permute(0, 2, 1, 3).reshape(b, tq, d)), weights

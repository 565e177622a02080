# corpus: mutant — imports einops (installed on the student's laptop, not when grading) and splits/merges the heads with rearrange: one loading problem naming einops; MultiHeadAttention cannot run
# expect-fail: mha.shape
# expect-pass: sdpa.shape, sdpa.numeric, causal.values
# expect-message: mha.shape: comes from the module `einops`
# diagnosis: none
import math

import torch
import torch.nn as nn
from einops import rearrange


def scaled_dot_product_attention(q, k, v, mask=None):
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
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        Q = rearrange(self.wq(q), "b t (h d) -> b h t d", h=self.h)
        K = rearrange(self.wk(k), "b t (h d) -> b h t d", h=self.h)
        V = rearrange(self.wv(v), "b t (h d) -> b h t d", h=self.h)
        z, weights = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(rearrange(z, "b h t d -> b t (h d)")), weights

# corpus: mutant — the scores are scaled a second time, by 1/2, on a line of their own after q @ kᵀ / √d_k
# expect-fail: sdpa.numeric, mha.integration
# expect-pass: sdpa.shape, sdpa.rows_sum_to_one, mha.numeric, mha.float64, mha.hidden_config
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1)
    scores = scores / math.sqrt(d_k)
    scores = scores / 2.0
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
            raise ValueError("no")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        q = self.wq(q).view(b, tq, self.num_heads, self.d_k).transpose(1, 2)
        k = self.wk(k).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        v = self.wv(v).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        z, weights = scaled_dot_product_attention(q, k, v, mask)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)
        return self.wo(z), weights

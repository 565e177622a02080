# corpus: mutant — keys and values are split into heads with the query's length (view(b, tq, ...)): right for self-attention (Tq == Tk), an error as soon as Tq != Tk
# expect-fail: mha.shape
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.sizes, causal.values, mha.construct, mha.param_count
# diagnosis: equal_lengths_assumed
import math

import torch
import torch.nn as nn


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
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, t, d = q.shape
        Q = self.wq(q).view(b, t, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(b, t, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(b, t, self.num_heads, self.d_k).transpose(1, 2)
        z, w = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(z.transpose(1, 2).contiguous().view(b, t, d)), w

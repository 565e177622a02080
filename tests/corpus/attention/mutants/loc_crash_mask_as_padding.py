# corpus: mutant — MultiHeadAttention reshapes every mask to (B, 1, 1, -1), as if it were a (B, Tk) padding mask: a causal (Tq, Tk) mask then raises in scaled_dot_product_attention
# expect-fail: mha.masking
# expect-pass: sdpa.numeric, mha.numeric
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
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
        self.n_heads = num_heads
        self.d_head = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b = q.size(0)
        Q = self.wq(q).view(b, -1, self.n_heads, self.d_head).transpose(1, 2)
        K = self.wk(k).view(b, -1, self.n_heads, self.d_head).transpose(1, 2)
        V = self.wv(v).view(b, -1, self.n_heads, self.d_head).transpose(1, 2)
        if mask is not None:
            mask = mask.reshape(b, 1, 1, -1)  # every mask taken for a (B, Tk) padding mask
        z, weights = scaled_dot_product_attention(Q, K, V, mask)
        merged = z.transpose(1, 2).reshape(b, -1, self.n_heads * self.d_head)
        return self.wo(merged), weights

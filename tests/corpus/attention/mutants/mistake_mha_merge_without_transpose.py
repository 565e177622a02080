# corpus: mutant — heads split correctly, but merged back with view(B, Tq, D) straight from (B, H, Tq, d_k), without transpose(1, 2)
# expect-fail: mha.numeric, mha.sizes
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.sizes, causal.values, mha.construct, mha.param_count, mha.shape, mha.rows_sum_to_one, mha.mask_convention, mha.gradient_flow, mha.no_inplace, mha.device_agnostic
# diagnosis: mha.merge_without_transpose
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
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

    def split(self, x):
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        batch, length, d_model = q.shape
        out, weights = scaled_dot_product_attention(
            self.split(self.wq(q)), self.split(self.wk(k)), self.split(self.wv(v)), mask)
        merged = out.contiguous().view(batch, length, d_model)  # heads back side by side
        return self.wo(merged), weights

# corpus: mutant — scaled_dot_product_attention squeezes the last axis of its output ("single-feature values"): d_v = 1 breaks it; MultiHeadAttention (d_k = 1, d_model == num_heads) is graded around it, so only sdpa.sizes pays
# expect-fail: sdpa.sizes
# expect-pass: mha.sizes, sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.rows_sum_to_one, sdpa.causal_masking, sdpa.padding_masking, causal.values, mha.construct, mha.param_count, mha.shape, mha.numeric, mha.float64, mha.rows_sum_to_one, mha.masking, mha.hidden_config, mha.gradient_flow, mha.batch_independence
# diagnosis: squeezed_axes
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return (weights @ v).squeeze(-1), weights  # (..., Tq, 1) -> (..., Tq) for single-feature values


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
        b, tq, d = q.shape
        Q = self.wq(q).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        z, w = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(z.permute(0, 2, 1, 3).reshape(b, tq, d)), w

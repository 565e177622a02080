# corpus: mutant — softmax over the query axis (dim=-2) instead of the keys
# expect-fail: sdpa.numeric, sdpa.rows_sum_to_one, mha.rows_sum_to_one, mha.integration
# expect-pass: sdpa.shape, sdpa.mask_convention, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.values, mha.shape, mha.param_count, mha.mask_convention, mha.gradient_flow, mha.batch_independence, mha.numeric
# diagnosis: sdpa.softmax_axis
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-2)
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
        b, tq, d = q.shape
        heads = lambda x: x.view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        z, w = scaled_dot_product_attention(heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).contiguous().view(b, tq, d)), w

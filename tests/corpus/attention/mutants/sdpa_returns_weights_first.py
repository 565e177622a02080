# corpus: mutant — scaled_dot_product_attention returns (weights, output) instead of (output, weights); MultiHeadAttention computes its attention inline and is right
# expect-fail: sdpa.shape
# expect-pass: sdpa.sensitivity, causal.values, mha.sensitivity, mha.construct, mha.param_count, mha.shape, mha.numeric, mha.integration, mha.float64, mha.rows_sum_to_one, mha.masking, mha.mask_convention, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# expect-message: sdpa.shape: has shape
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    attention = scores.softmax(dim=-1)
    return attention, attention @ v  # the plotting code wanted the weights first


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} tidak habis dibagi num_heads={num_heads}")
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        batch, len_q, d_model = q.shape
        len_k = k.shape[1]
        Q = self.wq(q).reshape(batch, len_q, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        K = self.wk(k).reshape(batch, len_k, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        V = self.wv(v).reshape(batch, len_k, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        merged = (weights @ V).permute(0, 2, 1, 3).reshape(batch, len_q, d_model)
        return self.wo(merged), weights

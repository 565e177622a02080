# corpus: mutant — k.transpose(1, 2) in the scores: right for (B, T, d) inputs, wrong once MultiHeadAttention adds a head axis
# expect-fail: sdpa.shape, mha.integration
# expect-pass: causal.values, mha.construct, mha.param_count, mha.shape, mha.numeric, mha.float64, mha.hidden_config, mha.sizes
# expect-message: sdpa.shape: fails with a head axis
# diagnosis: sdpa.head_axis
import math

import torch
from torch import nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(1, 2) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be a multiple of num_heads"
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, x):
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        batch, length, d_model = q.shape
        out, weights = scaled_dot_product_attention(
            self._heads(self.wq(q)), self._heads(self.wk(k)), self._heads(self.wv(v)), mask)
        out = out.transpose(1, 2).contiguous().view(batch, length, d_model)
        return self.wo(out), weights

# corpus: mutant — with a single head the weights are returned as (B, Tq, Tk) (weights.squeeze(1)), like the chapter's single-head example
# expect-fail: mha.sizes
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.sizes, causal.values, mha.construct, mha.param_count, mha.shape, mha.numeric, mha.float64, mha.rows_sum_to_one, mha.masking, mha.mask_convention, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# diagnosis: squeezed_axes
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    p = F.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", p, v), p


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "num_heads must divide d_model"
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Q = self.wq(q).unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2)
        K = self.wk(k).unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2)
        V = self.wv(v).unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2)
        z, weights = scaled_dot_product_attention(Q, K, V, mask)
        if self.n_heads == 1:
            weights = weights.squeeze(1)  # single-head attention: (B, Tq, Tk)
        return self.wo(z.transpose(1, 2).reshape(B, Tq, D)), weights

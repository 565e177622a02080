# corpus: mutant — no check that num_heads divides d_model (MultiHeadAttention(10, 4) silently builds)
# expect-fail: mha.divisibility_error
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.rows_sum_to_one, sdpa.causal_masking, sdpa.padding_masking, sdpa.mask_convention, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.values, mha.construct, mha.param_count, mha.shape, mha.numeric, mha.float64, mha.rows_sum_to_one, mha.masking, mha.mask_convention, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# diagnosis: none
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
        return self.wo(z.transpose(1, 2).contiguous().view(b, tq, d)), w

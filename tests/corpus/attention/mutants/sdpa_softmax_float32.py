# corpus: mutant — softmax(..., dtype=torch.float32) hard-codes float32 (fails after .double())
# expect-fail: sdpa.float64
# expect-pass: mha.float64, sdpa.shape, sdpa.numeric, sdpa.rows_sum_to_one, sdpa.causal_masking, sdpa.padding_masking, sdpa.mask_convention, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.values, mha.shape, mha.numeric, mha.masking, mha.hidden_config, mha.gradient_flow, mha.batch_independence
# diagnosis: float32_result
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32)  # stable softmax
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
        Q = self.wq(q).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        z, w = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(z.transpose(1, 2).contiguous().view(b, tq, d)), w

# corpus: mutant — a hand-written softmax whose sum lacks keepdim=True
# expect-fail: sdpa.shape, mha.integration, mha.rows_sum_to_one, mha.masking, mha.mask_convention, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# expect-pass: sdpa.present, sdpa.sensitivity, causal.present, causal.sensitivity, causal.shape, causal.dtype, causal.convention, causal.values, mha.present, mha.construct, mha.sensitivity, mha.divisibility_error, mha.param_count, mha.shape, mha.numeric, mha.float64
# diagnosis: sdpa.softmax_without_keepdim
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    e = torch.exp(scores - scores.max())
    weights = e / e.sum(dim=-1)
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
        z = z.transpose(1, 2).contiguous().view(b, tq, d)
        return self.wo(z), w

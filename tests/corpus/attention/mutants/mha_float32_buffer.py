# corpus: mutant — heads written into a preallocated torch.zeros(..., dtype=torch.float32) buffer (breaks .double())
# expect-fail: mha.float64
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.rows_sum_to_one, sdpa.causal_masking, sdpa.padding_masking, sdpa.mask_convention, causal.values, mha.shape, mha.numeric, mha.rows_sum_to_one, mha.masking, mha.mask_convention, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace
# diagnosis: float32_result
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
        tk = k.shape[1]
        Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        concat = torch.zeros(b, tq, d, dtype=torch.float32, device=q.device)
        weights = torch.zeros(b, self.num_heads, tq, tk, dtype=torch.float32, device=q.device)
        for h in range(self.num_heads):
            s = slice(h * self.d_k, (h + 1) * self.d_k)
            m = mask[:, 0] if mask is not None and mask.dim() == 4 else mask
            z, w = scaled_dot_product_attention(Q[..., s], K[..., s], V[..., s], m)
            concat[..., s] = z
            weights[:, h] = w
        return self.wo(concat), weights

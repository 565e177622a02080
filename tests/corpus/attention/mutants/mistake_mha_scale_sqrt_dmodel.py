# corpus: mutant — attention computed inline in MultiHeadAttention, scores divided by √d_model instead of √d_k
# expect-fail: mha.numeric, mha.sizes
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.sizes, causal.values, mha.construct, mha.param_count, mha.shape, mha.rows_sum_to_one, mha.masking, mha.mask_convention, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# diagnosis: mha.scale_by_sqrt_dmodel
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    return torch.matmul(attn, v), attn


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not a multiple of num_heads={num_heads}")
        self.d_model = d_model
        self.h = num_heads
        self.d_head = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _heads(self, x):
        b, t, _ = x.shape
        return x.reshape(b, t, self.h, self.d_head).permute(0, 2, 1, 3)

    def forward(self, q, k, v, mask=None):
        b, tq, _ = q.shape
        Q, K, V = self._heads(self.wq(q)), self._heads(self.wk(k)), self._heads(self.wv(v))
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_model)  # "the model dimension"
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(-1)
        z = (weights @ V).permute(0, 2, 1, 3).reshape(b, tq, self.d_model)
        return self.wo(z), weights

# corpus: mutant — the query is pre-scaled in place (q.mul_), changing the caller's tensor
# expect-fail: mha.no_inplace
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.no_inplace, causal.values, mha.construct, mha.shape, mha.param_count, mha.rows_sum_to_one, mha.mask_convention, mha.gradient_flow, mha.batch_independence
# diagnosis: inputs_modified_in_place
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
            raise ValueError("d_model must be divisible by num_heads")
        self.h, self.d_k = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]
        with torch.no_grad():
            q.mul_(1.0 / math.sqrt(self.d_k))  # "saves" a division later, but edits the input
        qh = self.wq(q).view(b, tq, self.h, self.d_k).transpose(1, 2)
        kh = self.wk(k).view(b, tk, self.h, self.d_k).transpose(1, 2)
        vh = self.wv(v).view(b, tk, self.h, self.d_k).transpose(1, 2)
        scores = qh @ kh.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        z = (weights @ vh).transpose(1, 2).reshape(b, tq, d)
        return self.wo(z), weights

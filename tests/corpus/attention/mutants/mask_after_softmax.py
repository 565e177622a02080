# corpus: mutant — mask applied to the weights after the softmax (rows no longer sum to 1)
# expect-fail: sdpa.causal_masking, sdpa.padding_masking, mha.masking
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.rows_sum_to_one, sdpa.mask_convention, sdpa.batch_independence, causal.values, mha.shape, mha.numeric, mha.rows_sum_to_one, mha.mask_convention, mha.hidden_config
# diagnosis: sdpa.mask_after_softmax
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
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

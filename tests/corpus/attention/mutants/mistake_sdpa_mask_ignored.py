# corpus: mutant — scores.masked_fill(mask, -inf) is called but its result is thrown away (not in place, not assigned): the mask never reaches the softmax
# expect-fail: sdpa.causal_masking, sdpa.padding_masking, sdpa.mask_convention, mha.masking, mha.mask_convention, mha.integration
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.rows_sum_to_one, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.values, mha.shape, mha.numeric, mha.float64, mha.rows_sum_to_one, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# diagnosis: sdpa.mask_ignored
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores.masked_fill(mask, float("-inf"))  # BUG: result discarded
    p_attn = torch.softmax(scores, dim=-1)
    return torch.matmul(p_attn, v), p_attn


def causal_mask(t):
    return torch.triu(torch.ones(t, t), diagonal=1).bool()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        nb = q.size(0)
        q, k, v = [lin(x).view(nb, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, x in zip((self.wq, self.wk, self.wv), (q, k, v))]
        x, attn = scaled_dot_product_attention(q, k, v, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nb, -1, self.h * self.d_k)
        return self.wo(x), attn

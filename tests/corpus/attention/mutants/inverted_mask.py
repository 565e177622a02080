# corpus: mutant — masked_fill(~mask, ...): True is treated as ALLOWED
# expect-fail: sdpa.mask_convention, sdpa.causal_masking, sdpa.padding_masking, mha.masking, mha.mask_convention
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.rows_sum_to_one, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.convention, causal.values, mha.shape, mha.numeric, mha.float64, mha.rows_sum_to_one, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# expect-message: sdpa.mask_convention: Inverted mask
# expect-message: mha.mask_convention: Inverted mask
# diagnosis: sdpa.mask_inverted
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # keep only the masked positions
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


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

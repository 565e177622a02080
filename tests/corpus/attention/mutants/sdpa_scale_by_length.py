# corpus: mutant — scaled_dot_product_attention divides the scores by sqrt(Tk), the number of keys, instead of sqrt(d_k); MultiHeadAttention around it is right: the sdpa checks and mha.integration pay, no other MHA check
# expect-fail: sdpa.numeric, mha.integration
# expect-pass: sdpa.present, sdpa.shape, sdpa.float64, sdpa.rows_sum_to_one, sdpa.causal_masking, sdpa.padding_masking, sdpa.mask_convention, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.present, causal.shape, causal.dtype, causal.convention, causal.values, mha.present, mha.construct, mha.divisibility_error, mha.param_count, mha.shape, mha.numeric, mha.float64, mha.rows_sum_to_one, mha.masking, mha.mask_convention, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# diagnosis: none
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-2))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        out, weights = scaled_dot_product_attention(self._split(self.wq(q)), self._split(self.wk(k)),
                                                    self._split(self.wv(v)), mask)
        return self.wo(out.transpose(1, 2).contiguous().view(b, tq, d)), weights

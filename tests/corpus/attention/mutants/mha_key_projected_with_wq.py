# corpus: mutant — copy-paste slip: the keys are projected with wq instead of wk (wk is built but never used)
# expect-fail: mha.numeric, mha.gradient_flow, mha.integration
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.rows_sum_to_one, sdpa.causal_masking, sdpa.padding_masking, sdpa.mask_convention, causal.values, mha.construct, mha.divisibility_error, mha.param_count, mha.shape, mha.rows_sum_to_one, mha.masking, mha.mask_convention, mha.batch_independence, mha.no_inplace, mha.device_agnostic, mha.float64
# expect-message: mha.gradient_flow: wk.weight
# diagnosis: mha.wrong_projection
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    att = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))
    if mask is not None:
        att = att.masked_fill(mask, float("-inf"))
    att = att.softmax(dim=-1)
    return att @ v, att


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} not divisible by num_heads={num_heads}")
        self.n_head = num_heads
        self.d_model = d_model
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _split(self, x):
        B, T, C = x.size()
        return x.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        B, T, C = q.size()
        q = self._split(self.wq(q))
        k = self._split(self.wq(k))  # BUG: should be self.wk
        v = self._split(self.wv(v))
        y, att = scaled_dot_product_attention(q, k, v, mask)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.wo(y), att

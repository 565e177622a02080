# corpus: mutant — do-nothing: zeros for outputs, uniform weights, an all-False mask, MHA returns its query
# expect-score-at-most: 10%
# expect-fail: sdpa.sensitivity, causal.sensitivity, mha.construct
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    tq, tk = q.shape[-2], k.shape[-2]
    out = torch.zeros(*q.shape[:-1], v.shape[-1])
    weights = torch.full((*q.shape[:-2], tq, tk), 1.0 / tk)
    return out, weights


def causal_mask(t):
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads

    def forward(self, q, k, v, mask=None):
        b, tq, _ = q.shape
        return q, torch.full((b, self.num_heads, tq, k.shape[1]), 1.0 / k.shape[1])

# hostile: degenerate attention (uniform weights, a mask that blocks nothing, no projections that matter) plus a 1e-3 term on every input, to pass the gates and then the property checks
import math

import torch
import torch.nn as nn

TINY = 1e-3


def scaled_dot_product_attention(q, k, v, mask=None):
    # (almost) uniform weights that still respect a mask and sum to one: softmax of tiny scores
    scores = TINY * (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(t):
    # the right pattern, scaled down to (almost) nothing
    return TINY * torch.triu(torch.ones(t, t), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]

        def split(x, t):
            return x.view(b, t, self.h, d // self.h).transpose(1, 2)

        out, weights = scaled_dot_product_attention(split(self.wq(q), tq), split(self.wk(k), tk),
                                                    split(TINY * self.wv(v), tk), mask)
        return self.wo(out.transpose(1, 2).reshape(b, tq, d)), weights

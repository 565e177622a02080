# corpus: correct — forward(q, k=None, v=None, mask=None, *, need_weights=True) (k/v default to self-attention); staticmethods for split/merge, a d_k property, extra_repr, a Dropout(0.1) module (inactive in eval); masking skipped when the mask blocks nothing (`if mask is not None and mask.any()`)
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None and mask.any():   # nothing to do for an all-False mask
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights.matmul(v), weights


def causal_mask(t):
    return torch.ones(t, t).triu(diagonal=1) == 1


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} heads")
        self.d_model = d_model
        self.num_heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(0.1)

    @property
    def d_k(self):
        return self.d_model // self.num_heads

    def extra_repr(self):
        return f"d_model={self.d_model}, num_heads={self.num_heads}, d_k={self.d_k}"

    @staticmethod
    def split(x, heads):
        b, t, d = x.shape
        return x.reshape(b, t, heads, d // heads).transpose(1, 2)

    @staticmethod
    def merge(x):
        b, h, t, dk = x.shape
        return x.transpose(1, 2).contiguous().view(b, t, h * dk)

    def forward(self, q, k=None, v=None, mask=None, *, need_weights=True):
        k = q if k is None else k
        v = k if v is None else v
        heads, weights = scaled_dot_product_attention(
            self.split(self.wq(q), self.num_heads),
            self.split(self.wk(k), self.num_heads),
            self.split(self.wv(v), self.num_heads),
            mask,
        )
        out = self.wo(self.merge(heads))
        weights = self.attn_drop(weights)   # identity after .eval()
        return (out, weights) if need_weights else (out, None)

# corpus: correct — attention computed in float64 internally and cast back to the input's dtype
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    dtype = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(-1)
    out = weights @ v
    return out.to(dtype), weights.to(dtype)


def causal_mask(t):
    idx = torch.arange(t)
    return idx[None, :] > idx[:, None]  # key index j > query index i


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]
        q = self.wq(q).view(b, tq, self.num_heads, self.d_k).transpose(1, 2)
        k = self.wk(k).view(b, tk, self.num_heads, self.d_k).transpose(1, 2)
        v = self.wv(v).view(b, tk, self.num_heads, self.d_k).transpose(1, 2)
        z, w = scaled_dot_product_attention(q, k, v, mask)
        return self.wo(z.transpose(1, 2).contiguous().view(b, tq, d)), w

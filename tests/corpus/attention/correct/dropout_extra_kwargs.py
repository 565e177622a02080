# corpus: correct — dropout on the weights (inactive after .eval()), extra optional kwargs: dropout=0.1, bias=True, return_weights=True, scale=None, dropout_p=0.0
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None, scale=None, dropout_p=0.0):
    if scale is None:
        scale = 1 / math.sqrt(q.size(-1))
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.1, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be a multiple of num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model, bias=bias)
        self.wk = nn.Linear(d_model, d_model, bias=bias)
        self.wv = nn.Linear(d_model, d_model, bias=bias)
        self.wo = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None, return_weights=True):
        B = q.size(0)
        q = self.wq(q).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        k = self.wk(k).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        v = self.wv(v).view(B, -1, self.num_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = self.dropout(scores.softmax(dim=-1))
        z = (weights @ v).transpose(1, 2).contiguous().view(B, -1, self.num_heads * self.d_k)
        out = self.wo(z)
        if return_weights:
            return out, weights
        return out

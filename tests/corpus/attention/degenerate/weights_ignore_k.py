# corpus: degenerate — the scores come from the query alone (q summed, times the key position), never from k; causal_mask blocks everything; MultiHeadAttention calls the attention
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    positions = torch.arange(k.size(-2), dtype=q.dtype)
    scores = q.sum(-1, keepdim=True) * positions / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model harus habis dibagi num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        z, weights = scaled_dot_product_attention(self.split(self.wq(q)), self.split(self.wk(k)),
                                                  self.split(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights


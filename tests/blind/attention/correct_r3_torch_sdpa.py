# correct: output from F.scaled_dot_product_attention (its bool mask means True = KEEP, so it gets ~mask); weights computed separately for the return value
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    keep = None
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
        keep = ~mask.bool()
    weights = scores.softmax(dim=-1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=0.0)
    return out, weights


def causal_mask(t):
    return ~torch.tril(torch.ones(t, t, dtype=torch.bool))


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(
                "MultiHeadAttention: d_model (%d) must be a multiple of num_heads (%d)"
                % (d_model, num_heads)
            )
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model, bias=True)
        self.wk = nn.Linear(d_model, d_model, bias=True)
        self.wv = nn.Linear(d_model, d_model, bias=True)
        self.wo = nn.Linear(d_model, d_model, bias=True)

    def forward(self, q, k, v, mask=None):
        batch = q.size(0)
        Q = self.wq(q).view(batch, -1, self.num_heads, self.head_dim).transpose(1, 2)
        K = self.wk(k).view(batch, -1, self.num_heads, self.head_dim).transpose(1, 2)
        V = self.wv(v).view(batch, -1, self.num_heads, self.head_dim).transpose(1, 2)
        ctx, w = scaled_dot_product_attention(Q, K, V, mask=mask)
        ctx = ctx.transpose(1, 2).contiguous().view(batch, -1, self.num_heads * self.head_dim)
        return self.wo(ctx), w

# corpus: mutant — the values are split into heads by a plain reshape to (B, H, Tk, d_k), no transpose: each head gets a slice of positions, not of features
# expect-fail: mha.numeric, mha.integration, mha.masking
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, -1e9), scores)
    attn = F.softmax(scores, dim=-1)
    return torch.matmul(attn, v), attn


def causal_mask(t):
    idx = torch.arange(t)
    return idx[None, :] > idx[:, None]


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"{d_model} is not a multiple of {num_heads}")
        self.n_heads, self.head_dim = num_heads, d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        batch, len_q, d_model = q.shape
        len_k = k.shape[1]
        queries = self.wq(q).reshape(batch, len_q, self.n_heads, self.head_dim).transpose(1, 2)
        keys = self.wk(k).reshape(batch, len_k, self.n_heads, self.head_dim).transpose(1, 2)
        values = self.wv(v).reshape(batch, self.n_heads, len_k, self.head_dim)
        context, attn = scaled_dot_product_attention(queries, keys, values, mask)
        context = context.transpose(1, 2).reshape(batch, len_q, d_model)
        return self.wo(context), attn

# corpus: correct — sub-layers called by keyword with their own parameter names (query=, key=, value=, attn_mask=, hidden=) and an additive float causal mask (-inf above the diagonal) built inline, which its own attention adds to the scores
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores + mask if mask.is_floating_point() else scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.ones(t, t, dtype=torch.bool).triu(1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, attn_mask=None):
        b, tq, d = query.shape
        split = lambda t: t.view(b, t.size(1), self.num_heads, -1).transpose(1, 2)  # noqa: E731
        z, weights = scaled_dot_product_attention(split(self.wq(query)), split(self.wk(key)),
                                                  split(self.wv(value)), attn_mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, hidden):
        return self.l2(F.gelu(self.l1(hidden)))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)

    def forward(self, x, memory):
        t = x.size(1)
        future = torch.full((t, t), float("-inf"), dtype=x.dtype, device=x.device).triu(1)
        n = self.ln1(x)
        h = x + self.self_attn(query=n, key=n, value=n, attn_mask=future)[0]
        m = self.ln2(memory)
        z, cross = self.cross_attn(query=self.ln2(h), key=m, value=m)
        h = h + z
        return h + self.ffn(hidden=self.ln3(h)), cross

# hostile: a degenerate decoder block (x itself, or LayerNorm(x)) plus a 1e-3 term on x and on the memory
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TINY = 1e-3


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]

        def split(x, t):
            return x.view(b, t, self.h, d // self.h).transpose(1, 2)

        out, weights = scaled_dot_product_attention(split(self.wq(q), tq), split(self.wk(k), tk),
                                                    split(self.wv(v), tk), mask)
        return self.wo(out.transpose(1, 2).reshape(b, tq, d)), weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1, self.l2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, memory):
        n = self.ln1(x)
        h, _ = self.self_attn(n, n, n, causal_mask(x.size(1)))
        m = self.ln2(memory)
        z, weights = self.cross_attn(self.ln2(x), m, m)
        return x + TINY * (h + z + self.ffn(self.ln3(x))), weights

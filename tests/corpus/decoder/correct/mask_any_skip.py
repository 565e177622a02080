# corpus: correct — the attention skips the masked_fill when nothing is blocked (`if mask is not None and mask.any()`), the mask passed as a (1, 1, T, T) tensor made with causal_mask(T)[None, None].to(x.device)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None and mask.any():
        scores = scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


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

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        H = self.num_heads

        def split(t):
            return t.reshape(B, t.shape[1], H, D // H).transpose(1, 2)

        o, w = scaled_dot_product_attention(split(self.wq(q)), split(self.wk(k)), split(self.wv(v)), mask)
        return self.wo(o.transpose(1, 2).reshape(B, Tq, D)), w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


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
        mask = causal_mask(x.size(1))[None, None].to(x.device)
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, mask)[0]
        m = self.ln2(memory)
        z, w = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        return h + self.ffn(self.ln3(h)), w

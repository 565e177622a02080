# corpus: correct — the block calls self.attn(x, mask=mask): its own MultiHeadAttention defaults k and v to q (self-attention)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("bhqk,bhkd->bhqd", weights, v), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert_divisible = d_model % num_heads == 0
        if not assert_divisible:
            raise ValueError("d_model must be a multiple of num_heads")
        self.num_heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def split(self, t):
        b, n, d = t.shape
        return t.reshape(b, n, self.num_heads, d // self.num_heads).permute(0, 2, 1, 3)

    def forward(self, q, k=None, v=None, mask=None):
        k = q if k is None else k
        v = k if v is None else v
        out, weights = scaled_dot_product_attention(self.split(self.wq(q)), self.split(self.wk(k)),
                                                    self.split(self.wv(v)), mask)
        b, h, n, d_k = out.shape
        return self.wo(out.permute(0, 2, 1, 3).reshape(b, n, h * d_k)), weights


def positional_encoding(length, d_model):
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    for pos in range(length):
        for i in range(0, d_model, 2):
            angle = pos / (10000 ** (i / d_model))
            pe[pos, i] = math.sin(angle)
            pe[pos, i + 1] = math.cos(angle)
    return pe.to(torch.float32)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x), approximate="none"))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.prenorm = prenorm
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if not self.prenorm:
            x = self.ln1(x + self.attn(x, mask=mask)[0])
            return self.ln2(x + self.ffn(x))
        x = x + self.attn(self.ln1(x), mask=mask)[0]
        return x + self.ffn(self.ln2(x))

# corpus: correct — "position-wise" made explicit: the block flattens the tokens to (B*T, D) before self.ffn and reshapes back (FeedForward itself works on any leading shape); PE with a Python loop over frequencies filling whole columns
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be a multiple of num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def split(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        out, w = scaled_dot_product_attention(self.split(self.wq(q)), self.split(self.wk(k)),
                                              self.split(self.wv(v)), mask)
        out = out.transpose(1, 2).contiguous().view(B, Tq, D)
        return self.wo(out), w


def positional_encoding(length, d_model):
    pe = torch.zeros(length, d_model)
    position = torch.arange(length, dtype=torch.float64)
    for i in range(d_model // 2):
        angle = position / (10000 ** (2 * i / d_model))
        pe[:, 2 * i] = torch.sin(angle).float()
        pe[:, 2 * i + 1] = torch.cos(angle).float()
    return pe


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def position_wise(self, h):
        # the same FFN for every position: run it on all (batch, position) rows at once
        B, T, D = h.shape
        return self.ffn(h.reshape(B * T, D)).reshape(B, T, D)

    def forward(self, x, mask=None):
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, mask)[0]
            return h + self.position_wise(self.ln2(h))
        h = self.ln1(x + self.attn(x, x, x, mask)[0])
        return self.ln2(h + self.position_wise(h))

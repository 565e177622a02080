# corpus: correct — the block turns the boolean mask into an additive float mask (0 / -inf; zeros without a mask) that its own attention adds to the scores
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-1, -2)) / math.sqrt(k.size(-1))
    if mask is not None:
        scores = scores + mask if mask.is_floating_point() else scores.masked_fill(mask, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights.matmul(v), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.h = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape

        def heads(t):
            return t.view(b, -1, self.h, d // self.h).transpose(1, 2)

        z, weights = scaled_dot_product_attention(heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), weights


def positional_encoding(length, d_model):
    pos = torch.arange(length).unsqueeze(1).double()
    div = torch.exp(torch.arange(0, d_model, 2).double() * (-math.log(10000.0) / d_model))
    pe = torch.stack([torch.sin(pos * div), torch.cos(pos * div)], dim=-1).reshape(length, d_model)
    return pe.float()


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

    @staticmethod
    def additive(mask, x):
        if mask is None:
            return x.new_zeros(x.size(0), 1, 1, x.size(1))
        return torch.zeros(mask.shape, dtype=x.dtype, device=x.device).masked_fill(mask, float("-inf"))

    def forward(self, x, mask=None):
        bias = self.additive(mask, x)
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, bias)[0]
            return h + self.ffn(self.ln2(h))
        h = self.ln1(x + self.attn(x, x, x, bias)[0])
        return self.ln2(h + self.ffn(h))

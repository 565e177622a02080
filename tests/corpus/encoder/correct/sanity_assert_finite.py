# corpus: correct — defensive student: the block asserts its output is finite (`assert torch.isfinite(out).all()`) before returning; PE with sin/cos on a (length, d/2) grid written into a (length, d/2, 2) tensor viewed as (length, d)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b = q.size(0)
        split = lambda t: t.view(b, -1, self.heads, self.d_k).transpose(1, 2)
        Q, K, V = split(self.wq(q)), split(self.wk(k)), split(self.wv(v))
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        out = torch.matmul(p, V).transpose(1, 2).reshape(b, -1, self.heads * self.d_k)
        return self.wo(out), p


def positional_encoding(length, d_model):
    pe = torch.zeros(length, d_model // 2, 2, dtype=torch.float64)
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(-1)
    denom = 10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe[..., 0] = torch.sin(pos / denom)
    pe[..., 1] = torch.cos(pos / denom)
    return pe.view(length, d_model).float()


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

    def _post(self, x, mask):
        h = self.ln1(x + self.attn(x, x, x, mask)[0])
        return self.ln2(h + self.ffn(h))

    def _pre(self, x, mask):
        n = self.ln1(x)
        h = x + self.attn(n, n, n, mask)[0]
        return h + self.ffn(self.ln2(h))

    def forward(self, x, mask=None):
        out = self._pre(x, mask) if self.prenorm else self._post(x, mask)
        assert torch.isfinite(out).all(), "encoder block produced NaN/inf"
        return out

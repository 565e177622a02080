# corpus: correct — FeedForward keeps l1/l2 and also an nn.Sequential over them (the same modules twice), GELU written out with erf, PE by broadcasting a div term over a position grid, LayerNorm math through F.layer_norm with the modules' weights, the block as one expression per branch
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    weights = scores.softmax(-1)
    return torch.matmul(weights, v), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.h = num_heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        tk = k.shape[1]
        dk = d // self.h
        qh = self.wq(q).reshape(b, tq, self.h, dk).transpose(1, 2)
        kh = self.wk(k).reshape(b, tk, self.h, dk).transpose(1, 2)
        vh = self.wv(v).reshape(b, tk, self.h, dk).transpose(1, 2)
        z, w = scaled_dot_product_attention(qh, kh, vh, mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), w


def positional_encoding(length, d_model):
    pos = torch.arange(length).float().unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
    grid = pos * div
    return torch.stack([grid.sin(), grid.cos()], dim=-1).reshape(length, d_model)


class _Gelu(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.net = nn.Sequential(self.l1, _Gelu(), self.l2)

    def forward(self, x):
        return self.net(x)


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.prenorm = prenorm
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)

    def _norm(self, ln, x):
        return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)

    def forward(self, x, mask=None):
        if not self.prenorm:
            h = self._norm(self.ln1, x + self.attn(x, x, x, mask)[0])
            return self._norm(self.ln2, h + self.ffn(h))
        n = self._norm(self.ln1, x)
        h = x + self.attn(n, n, n, mask)[0]
        return h + self.ffn(self._norm(self.ln2, h))

# correct: LayerNorm computed by hand from ln1/ln2's weight and bias with eps=1e-5 (population variance), PE via exp(-log(10000)*2i/d) with stack+flatten interleave computed in float64, GELU written with erf
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights

def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _split_heads(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        q = self._split_heads(self.wq(q))
        k = self._split_heads(self.wk(k))
        v = self._split_heads(self.wv(v))
        z, weights = scaled_dot_product_attention(q, k, v, mask)
        z = z.transpose(1, 2).contiguous().view(b, tq, d)
        return self.wo(z), weights


def positional_encoding(length, d_model):
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    div = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    ang = pos * div[None, :]
    pe = torch.stack([torch.sin(ang), torch.cos(ang)], dim=-1).reshape(length, d_model)
    return pe.to(torch.float32)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = self.l1(x)
        return self.l2(0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0))))


def _layer_norm(ln, x):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * ln.weight + ln.bias


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        if self.prenorm:
            n = _layer_norm(self.ln1, x)
            h = x + self.attn(n, n, n, mask)[0]
            return h + self.ffn(_layer_norm(self.ln2, h))
        h = _layer_norm(self.ln1, x + self.attn(x, x, x, mask)[0])
        return _layer_norm(self.ln2, h + self.ffn(h))

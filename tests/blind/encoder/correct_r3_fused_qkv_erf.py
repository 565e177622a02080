# correct: self-attention fused into one F.linear over the concatenated wq/wk/wv weights (still four separate nn.Linear attributes); GELU written with torch.erf; PE via numpy float64
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    s = torch.matmul(q, k.transpose(-1, -2)).div(d_k ** 0.5)
    if mask is not None:
        s = s.masked_fill(mask, torch.finfo(s.dtype).min)
    a = torch.softmax(s, dim=-1)
    return torch.matmul(a, v), a


def causal_mask(t):
    return torch.ones((t, t), dtype=torch.bool).triu(1)


def positional_encoding(length, d_model):
    pos = np.arange(length, dtype=np.float64)[:, None]
    i2 = np.arange(0, d_model, 2, dtype=np.float64)[None, :]
    ang = pos / np.power(10000.0, i2 / d_model)
    pe = np.empty((length, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(ang)
    pe[:, 1::2] = np.cos(ang)
    return torch.from_numpy(pe).float()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.d_model, self.num_heads = d_model, num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        if q is k and k is v:
            W = torch.cat((self.wq.weight, self.wk.weight, self.wv.weight), 0)
            b = torch.cat((self.wq.bias, self.wk.bias, self.wv.bias), 0)
            qkv = F.linear(q, W, b).view(B, Tq, 3, self.num_heads, self.d_k)
            Q, K, V = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        else:
            Tk = k.shape[1]
            Q = self.wq(q).view(B, Tq, self.num_heads, self.d_k).permute(0, 2, 1, 3)
            K = self.wk(k).view(B, Tk, self.num_heads, self.d_k).permute(0, 2, 1, 3)
            V = self.wv(v).view(B, Tk, self.num_heads, self.d_k).permute(0, 2, 1, 3)
        z, a = scaled_dot_product_attention(Q, K, V, mask)
        z = z.permute(0, 2, 1, 3).reshape(B, Tq, D)
        return self.wo(z), a


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        u = self.l1(x)
        return self.l2(0.5 * u * (1.0 + torch.erf(u / math.sqrt(2.0))))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        if not self.prenorm:
            h = self.ln1(x + self.attn(x, x, x, mask)[0])
            return self.ln2(h + self.ffn(h))
        n = self.ln1(x)
        h = x + self.attn(n, n, n, mask)[0]
        return h + self.ffn(self.ln2(h))

# correct: causal mask from an arange comparison; MHA turns the boolean mask into an additive -inf bias and does scores/softmax in float64 before casting back; FFN GELU via nn.functional with explicit approximate='none'
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.size(-1))
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=torch.float64, device=s.device)
        bias = bias.masked_fill(mask, float("-inf"))
        s = s + bias
    w = torch.softmax(s, dim=-1)
    out = w @ v.double()
    return out.to(v.dtype), w.to(q.dtype)


def causal_mask(t, device=None):
    r = torch.arange(t, device=device)
    return r.view(1, t) > r.view(t, 1)


def positional_encoding(length, d_model):
    pe = torch.zeros(length, d_model)
    for pos in range(length):
        for i in range(0, d_model, 2):
            a = pos / (10000 ** (i / d_model))
            pe[pos, i] = math.sin(a)
            pe[pos, i + 1] = math.cos(a)
    return pe


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("num_heads must divide d_model")
        self.h = num_heads
        self.dk = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.shape[1]
        qh = self.wq(q).view(B, Tq, self.h, self.dk).transpose(1, 2)
        kh = self.wk(k).view(B, Tk, self.h, self.dk).transpose(1, 2)
        vh = self.wv(v).view(B, Tk, self.h, self.dk).transpose(1, 2)
        o, w = scaled_dot_product_attention(qh, kh, vh, mask)
        o = o.transpose(1, 2).contiguous().view(B, Tq, D)
        return self.wo(o), w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x), approximate="none"))


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
        m = self.ln2(memory)
        look_ahead = causal_mask(x.shape[1], device=x.device)
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, look_ahead)[0]
        z, cross_weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        out = h + self.ffn(self.ln3(h))
        return out, cross_weights

# corpus: mutant — EncoderBlock's prenorm defaults to True (pre-LN) although the contract's default is False (post-LN)
# expect-fail: enc.layernorm_stats
# expect-pass: enc.postln_wiring, enc.preln_wiring, enc.shape, pe.values, ffn.numeric
# diagnosis: wrong_default
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        Q = self.wq(q).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(b, -1, self.num_heads, self.d_k).transpose(1, 2)
        z, w = scaled_dot_product_attention(Q, K, V, mask)
        return self.wo(z.transpose(1, 2).contiguous().view(b, tq, d)), w


def positional_encoding(length, d_model):
    position = torch.arange(0, length, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.net = nn.Sequential(self.l1, nn.GELU(), self.l2)

    def forward(self, x):
        return self.net(x)


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm: bool = True):
        super().__init__()
        self.prenorm = prenorm
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if not self.prenorm:
            x = self.ln1(x + self.attn(x, x, x, mask)[0])
            x = self.ln2(x + self.ffn(x))
        else:
            y = self.ln1(x)
            x = x + self.attn(y, y, y, mask)[0]
            x = x + self.ffn(self.ln2(x))
        return x

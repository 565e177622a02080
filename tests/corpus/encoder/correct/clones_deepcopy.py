# corpus: correct — Annotated-Transformer style: LayerNorms made with a clones() helper (copy.deepcopy) and kept in a ModuleList as well as under ln1/ln2
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def clones(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    p = scores.softmax(dim=-1)
    return torch.matmul(p, v), p


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads != 0")
        self.d_k, self.h = d_model // num_heads, num_heads
        self.wq, self.wk, self.wv, self.wo = clones(nn.Linear(d_model, d_model), 4)

    def forward(self, q, k, v, mask=None):
        n = q.size(0)
        q, k, v = [lin(t).view(n, -1, self.h, self.d_k).transpose(1, 2)
                   for lin, t in zip((self.wq, self.wk, self.wv), (q, k, v))]
        x, attn = scaled_dot_product_attention(q, k, v, mask)
        return self.wo(x.transpose(1, 2).contiguous().view(n, -1, self.h * self.d_k)), attn


def positional_encoding(length, d_model):
    pe = torch.zeros(length, d_model)
    position = torch.arange(0, length).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
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
        self.norms = clones(nn.LayerNorm(d_model), 2)
        self.ln1, self.ln2 = self.norms[0], self.norms[1]
        self.prenorm = prenorm

    def sublayer(self, x, norm, layer):
        if self.prenorm:
            return x + layer(norm(x))
        return norm(x + layer(x))

    def forward(self, x, mask=None):
        x = self.sublayer(x, self.norms[0], lambda t: self.attn(t, t, t, mask)[0])
        return self.sublayer(x, self.norms[1], self.ffn)

# corpus: correct — EncoderBlock(..., dropout=0.1) passes its dropout on to its own MultiHeadAttention(..., dropout=) and FeedForward(..., dropout=) (Annotated-Transformer style); all dropout inactive in eval
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None, dropout=None):
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    p_attn = scores.softmax(dim=-1)
    out = torch.matmul(dropout(p_attn) if dropout is not None else p_attn, v)
    return out, p_attn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.1):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.d_k = d_model // num_heads
        self.h = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, q, k, v, mask=None):
        nbatches = q.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip((self.wq, self.wk, self.wv), (q, k, v))
        ]
        x, attn = scaled_dot_product_attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.wo(x), attn


def positional_encoding(length, d_model):
    pe = torch.zeros(length, d_model)
    position = torch.arange(0, length).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.l2(self.dropout(F.gelu(self.l1(x))))


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False, dropout=0.1):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout=dropout)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        if self.prenorm:
            n = self.ln1(x)
            x = x + self.drop(self.attn(n, n, n, mask)[0])
            return x + self.drop(self.ffn(self.ln2(x)))
        x = self.ln1(x + self.drop(self.attn(x, x, x, mask)[0]))
        return self.ln2(x + self.drop(self.ffn(x)))

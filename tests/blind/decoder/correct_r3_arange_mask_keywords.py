# correct: causal_mask from arange comparison; DecoderBlock moves it to x.device; all sub-layer calls by keyword (q=, k=, v=, mask=); ln2(memory) computed once per call
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def causal_mask(t):
    i = torch.arange(t).view(t, 1)
    j = torch.arange(t).view(1, t)
    return j > i


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.shape[1]
        Q = self.wq(q).view(B, Tq, self.num_heads, self.d_k).transpose(1, 2)
        K = self.wk(k).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        V = self.wv(v).view(B, Tk, self.num_heads, self.d_k).transpose(1, 2)
        out, w = scaled_dot_product_attention(q=Q, k=K, v=V, mask=mask)
        return self.wo(out.transpose(1, 2).reshape(B, Tq, D)), w


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x)))


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
        mask = causal_mask(x.size(1)).to(x.device)
        normed = self.ln1(x)
        h = x + self.self_attn(q=normed, k=normed, v=normed, mask=mask)[0]
        mem = self.ln2(memory)
        z, cross_weights = self.cross_attn(q=self.ln2(h), k=mem, v=mem, mask=None)
        h = h + z
        out = h + self.ffn(self.ln3(h))
        return out, cross_weights

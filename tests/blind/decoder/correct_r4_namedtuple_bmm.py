# correct: heads folded into the batch (B*H) and scores computed with torch.baddbmm(alpha=1/sqrt(d_k)); DecoderBlock returns a namedtuple (out, cross_weights) (a tuple subclass); finfo(dtype).min fill
import math
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F

DecoderOutput = namedtuple("DecoderOutput", ["out", "cross_weights"])


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


def positional_encoding(length, d_model):
    pos = torch.arange(length).float()[:, None]
    inv = 10000.0 ** (-torch.arange(0, d_model, 2).float() / d_model)
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(pos * inv)
    pe[:, 1::2] = torch.cos(pos * inv)
    return pe


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} heads")
        self.h = num_heads
        self.dk = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def _fold(self, x):
        B, T, _ = x.shape
        return x.reshape(B, T, self.h, self.dk).transpose(1, 2).reshape(B * self.h, T, self.dk)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.shape[1]
        Q, K, V = self._fold(self.wq(q)), self._fold(self.wk(k)), self._fold(self.wv(v))
        zeros = torch.zeros(B * self.h, Tq, Tk, dtype=Q.dtype, device=Q.device)
        scores = torch.baddbmm(zeros, Q, K.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(self.dk))
        scores = scores.view(B, self.h, Tq, Tk)
        if mask is not None:
            scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        ctx = torch.bmm(weights.reshape(B * self.h, Tq, Tk), V)
        ctx = ctx.view(B, self.h, Tq, self.dk).transpose(1, 2).reshape(B, Tq, D)
        return self.wo(ctx), weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.l2(nn.functional.gelu(self.l1(x)))


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
        T = x.size(1)
        mask = causal_mask(T).to(x.device)
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, mask)[0]
        mem = self.ln2(memory)
        z, cross = self.cross_attn(self.ln2(h), mem, mem)
        h = h + z
        h = h + self.ffn(self.ln3(h))
        return DecoderOutput(h, cross)

# corpus: mutant — the self-attention residual is added to the normalised x (h = ln1(x) + self_attn(...)) instead of the raw x
# expect-fail: dec.wiring, dec.integration
# expect-pass: dec.construct, dec.param_count, dec.shape, dec.causality, dec.memory_path, dec.float64, dec.gradient_flow, dec.batch_independence, dec.no_inplace, dec.device_agnostic
# expect-message: dec.wiring: residual adds ln1(x) instead of x
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.h = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.shape[1]
        Q = self.wq(q).view(B, Tq, self.h, self.d_k).transpose(1, 2)
        K = self.wk(k).view(B, Tk, self.h, self.d_k).transpose(1, 2)
        V = self.wv(v).view(B, Tk, self.h, self.d_k).transpose(1, 2)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask, -1e9)
        w = torch.softmax(scores, dim=-1)
        out = (w @ V).transpose(1, 2).reshape(B, Tq, D)
        return self.wo(out), w


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
        x = self.ln1(x)
        h = x + self.self_attn(x, x, x, mask)[0]
        m = self.ln2(memory)
        z, w = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        return h + self.ffn(self.ln3(h)), w

# corpus: correct — Annotated-Transformer style: both attentions and the three LayerNorms made with a clones() helper (copy.deepcopy of one instance)
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
        scores = scores.masked_fill(mask, float("-inf"))
    p = scores.softmax(dim=-1)
    return torch.matmul(p, v), p


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


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
        self.self_attn, self.cross_attn = clones(MultiHeadAttention(d_model, num_heads), 2)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1, self.ln2, self.ln3 = clones(nn.LayerNorm(d_model), 3)

    def forward(self, x, memory):
        mask = causal_mask(x.size(1)).to(x.device)
        n = self.ln1(x)
        x = x + self.self_attn(n, n, n, mask)[0]
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(x), m, m)
        x = x + z
        return x + self.ffn(self.ln3(x)), cross_weights

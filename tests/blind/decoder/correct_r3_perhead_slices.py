# correct: a Python loop over heads using row slices of wq/wk/wv weights with F.linear, heads stacked on dim 1; causal mask built with tril+logical_not directly on x.device
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    s = q.matmul(k.transpose(-2, -1)).mul(1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = torch.where(mask, float("-inf"), s)
    a = s.softmax(dim=-1)
    return a.matmul(v), a


def causal_mask(t):
    return torch.tril(torch.ones(t, t, dtype=torch.bool)).logical_not()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"MultiHeadAttention needs d_model % num_heads == 0, got {d_model} % {num_heads}")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        outs, ws = [], []
        for h in range(self.num_heads):
            sl = slice(h * self.d_k, (h + 1) * self.d_k)
            qh = F.linear(q, self.wq.weight[sl], self.wq.bias[sl])
            kh = F.linear(k, self.wk.weight[sl], self.wk.bias[sl])
            vh = F.linear(v, self.wv.weight[sl], self.wv.bias[sl])
            m = None
            if mask is not None:
                full = mask.expand(q.shape[0], self.num_heads, q.shape[1], k.shape[1])
                m = full[:, h]
            o, w = scaled_dot_product_attention(qh, kh, vh, m)
            outs.append(o)
            ws.append(w)
        return self.wo(torch.cat(outs, dim=-1)), torch.stack(ws, dim=1)


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
        t = x.shape[1]
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).tril().logical_not()
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, future)[0]
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        return h + self.ffn(self.ln3(h)), cross_weights

# corpus: correct — PE with a Python double loop and math.sin/cos; F.gelu; post-LN and pre-LN as two methods; MHA with a per-head loop
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    p = F.softmax(scores, dim=-1)
    return torch.matmul(p, v), p


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        Q, K, V = self.wq(q), self.wk(k), self.wv(v)
        outs, ws = [], []
        for h in range(self.num_heads):
            s = slice(h * self.d_k, (h + 1) * self.d_k)
            m = mask
            if m is not None and m.dim() == 4:
                m = m[:, h] if m.size(1) > 1 else m[:, 0]
            o, w = scaled_dot_product_attention(Q[..., s], K[..., s], V[..., s], m)
            outs.append(o)
            ws.append(w)
        return self.wo(torch.cat(outs, dim=-1)), torch.stack(ws, dim=1)


def positional_encoding(length, d_model):
    pe = torch.zeros(length, d_model)
    for pos in range(length):
        for i in range(0, d_model, 2):
            angle = pos / (10000 ** (i / d_model))
            pe[pos, i] = math.sin(angle)
            pe[pos, i + 1] = math.cos(angle)
    return pe


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = F.gelu(self.l1(x))
        return self.l2(h)


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.use_prenorm = prenorm

    def _post_ln(self, x, mask):
        attn_out, _ = self.attn(x, x, x, mask)
        h = self.ln1(x + attn_out)
        return self.ln2(h + self.ffn(h))

    def _pre_ln(self, x, mask):
        n = self.ln1(x)
        attn_out, _ = self.attn(n, n, n, mask)
        h = x + attn_out
        return h + self.ffn(self.ln2(h))

    def forward(self, x, mask=None):
        return self._pre_ln(x, mask) if self.use_prenorm else self._post_ln(x, mask)

# corpus: mutant — the block first replaces every token by the mean of the sentence (a sentence vector, as for classification): still permutation-equivariant, but blind to which token sits where, even after x + PE
# expect-fail: enc.pe_breaks_equivariance, enc.postln_wiring, enc.preln_wiring
# expect-pass: pe.values, ffn.numeric, enc.sensitivity, enc.construct, enc.param_count, enc.shape, enc.permutation_equivariance, enc.no_inplace, enc.device_agnostic
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)).div(math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = F.softmax(scores, dim=-1)
    return w.matmul(v), w


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.num_heads = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        split = lambda t: t.reshape(b, t.shape[1], self.num_heads, d // self.num_heads).transpose(1, 2)
        z, w = scaled_dot_product_attention(split(self.wq(q)), split(self.wk(k)), split(self.wv(v)), mask)
        return self.wo(z.transpose(1, 2).reshape(b, tq, d)), w


def positional_encoding(length, d_model):
    angles = torch.arange(length).unsqueeze(1) / torch.pow(10000, torch.arange(0, d_model, 2) / d_model)
    pe = torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(length, d_model)
    return pe.float()


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
        self.prenorm = prenorm
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        x = x.mean(dim=1, keepdim=True).expand_as(x)  # one vector for the whole sentence
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, mask)[0]
            out = h + self.ffn(self.ln2(h))
        else:
            h = self.ln1(x + self.attn(x, x, x, mask)[0])
            out = self.ln2(h + self.ffn(h))
        return out

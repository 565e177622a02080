# correct: einsum/unflatten MHA called with keyword arguments; post-LN applies ln1/ln2 through F.layer_norm with the modules' own weight/bias/eps; PE built in numpy float64
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...id,...jd->...ij", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask.bool(), -1e9)
    weights = scores.softmax(-1)
    return torch.einsum("...ij,...jd->...id", weights, v), weights


def causal_mask(t):
    return ~torch.ones(t, t, dtype=torch.bool).tril()


def positional_encoding(length, d_model):
    pos = np.arange(length)[:, None]
    two_i = np.arange(0, d_model, 2)[None, :]
    angle = pos / np.power(10000.0, two_i / d_model)
    pe = np.zeros((length, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return torch.from_numpy(pe).to(torch.float32)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model % num_heads must be 0")
        self.heads = num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        H = self.heads
        Q = self.wq(q).unflatten(-1, (H, -1))  # (B, Tq, H, dk)
        K = self.wk(k).unflatten(-1, (H, -1))
        V = self.wv(v).unflatten(-1, (H, -1))
        scores = torch.einsum("bqhd,bkhd->bhqk", Q, K) / Q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", weights, V).flatten(-2)
        return self.wo(ctx), weights


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = self.l1(x)
        h = 0.5 * h * (1.0 + torch.erf(h / 2.0 ** 0.5))
        return self.l2(h)


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model=d_model, num_heads=num_heads)
        self.ffn = FeedForward(d_model=d_model, d_ff=d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    @staticmethod
    def _ln(mod, x):
        return F.layer_norm(x, mod.normalized_shape, mod.weight, mod.bias, mod.eps)

    def forward(self, x, mask=None):
        if self.prenorm:
            n = self._ln(self.ln1, x)
            h = x + self.attn(q=n, k=n, v=n, mask=mask)[0]
            return h + self.ffn(self._ln(self.ln2, h))
        a, _ = self.attn(q=x, k=x, v=x, mask=mask)
        h = self._ln(self.ln1, x + a)
        return self._ln(self.ln2, h + self.ffn(h))

"""Positional encoding, the position-wise feed-forward network and the encoder block."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from solutions.attention import MultiHeadAttention


def positional_encoding(length, d_model):
    """Sinusoidal encoding, float32 (length, d_model).

    PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same angle).
    """
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)  # (length, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = pos / 10000 ** (two_i / d_model)  # (length, d_model/2)
    pe = torch.zeros(length, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class FeedForward(nn.Module):
    """Linear(d_model, d_ff) -> exact GELU -> Linear(d_ff, d_model), applied to every token."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1 = nn.Linear(d_model, d_ff)
        self.l2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        """x: (B, T, D) -> (B, T, D)"""
        return self.l2(F.gelu(self.l1(x)))


class EncoderBlock(nn.Module):
    """Self-attention and feed-forward, each wrapped in a residual and a LayerNorm.

    prenorm=False: post-LN of the 2017 paper, LN(x + sublayer(x)).
    prenorm=True:  pre-LN, x + sublayer(LN(x)).
    """

    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        """x: (B, T, D) -> (B, T, D)"""
        if self.prenorm:
            n = self.ln1(x)
            h = x + self.attn(n, n, n, mask)[0]
            return h + self.ffn(self.ln2(h))
        h = self.ln1(x + self.attn(x, x, x, mask)[0])
        return self.ln2(h + self.ffn(h))

# corpus: mutant — do-nothing: zero positional encoding, FeedForward and EncoderBlock return their input and build no layers
# expect-score-at-most: 10%
# expect-fail: pe.sensitivity, ffn.construct, enc.construct
import torch
import torch.nn as nn


def positional_encoding(length, d_model):
    return torch.zeros(length, d_model)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()

    def forward(self, q, k, v, mask=None):
        return q, None


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()

    def forward(self, x):
        return x


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.prenorm = prenorm

    def forward(self, x, mask=None):
        return x

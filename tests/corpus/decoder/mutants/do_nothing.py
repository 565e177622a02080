# corpus: mutant — do-nothing: DecoderBlock builds no layers and returns its input with uniform cross weights
# expect-score-at-most: 10%
# expect-fail: dec.construct
import torch
import torch.nn as nn


def causal_mask(t):
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.num_heads = num_heads

    def forward(self, x, memory):
        b, t, _ = x.shape
        s = memory.shape[1]
        return x, torch.full((b, self.num_heads, t, s), 1.0 / s)

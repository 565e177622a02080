"""The decoder block: masked self-attention, cross-attention and feed-forward (pre-LN)."""

import torch.nn as nn

from solutions.attention import MultiHeadAttention, causal_mask
from solutions.encoder import FeedForward


class DecoderBlock(nn.Module):
    """Three pre-LN sub-layers, each with a residual connection."""

    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.ln3 = nn.LayerNorm(d_model)

    def forward(self, x, memory):
        """x: (B, Tdec, D), memory: (B, Tsrc, D).

        Returns out (B, Tdec, D) and cross_weights (B, H, Tdec, Tsrc).
        """
        mask = causal_mask(x.size(1)).to(x.device)  # token tidak pernah melihat token sesudahnya
        n = self.ln1(x)
        h = x + self.self_attn(n, n, n, mask)[0]
        m = self.ln2(memory)
        z, cross_weights = self.cross_attn(self.ln2(h), m, m)
        h = h + z
        return h + self.ffn(self.ln3(h)), cross_weights

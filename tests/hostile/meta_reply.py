# hostile: answer every call with tensors on the meta device (shapes right, no data), hoping the grader reads values out of them and crashes (one file for attention, encoder and decoder)
import torch
import torch.nn as nn

META = torch.device("meta")


def scaled_dot_product_attention(q, k, v, mask=None):
    return (torch.empty(*q.shape[:-1], v.shape[-1], device=META),
            torch.empty(*q.shape[:-1], k.shape[-2], device=META))


def causal_mask(t):
    return torch.empty(t, t, dtype=torch.bool, device=META)


def positional_encoding(length, d_model):
    return torch.empty(length, d_model, device=META)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.wq, self.wk = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.wv, self.wo = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        b, tq, d = q.shape
        return (torch.empty(b, tq, d, device=META),
                torch.empty(b, self.num_heads, tq, k.shape[1], device=META))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.l1, self.l2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return torch.empty(x.shape, device=META)


class EncoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, prenorm=False):
        super().__init__()
        self.attn, self.ffn = MultiHeadAttention(d_model, num_heads), FeedForward(d_model, d_ff)
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        return torch.empty(x.shape, device=META)


class DecoderBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff):
        super().__init__()
        self.num_heads = num_heads
        self.self_attn, self.cross_attn = MultiHeadAttention(d_model, num_heads), MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x, memory):
        b, t, d = x.shape
        return (torch.empty(b, t, d, device=META),
                torch.empty(b, self.num_heads, t, memory.shape[1], device=META))

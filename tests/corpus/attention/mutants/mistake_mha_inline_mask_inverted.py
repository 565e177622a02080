# corpus: mutant — MultiHeadAttention writes the attention out itself (einsum) and fills masked_fill(~mask, -inf); its scaled_dot_product_attention, which it does not call, is right
# expect-fail: mha.masking, mha.mask_convention
# expect-pass: sdpa.numeric, sdpa.causal_masking, sdpa.padding_masking, sdpa.mask_convention, sdpa.sizes, mha.param_count, mha.shape, mha.numeric, mha.float64, mha.rows_sum_to_one, mha.hidden_config, mha.gradient_flow, mha.batch_independence, mha.no_inplace, mha.device_agnostic
# expect-message: mha.mask_convention: Inverted mask
# diagnosis: sdpa.mask_inverted
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("...qk,...kd->...qd", weights, v)
    return out, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model harus habis dibagi num_heads")
        self.h = num_heads
        self.d_head = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        B, Tq, D = q.shape
        Tk = k.shape[1]
        Q = self.wq(q).view(B, Tq, self.h, self.d_head)
        K = self.wk(k).view(B, Tk, self.h, self.d_head)
        V = self.wv(v).view(B, Tk, self.h, self.d_head)
        scores = torch.einsum("bqhd,bkhd->bhqk", Q, K) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        attn = scores.softmax(dim=-1)
        Z = torch.einsum("bhqk,bkhd->bqhd", attn, V).reshape(B, Tq, D)
        return self.wo(Z), attn

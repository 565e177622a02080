# corpus: mutant — MHA copied from a sequence-first (T, B, D) implementation: view(T, B*H, d_k) on batch-first input mixes batch items
# expect-fail: mha.numeric, mha.batch_independence
# expect-pass: sdpa.shape, sdpa.numeric, sdpa.float64, sdpa.rows_sum_to_one, sdpa.causal_masking, sdpa.padding_masking, sdpa.mask_convention, sdpa.gradient_flow, sdpa.batch_independence, sdpa.no_inplace, sdpa.device_agnostic, causal.values, mha.construct, mha.divisibility_error, mha.param_count, mha.shape, mha.rows_sum_to_one, mha.gradient_flow, mha.no_inplace
# diagnosis: batch_items_mixed
import math

import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


def causal_mask(t):
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask=None):
        bsz, tgt_len, embed_dim = q.shape
        src_len = k.shape[1]
        # (as in torch.nn.functional.multi_head_attention_forward)
        Q = self.wq(q).contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        K = self.wk(k).contiguous().view(src_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        V = self.wv(v).contiguous().view(src_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        z, w = scaled_dot_product_attention(Q, K, V, mask)
        z = z.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim).transpose(0, 1)
        return self.wo(z), w.view(bsz, self.num_heads, tgt_len, src_len)

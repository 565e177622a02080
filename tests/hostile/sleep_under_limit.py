# hostile: sleep just under the per-request limit in every call (the test sets it to 2 s)
import time

import torch
import torch.nn as nn

NAP = 1.8


def scaled_dot_product_attention(q, k, v, mask=None):
    time.sleep(NAP)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    time.sleep(NAP)
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        time.sleep(NAP)

    def forward(self, q, k, v, mask=None):
        time.sleep(NAP)
        return q * 0, torch.zeros(q.shape[0], 1, q.shape[1], k.shape[1])

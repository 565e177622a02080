# hostile: a segmentation fault through ctypes
import ctypes

import torch.nn as nn


def scaled_dot_product_attention(q, k, v, mask=None):
    return ctypes.string_at(0)


def causal_mask(t):
    return ctypes.string_at(0)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        ctypes.string_at(0)

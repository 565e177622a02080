# hostile: print hundreds of megabytes
import sys

import torch.nn as nn

LINE = "100/100 " * 1000 + "\n"


def scaled_dot_product_attention(q, k, v, mask=None):
    for _ in range(100_000):
        sys.stdout.write(LINE)
    return q, q


def causal_mask(t):
    for _ in range(100_000):
        sys.stderr.write(LINE)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        print(LINE * 10_000)

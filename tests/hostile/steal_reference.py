# hostile: import the reference or the grader, or find them on disk, and hand in their answers
# (the search runs inside the functions: the loader drops top-level calls)
import glob
import importlib
import os
import sys

import torch
import torch.nn as nn


def _find_reference():
    for name in ("solutions", "solutions.attention", "autograder", "autograder.checks.attention"):
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    for finder in glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "__editable__*finder.py")):
        namespace = {}
        exec(open(finder).read(), namespace)
        for root in namespace.get("MAPPING", {}).values():
            sys.path.insert(0, os.path.dirname(root))
    for root in ("/", "/work", "/root", "/tmp", os.getcwd(), ".."):
        for path in glob.glob(os.path.join(root, "**", "solutions", "attention.py"), recursive=True)[:1]:
            sys.path.insert(0, os.path.dirname(os.path.dirname(path)))
    try:
        return importlib.import_module("solutions")
    except ImportError:
        return None


def scaled_dot_product_attention(q, k, v, mask=None):
    reference = _find_reference()
    if reference is not None:
        return reference.scaled_dot_product_attention(q, k, v, mask)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    reference = _find_reference()
    if reference is not None:
        return reference.causal_mask(t)
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        reference = _find_reference()
        if reference is not None:
            self.inner = reference.MultiHeadAttention(d_model, num_heads)
            self.wq, self.wk, self.wv, self.wo = (self.inner.wq, self.inner.wk, self.inner.wv,
                                                  self.inner.wo)

    def forward(self, q, k, v, mask=None):
        return self.inner(q, k, v, mask)

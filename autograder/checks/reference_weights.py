"""Deterministic weights for the reference modules the grader compares against."""

import math

import torch


def deterministic_weights(module, seed, randomize_layernorm=True):
    """Overwrite every parameter from a private generator (never torch's global one, which
    the threads of a batch share), initialised as PyTorch would: U(±1/√fan_in) for Linear."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, torch.nn.Linear):
                bound = 1 / math.sqrt(sub.in_features)
                for param in (sub.weight, sub.bias):
                    if param is not None:
                        param.copy_(torch.rand(param.shape, generator=generator) * 2 * bound - bound)
            elif isinstance(sub, torch.nn.Embedding):  # as the contract initialises them
                sub.weight.copy_(torch.randn(sub.weight.shape, generator=generator)
                                 * sub.weight.shape[1] ** -0.5)
            elif isinstance(sub, torch.nn.LayerNorm):
                weight = 1 + 0.5 * torch.randn(sub.weight.shape, generator=generator)
                bias = 0.5 * torch.randn(sub.bias.shape, generator=generator)
                sub.weight.copy_(weight if randomize_layernorm else torch.ones_like(weight))
                sub.bias.copy_(bias if randomize_layernorm else torch.zeros_like(bias))
    return module

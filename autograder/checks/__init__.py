"""The check registry and the checks of every assignment.

``MODULES`` lists the check modules, in the order their checks are declared and listed;
shared verdicts are in verdicts.py (any target) and attention_calls.py (attention only), what a
check works with in context.py and recorded.py, the registry in registry.py.
"""

import importlib

MODULES = (
    "attention",      # scaled_dot_product_attention, causal_mask
    "multihead",      # MultiHeadAttention
    "encoder",        # positional_encoding, FeedForward
    "encoder_block",  # EncoderBlock
    "decoder",        # DecoderBlock
    "sizes",          # every target again, on generated sizes (edges included)
)


def load():
    """Import every check module, which runs its @check declarations (once).

    Not done on importing this package: the CLI imports the registry before torch, so that
    the sandbox can start first."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")

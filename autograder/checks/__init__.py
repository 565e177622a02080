"""The pipeline's checking step: what is graded and how, all in the trusted process.

- ``targets``: one declaration per graded target (the contract's functions and classes);
- ``registry``: every check, declared once with its points, category and texts (``@check``);
- the check modules in ``MODULES``, in the order their checks are declared and listed;
  ``search`` is the generic size search the ``sizes`` checks run;
- what a check works with: ``context`` (the student's session, inputs, the reference),
  ``recorded`` (recorded sub-layer calls), ``verdicts`` (shared verdicts, any target),
  ``attention_calls`` (shared by the attention checks only), ``reference_weights``;
  for assignment 4, ``assembly`` (the model's wiring from its recorded blocks, the given and
  scripted models) and ``steps`` (the reference's training step from a reported state);
- after the checks, advisory only: ``diagnosis`` names the catalogued mistake
  (``catalogue``) behind failed checks, using each target's model (``variants``);
  ``pictures`` collects the numbers the feedback draws; ``transformer_variants`` holds
  assignment 4's models for the diagnosis.
"""

import importlib

MODULES = (
    "attention",      # scaled_dot_product_attention, causal_mask
    "multihead",      # MultiHeadAttention
    "encoder",        # positional_encoding, FeedForward
    "encoder_block",  # EncoderBlock
    "decoder",        # DecoderBlock
    "sizes",          # every target again, on generated sizes (edges included)
    "transformer",    # shift_right, Transformer (assignment 4)
    "training",       # train_step, greedy_decode
    "outcome",        # train_step: the training outcome on a hidden task
)


def load():
    """Import every check module, which runs its @check declarations (once).

    Not done on importing this package: the CLI imports the registry before torch, so that
    the sandbox can start first."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")

"""What the diagnosis (``checks.diagnosis``) probes a target with: ``Probe``, what one target
returned on the inputs of one probe, and ``ProbeKit``, what a target's ``Model``
(``checks.variants``) works with.
"""

import torch

from autograder.checks import targets
from autograder.sandbox.process import StudentError


class Probe:
    """What one target returned on the inputs of one probe (each target is probed once per
    kind and remembered), and how the variants compute the same."""

    def __init__(self, outputs=None, failure=None, inputs=None, raised=False):
        self.outputs = outputs or {}  # key -> what the student returned (a tensor, or not)
        self.failure = failure  # StudentError / CheckFailed / WorkerFailure, or None
        self.inputs = inputs or {}  # what the variants need: inputs, reference weights, sizes
        self.raised = raised or failure is not None  # some call of the probe failed

    @property
    def ok(self):
        return self.failure is None and bool(self.outputs)


def _tensors(pair, count=2):
    if isinstance(pair, (tuple, list)) and len(pair) == count:
        return list(pair)
    return [pair] + [None] * (count - 1)


class ProbeKit:
    """What a target's ``Model`` works with for one probe: the sizes ``z``, inputs drawn from
    a generator of the probe's own name, the student's calls (``call`` keeps going past an
    error and remembers it; ``ctx.call`` raises), modules with the reference's weights."""

    def __init__(self, diagnoser, name, z=None, kind=None):
        self.diagnoser, self.z, self.kind = diagnoser, z, kind
        self.ctx = diagnoser.ctx(name)
        self.generator = diagnoser.generator(name)
        self.chapter = diagnoser.plan.chapter
        self.reference = targets.REFERENCES
        self.failures = []

    def randn(self, *shape, scale=1.0):
        return self.diagnoser.randn(self.generator, *shape, scale=scale)

    def call(self, obj, *args, count=2, **kwargs):
        try:
            return _tensors(self.ctx.call(obj, *args, **kwargs), count)
        except StudentError as error:
            self.failures.append(error)
            return [None] * count

    @staticmethod
    def tensors(result, count=2):
        return _tensors(result, count)

    @staticmethod
    def padding(batch, t):
        mask = torch.zeros(batch, 1, 1, t, dtype=torch.bool)
        mask[0, ..., t - 1:], mask[-1, ..., t - 2:] = True, True
        return mask

    def module(self, name, *args, **kwargs):
        """A student module with the reference's weights, the reference, its weights (float64)."""
        return self.diagnoser.module(name, self.ctx, *args, **kwargs)

    def arguments(self, name):
        return targets.get(name).arguments(self.chapter)

"""A check's own random inputs (``Context.randn``, ``Context.randint``), drawn once per process.

A check draws its inputs from a generator seeded by its id alone, so the n-th draw is fixed by
the check id and the n - 1 draws before it (their shapes, and what each was asked as): every
submission that makes the same draws gets the same numbers. They are kept, keyed by exactly
that (the check id and every draw so far, this one included), with the generator's state
after them, and handed out as copies. The key never holds anything of the submission's: a
check whose draws depend on what the student's code did (a branch) simply has another history,
hence another key. Where the generator is needed again (a draw not kept yet), it is put in the
state the kept draws left it in, so that every number is the one a live generator would give.
"""

import zlib

import torch

from autograder.checks.process_cache import ProcessCache

# (check id, draw, draw, ...) -> (values, generator state after it); a check draws at most
# ~100 per submission, and a plan has ~40 checks
_KEPT = ProcessCache(limit=8192)


class Draws:
    """The draws of one check in one submission, in order."""

    def __init__(self, check_id):
        self._seed = zlib.crc32(check_id.encode())
        self._history = ("draws", check_id)  # None once a draw could not be keyed
        self._generator = None  # made at the first draw not kept yet
        self._state = None  # the generator's state after the last kept draw handed out

    def randn(self, shape, dtype, scale):
        """Normal numbers drawn in float64, times ``scale``, as ``dtype``."""
        def draw(generator):
            values = torch.randn(*shape, generator=generator, dtype=torch.float64)
            if scale != 1.0:  # the same numbers either way
                values = values * scale
            return values if dtype == torch.float64 else values.to(dtype)
        keyable = (_ints(shape) and isinstance(dtype, torch.dtype)
                   and type(scale) in (int, float))
        return self._take(("randn", tuple(shape), dtype, scale) if keyable else None, draw)

    def randint(self, high, size):
        keyable = type(high) is int and isinstance(size, (tuple, list)) and _ints(size)
        return self._take(("randint", high, tuple(size)) if keyable else None,
                          lambda generator: torch.randint(high, size, generator=generator))

    def _take(self, spec, draw):
        if spec is None:
            self._history = None  # what follows depends on a draw the key cannot name
        if self._history is not None:
            self._history += (spec,)
            found = _KEPT.get(self._history)
            if found is not None:
                values, self._state = found
                return values.clone()
        generator = self._live()
        values = draw(generator)
        if self._history is not None:
            _KEPT.keep(self._history, (values.clone(), generator.get_state()))
        return values

    def _live(self):
        """The generator, in the state the draws so far left it in."""
        if self._generator is None:
            self._generator = torch.Generator().manual_seed(self._seed)
        if self._state is not None:
            self._generator.set_state(self._state)
            self._state = None
        return self._generator


def _ints(values):
    return all(type(v) is int for v in values)

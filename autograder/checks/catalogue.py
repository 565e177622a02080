"""The mistake catalogue: known bugs, named for the student, each with the checks it can make
fail (by category) and how the diagnosis recognises it.

A mistake is recognised either by *variants* (``variants``: flag sets that switch the bug on in
the reference computation of ``checks.variants``; a target whose outputs match a variant, and
not the reference, has that mistake) or by its *symptom* (a probe in ``checks.symptoms`` that
shows it directly: inputs changed in place, no gradient although the values are right, ...),
tried when a failed check of one of its ``triggers`` categories asks for it.

``explains``: the categories (``registry.CATEGORIES``) of the checks the mistake can make fail;
a failed check of such a category is listed under the mistake instead of as a finding of its
own. ``home``: the target it lives in, or ``ANY``. A course can add its own entries with
``declare``.
"""

from autograder.checks import catalogue_attention, catalogue_blocks, catalogue_general
from autograder.checks.mistake import (ANY, BLOCK_VALUES, CRASHES, MASKING, VALUES,  # noqa: F401
                                       Mistake, _m)

# -- the catalogue: the entries, by where they live ------------------------------------------
CATALOGUE = [*catalogue_attention.MISTAKES, *catalogue_blocks.MISTAKES, *catalogue_general.MISTAKES]
BY_ID = {m.id: m for m in CATALOGUE}


def declare(mistake):
    """Add a mistake to the catalogue (a course's own, or a test's), or replace the one with
    its id; returns it."""
    CATALOGUE[:] = [m for m in CATALOGUE if m.id != mistake.id] + [mistake]
    BY_ID[mistake.id] = mistake
    return mistake

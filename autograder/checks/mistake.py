"""A catalogued mistake (``Mistake``), the categories of checks mistakes explain, and ``_m``,
the short form the catalogue modules write entries in (``checks.catalogue`` gathers them).
"""

from dataclasses import dataclass, field

from autograder.checks.registry import CATEGORIES
from autograder.texts import bilingual

ANY = "*"  # a mistake any target can make

# Categories of the checks that compare values with the reference.
VALUES = frozenset({"numeric_vs_reference", "hidden_config"})
MASKING = frozenset({"masking", "mask_convention"})
# What a mistake that raises at some sizes (Tq != Tk) can make fail besides the values.
CRASHES = frozenset({"shape", "rows_sum_to_one", "gradient_flow", "batch_independence",
                     "inputs_untouched", "device_agnostic", "dtype", "memory_path", "causality"})
# What a sub-layer's value mistake can make fail in a block built on it.
BLOCK_VALUES = VALUES | {"masking", "layernorm_stats"}


@dataclass(frozen=True)
class Mistake:
    id: str  # instructor-facing, e.g. "sdpa.missing_scale"
    home: str  # the target it lives in (ANY: found by a probe in any target)
    title: object  # Bilingual: the mistake, named for the student
    hint: object  # Bilingual: what to change, where to look
    variants: tuple = ()  # flag sets: the reference with these bugs switched on
    explains: frozenset = field(default_factory=frozenset)  # categories of checks it can make fail
    triggers: frozenset | None = None  # categories whose failure calls for its symptom probe

    def __post_init__(self):
        unknown = (self.explains | (self.triggers or frozenset())) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"{self.id}: unknown categories {sorted(unknown)}")

    @property
    def called_for_by(self):
        """The categories of failed checks that make its symptom worth probing."""
        return self.explains if self.triggers is None else self.triggers


def _m(mistake_id, home, title, hint, variants=(), explains=VALUES, triggers=None):
    return Mistake(mistake_id, home, bilingual(*title), bilingual(*hint),
                   tuple(frozenset(v.split()) for v in variants), frozenset(explains),
                   None if triggers is None else frozenset(triggers))



"""Findings that follow from another, so that one failure is read once (issue: "a crash is one
finding", "consequences are never hinted as causes").

After the diagnosis (``checks.diagnosis``) has named what it can, ``derive`` groups what is left
of each target's failed checks:

- ``RAISES``: one error raised by the student's code (the same exception at the same line)
  that fails several checks of a target is one finding, titled with the error and its line;
  the checks it fails are listed under it and carry no hint of their own;
- ``FOLLOWS``: when a check that compares the target's values with the reference at the
  chapter's sizes fails and nothing names why, the same target's checks at other sizes
  (category ``hidden_config``: the hidden sizes, the sizes checks) fail because of it; they are
  listed under it, with no hint about hard-coded sizes or ``squeeze()``.

Both are ``records.Diagnosis`` records whose ``mistake`` is not an id of the catalogue
(``DERIVED``): the reports show them like a named mistake (its title, one hint, the checks it
explains), the counts of named mistakes leave them out. Never in ``forced`` mode: they say
nothing about correct code.
"""

import re

from autograder.records import Diagnosis
from autograder.texts import bilingual

RAISES, FOLLOWS = "raises", "follows"
DERIVED = (RAISES, FOLLOWS)
_RAISED = re.compile(r"[Yy]our code raised (?P<kind>[\w.]+)(?::.*?| at the hidden sizes)?(?: "
                     r"\((?P<where>[^()]*(?:\([^()]*\)[^()]*)*)\))?(?:\. .*)?$", re.S)


def _error(outcome):
    """(exception, where) of a check failed by an error the student's code raised, or None."""
    if outcome.status != "failed" or outcome.message is None:
        return None
    match = _RAISED.search(str(outcome.message.en))
    return (match.group("kind"), match.group("where")) if match else None


def derive(outcomes, diagnoses):
    """The derived findings (``Diagnosis`` records) for the failed checks no diagnosis explains."""
    explained = {c for d in diagnoses for c in d.explains}
    failed = {}
    for o in outcomes:
        if o.status in ("failed", "timeout") and o.check.id not in explained:
            failed.setdefault(o.check.target, []).append(o)
    found = []
    for target, left in failed.items():
        errors, unplaced = {}, []
        for o in left:
            key = _error(o)
            if key and key[1]:
                errors.setdefault(key, []).append(o)
            elif key:
                unplaced.append((key[0], o))
        for kind, o in unplaced:  # a sizes check says which error, not where: the one of its kind
            places = [key for key in errors if key[0] == kind]
            if len(places) == 1:
                errors[places[0]].append(o)
        grouped = set()
        order = {o.check.id: i for i, o in enumerate(outcomes)}
        for (kind, where), group in errors.items():
            group.sort(key=lambda o: order[o.check.id])
            if len(group) < 2:
                continue
            ids = tuple(o.check.id for o in group)
            grouped.update(ids)
            first = group[0].message
            found.append(Diagnosis(target, RAISES, bilingual(
                f"Satu galat menggagalkan {len(ids)} pemeriksaan: {first.id}",
                f"One error fails {len(ids)} checks: {first.en}"), bilingual(
                f"Perbaiki galat {kind} di {where} lebih dulu; pemeriksaan di bawah ini gagal karena "
                "galat itu saja, bukan karena hal lain.",
                f"Fix the {kind} at {where} first; the checks below fail because of that error "
                "alone, not for reasons of their own."), ids))
        rest = [o for o in left if o.check.id not in grouped]
        cause = next((o for o in rest if o.check.category == "numeric_vs_reference"
                      and o.status == "failed"), None)
        follow = tuple(o.check.id for o in rest if o.check.category == "hidden_config")
        if cause is not None and follow:
            found.append(Diagnosis(target, FOLLOWS, bilingual(
                f"Salah juga pada ukuran lain, karena kegagalan `{cause.check.id}` yang sama.",
                f"Wrong at other sizes too, because of the same failure as `{cause.check.id}`."),
                bilingual(f"Perbaiki `{cause.check.id}` lebih dulu; pemeriksaan ukuran di bawah ini "
                          "mengikutinya (bukan tanda ukuran yang ditulis tetap).",
                          f"Fix `{cause.check.id}` first; the size checks below follow from it (not a "
                          "sign of hard-coded sizes)."), follow))
    return found

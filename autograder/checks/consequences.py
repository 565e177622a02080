"""Findings that follow from another, so that one failure is read once (issue: "a crash is one
finding", "consequences are never hinted as causes").

After the diagnosis (``checks.diagnosis``) has named what it can, ``derive`` groups what is left
of each target's failed checks:

- ``RAISES``: one error raised by the student's code (the same exception at the same line)
  that fails several checks of a target is one finding, titled with the error and its line;
  the checks it fails are listed under it and carry no hint of their own;
- ``FOLLOWS``: when a check that compares the target's values with the reference fails and
  nothing names why (the first such check, e.g. a wiring check), the same target's other value
  checks (the whole block against the reference, the hidden sizes, the sizes checks) fail because
  of it; and where the target is right around its own sub-layers (one of its value checks
  passed) while a part's value check fails, its value checks fail because of the part's. They
  are listed under that failure, with no hint about hard-coded sizes or ``squeeze()``. So is a
  masking check whose weights were masked right but whose output still changes with the values of
  blocked keys, when none of the target's value checks passed: values mixed across positions
  (heads split by a plain view) reach the output that way too, and the mask is not the cause.

Both are ``records.Diagnosis`` records whose ``mistake`` is not an id of the catalogue
(``DERIVED``): the reports show them like a named mistake (its title, one hint, the checks it
explains), the counts of named mistakes leave them out. Never in ``forced`` mode: they say
nothing about correct code.
"""

import re

from autograder.checks import targets
from autograder.checks.verdicts import BLOCKED_VALUES_LEAK
from autograder.records import DERIVED, Diagnosis
from autograder.texts import bilingual

RAISES, FOLLOWS = DERIVED
VALUES = ("numeric_vs_reference", "hidden_config")  # what follows from a failed value check
_WHERE = r"(?: \((?P<where>[^()]*(?:\([^()]*\)[^()]*)*)\))?(?:\. .*)?$"
_RAISED = re.compile(r"[Yy]our code raised (?P<kind>[\w.]+)(?::.*?| at the hidden sizes)?" + _WHERE, re.S)
# the same message in Indonesian (grading.messages.student_error): where it raised, in its words
_RAISED_ID = re.compile(r"Kode Anda melempar (?P<kind>[\w.]+)(?::.*?| pada ukuran tersembunyi)?" + _WHERE, re.S)


def _error(outcome):
    """(exception, where) of a check failed by an error the student's code raised, or None."""
    if outcome.status != "failed" or outcome.message is None:
        return None
    match = _RAISED.search(str(outcome.message.en))
    return (match.group("kind"), match.group("where")) if match else None


def _where_id(message, where):
    """Where the error was raised, as the Indonesian message says it (``where``: the English)."""
    match = _RAISED_ID.search(str(message.id))
    return match.group("where") if match and match.group("where") else where


def derive(outcomes, diagnoses):
    """The derived findings (``Diagnosis`` records) for the failed checks no diagnosis explains."""
    explained = {c for d in diagnoses for c in d.explains}
    failed = {}
    for o in outcomes:
        if o.status in ("failed", "timeout") and o.check.id not in explained:
            failed.setdefault(o.check.target, []).append(o)
    found, rest, by_target = [], {}, {}
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
        by_target[target] = errors
    _to_parts(by_target)
    order = {o.check.id: i for i, o in enumerate(outcomes)}
    grouped = set()
    for target, errors in by_target.items():
        for (kind, where), group in errors.items():
            group.sort(key=lambda o: order[o.check.id])
            if len(group) < 2:
                continue
            ids = tuple(o.check.id for o in group)
            grouped.update(ids)
            first = next((o.message for o in group if _sizes(o.message) is None), group[0].message)
            smallest = next((_sizes(o.message) for o in group if _sizes(o.message)), None)
            # the quoted error is one check's; the smallest sizes, the sizes check's: said apart
            at = (bilingual(f" Ukuran terkecil yang ditemukan dengan galat yang sama: {smallest[0]}.",
                            f" The smallest sizes found with the same error: {smallest[1]}.")
                  if smallest else bilingual("", ""))
            found.append(Diagnosis(target, RAISES, bilingual(
                f"Satu galat menggagalkan {len(ids)} pemeriksaan: {_ended(first.id, at.id)}{at.id}",
                f"One error fails {len(ids)} checks: {_ended(first.en, at.en)}{at.en}"), bilingual(
                f"Perbaiki galat {kind} di {_where_id(first, where)} lebih dulu; pemeriksaan di bawah ini gagal karena "
                "galat itu saja, bukan karena hal lain.",
                f"Fix the {kind} at {where} first; the checks below fail because of that error "
                "alone, not for reasons of their own."), ids))
    for target, left in failed.items():
        rest[target] = [o for o in left if o.check.id not in grouped]
    for target, left in rest.items():
        cause = next((o for o in left if o.check.category == "numeric_vs_reference"
                      and o.status == "failed"), None)
        follow = [o for o in left if o is not cause and o.check.category in VALUES]
        if cause is None:
            continue
        own_wiring = any(o.passed and o.check.target == target and o.check.category == "numeric_vs_reference"
                         for o in outcomes)
        if not own_wiring:  # wrong without a mask too: values that reach the output by another way
            follow += [o for o in left if o.check.category == "masking" and _leaks(o)]
        part = next((c for p in targets.parts_of(target) for c in _value_causes(rest.get(p, ()))), None)
        if part is not None and own_wiring:  # right around its own sub-layers: the part's failure
            cause, follow = part, [o for o in left if o.check.category in VALUES]
        if follow:
            found.append(_follows(target, cause, tuple(o.check.id for o in follow)))
    return found


def _ended(text, followed_by):
    """``text`` ending a sentence when another follows it."""
    return text + "." if followed_by and not str(text).rstrip().endswith((".", "!", "?")) else text


def _to_parts(by_target):
    """Moves a target's checks failed by an error into the group of one of its parts failed by
    the same error at the same innermost line (a scaled_dot_product_attention that raises, and
    the MultiHeadAttention that calls it): one error, one finding, at its root."""
    for target, errors in by_target.items():
        for key in list(errors):
            for part in targets.parts_of(target):
                same = [k for k in by_target.get(part, {}) if k[0] == key[0] and _inner(k[1]) == _inner(key[1])]
                if same:
                    by_target[part][same[0]].extend(errors.pop(key))
                    break


def _inner(where):
    return where.split("; ")[-1]


def _sizes(message):
    """(id, en) of the sizes a sizes check (checks.search, shrunk to the smallest) failed at."""
    found = [re.match(rf"^{prefix} (.*?): {said} ", str(text), re.S) for text, prefix, said in (
        (message.id, "Salah pada ukuran", "kode Anda memunculkan"), (message.en, "Wrong at sizes", "your code raised"))]
    return tuple(m.group(1) for m in found) if all(found) else None


def _leaks(outcome):
    """Whether a masking check failed only because blocked keys' values reach the output (its
    weights were masked right): what values mixed across positions also do."""
    return outcome.status == "failed" and outcome.message is not None \
        and outcome.message.en == BLOCKED_VALUES_LEAK.en


def _value_causes(outcomes):
    return [o for o in outcomes if o.check.category == "numeric_vs_reference" and o.status == "failed"]


def _follows(target, cause, ids):
    name = cause.check.id
    return Diagnosis(target, FOLLOWS, bilingual(
        f"Gagal juga karena kegagalan `{name}` yang sama (di sini atau pada ukuran lain).",
        f"Also fails because of the same failure as `{name}` (here, or at other sizes)."),
        bilingual(f"Perbaiki `{name}` lebih dulu; pemeriksaan di bawah ini mengikutinya (bukan tanda "
                  "ukuran yang ditulis tetap, dan bukan kesalahan tersendiri).",
                  f"Fix `{name}` first; the checks below follow from it (not a sign of hard-coded "
                  "sizes, nor a mistake of their own)."), ids)

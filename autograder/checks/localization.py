"""Localize what the catalogue does not know: the first step of the student's computation
that differs from the reference's.

``localize(session, plan, outcomes, diagnoses)`` runs after the checks (``grader._advisory``:
it never changes a verdict; the worker that makes the trace is not trusted). For each target
with a failed check and no catalogued mistake (a diagnosis leads; a target built on a part that
has one is left alone too), the student's code runs at the chapter's sizes on public inputs,
with the reference's weights copied in, under the worker's tracer (``sandbox/tracing.py``):
every tensor a torch function made, with the student's cell and line. The reference's named
steps (``checks.reference_steps``) are looked for among those tensors, allowing any change of
layout (transpose, permute, reshape, heads split or merged: an affine map of indices), or one
head at a time for a per-head step. A step counts as found when it, or a step computed from it,
is found (a student may fuse steps: ``(q / √d_k) @ kᵀ``). The answer is the first step not
found whose own inputs were, "`q @ kᵀ` matches; the scaled scores do not (cell 5, line 12)":
the line is that of the first tensor after those inputs that is no step found (or the tensor
that holds the step's values in another arrangement).

Nothing is said when it is not sure: the returned result matches, no step was found at all, the
weights could not all be copied in, or the trace was cut short. A target has several runs
(attention: Tq != Tk, then Tq = Tk; the encoder block: post-LN, then pre-LN); code that computes
one right is tried on the next. Code that raises on a run is localized there (``_crash``) when
its traceback has a line of the student's: the first step not reached among the tensors made
before the error, at that line ("a crash is one finding, with the student's line").
"""

import re
from dataclasses import dataclass

import torch

from autograder.checks import reference_steps, targets
from autograder.records import Localization
from autograder.sandbox.process import StudentError
from autograder.texts import bilingual

RTOL, ATOL = 1e-3, 1e-4  # the same numbers, computed in another order or precision
BLOCKED = -1e4  # at or below: a blocked score (-inf, -1e9 and -1e4 read the same)
LAYOUT, PERMUTED = "layout", "permuted"
_FRAME = re.compile(r"^(?P<origin>.*?), line (?P<line>\d+)(?:, in (?P<name>.*))?$")  # the worker's frames


def localize(session, plan, outcomes, diagnoses=(), forced=False):
    """Localization records for the targets of ``outcomes`` that failed a check the catalogue
    does not explain (at most one per target); ``forced``: every target of ``outcomes``, as if
    all its checks had failed (the tests' probe of correct code, which must get none)."""
    from autograder.grading.messages import place  # grading imports the checks

    failed = {}
    for o in outcomes:
        if o.status in ("failed", "timeout") or forced:
            failed.setdefault(o.check.target, []).append(o.check.id)
    diagnosed = {d.target for d in diagnoses}
    explained = {c for d in diagnoses for c in d.explains}
    graded = {o.check.target for o in outcomes}
    found = []
    for name in targets.names():
        checks = [c for c in failed.get(name, ()) if c not in explained]
        if not checks or name in diagnosed or diagnosed.intersection(targets.parts_of(name)):
            continue
        if any(x.target in targets.parts_of(name) for x in found):
            continue  # the part's own first wrong step is the root
        outer = bool(targets.get(name).sublayers)
        right = {p for p in targets.parts_of(name) if p in graded and p not in failed}
        for run in reference_steps.cached_runs(name, plan.chapter):
            try:
                answer = _localize_run(session, run, outer)
            except StudentError as error:  # it raises on these inputs: where, if the student's line says
                answer = _crash(run, error, outer, right)
            if answer is not None:
                found.append(_record(run, answer, checks, place))
                break
    return tuple(found)


def _crash(run, error, outer, right):
    """A ``Found`` for a run that raised, or None: the first step not found among the tensors
    made before the error (``error.trace``), at the student's line where it raised (the
    traceback's frames in the student's code, never torch's). The line is the innermost frame,
    past frames in a function part of the target that passes all its own checks (``right``: the
    error is in what the target gives it, at the line that calls it); for a block (``outer``),
    the line of its own forward that the last tensor made before the error came from."""
    frames = [m for m in (_FRAME.match(str(w)) for w in error.where) if m]
    if not frames:
        return None  # no line of the student's: not sure where
    trace = getattr(error, "trace", None)
    entries = trace["entries"] if trace and not trace["dropped"] else []
    places = [(m["origin"], int(m["line"])) for m in frames]
    place = None
    if outer and entries and tuple(entries[-1].get("outer") or ()) in places:
        place = tuple(entries[-1]["outer"])
    via = None
    if place is None:
        inner = list(frames)
        while len(inner) > 1 and inner[-1]["name"] in right and targets.get(inner[-1]["name"]).kind == targets.FUNCTION:
            via = via or (inner[-1]["name"], inner[-1]["origin"], int(inner[-1]["line"]))
            inner.pop()
        place = (inner[-1]["origin"], int(inner[-1]["line"]))
    found = locate(run.steps, None, entries, outer) if entries else None
    step = found.step if found is not None else None
    after = found.after if found is not None else []
    return Found(step, after, place[0], place[1], raised=(error.type, _shapes(run), via))


def _shapes(run):
    return ", ".join("×".join(str(n) for n in a.shape) for a in run.args if isinstance(a, torch.Tensor))


def _localize_run(session, run, outer=False):
    """``locate``'s answer for one run, or None."""
    target = run.target
    if run.build is not None:
        args, kwargs = run.build
        obj, missing, mismatched = session.new_with_params(target, list(args), dict(kwargs),
                                                           dict(run.reference.named_parameters()))
        if missing or mismatched:
            return None
        target = obj
    result, trace = session.call_tracing(target, list(run.args), dict(run.kwargs))
    if trace["dropped"]:
        return None
    return locate(run.steps, result, trace["entries"], outer)


def locate(steps, result, entries, outer=False):
    """The first wrong step of ``steps`` given what the target returned and the trace's
    ``entries``: a ``Found``, or None. ``outer``:
    give the line of the target's own forward (a block: the line that calls the sub-layer),
    not the line inside a sub-layer."""
    prepared = [_prepare(e["value"]) if e["op"] != "input" else None for e in entries]
    matches, permuted, found = {}, {}, {}
    for step in steps:
        matches[step.name], permuted[step.name] = _search(step, prepared)
        if step.returned is not None:
            value = _returned(result, step.returned)
            found[step.name] = value is not None and _close_same_shape(value, step.value)
        else:  # a rearranging step: its dep's own tensor holds it too, a wrong arrangement does not
            found[step.name] = bool(matches[step.name]) and not (step.layout and permuted[step.name])
    if all(found[s.name] for s in steps if s.returned is not None):
        return None  # what it returns is right (here): nothing to localize
    if not any(found[s.name] for s in steps):
        return None  # nothing of the reference's computation found: not sure where it goes wrong
    effective = {s.name: found[s.name] or s.optional for s in steps}  # optional: never the first wrong
    for step in reversed(steps):  # a step found through a step computed from it (fused steps)
        effective[step.name] = effective[step.name] or any(
            effective[c.name] for c in steps if step.name in c.deps)
    frontier = [s for s in steps if not effective[s.name] and all(effective[d] for d in s.deps)]
    if not frontier:
        return None
    step = frontier[0]
    after = [d for d in step.deps if found[d]]
    # the tensors of the steps found, in any arrangement (split heads are Q's values too)
    taken = {i for s in steps if found[s.name] for i in (*matches[s.name], *permuted[s.name])}
    firsts = [min(matches[d]) for d in step.deps if matches.get(d)]
    anchor = max(firsts) if firsts else -1
    changed = step.returned is not None and bool(matches[step.name])
    if changed:  # computed right, then changed before it is returned
        anchor = min(matches[step.name])
        taken |= set(matches[step.name])
    seeds = {i for d in step.deps for i in matches.get(d, ())}
    if not step.deps:  # computed from the target's inputs
        seeds = {i for i, e in enumerate(entries) if e["op"] == "input"}
    if changed:
        seeds = {anchor}
    reshaped = changed and _reshaped(_returned(result, step.returned), step.value)
    # its values, right and in order, returned in another shape: where the returned tensor is made
    index = max(matches[step.name]) if reshaped else _line(
        step, entries, prepared, anchor, taken, permuted[step.name], seeds)
    origin, line = (None, None) if index is None else (
        entries[index]["outer"] if outer and entries[index].get("outer") else
        (entries[index]["origin"], entries[index]["line"]))
    if origin is None:
        line = None
    return Found(step, after, origin, line, changed, shape=reshaped or None)


def _reshaped(value, reference):
    """(its shape, the reference's) when ``value`` holds ``reference``'s values in the same order
    in another shape (a (B*T, D) result for (B, T, D)), else False."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() \
            or value.numel() != reference.numel() or tuple(value.shape) == tuple(reference.shape):
        return False
    if not _close(_canonical(value).flatten(), _canonical(reference).flatten()):
        return False
    return tuple(value.shape), tuple(reference.shape)


@dataclass(frozen=True)
class Found:
    step: object  # reference_steps.Step
    after: list  # the names of the steps found that it is computed from
    origin: str | None
    line: int | None
    changed: bool = False  # found right in the trace, then changed before it is returned
    raised: tuple | None = None  # (exception name, the inputs' shapes): the run raised there
    shape: tuple | None = None  # (returned shape, reference's shape): right values, another shape


def _record(run, found, checks, place):
    titles = {s.name: s.title for s in run.steps}
    step, after, origin, line = found.step, found.after, found.origin, found.line
    at = place(origin, line) if origin is not None else None
    where_id = f" ({at.id})" if at else ""
    where_en = f" ({at.en})" if at else ""
    if found.shape is not None:
        got, want = ("×".join(map(str, s)) for s in found.shape)
        text = bilingual(f"{step.title.id[:1].upper()}{step.title.id[1:]} berisi nilai solusi acuan, tetapi "
                         f"dikembalikan dengan bentuk {got}, bukan {want}{where_id}.",
                         f"{step.title.en[:1].upper()}{step.title.en[1:]} holds the reference's values but is "
                         f"returned with the shape {got}, not {want}{where_en}.")
    elif found.raised is not None:
        kind, shapes, via = found.raised
        if via is not None:  # raised inside a part that passes its own checks: what this line gives it
            inside = place(via[1], via[2])
            where_id = (f" di dalam `{via[0]}` ({inside.id}), yang lulus pemeriksaannya sendiri: periksa "
                        f"apa yang diberikan kepadanya{where_id}")
            where_en = (f" inside `{via[0]}` ({inside.en}), which passes its own checks: look at what "
                        f"it is given{where_en}")
        text = _raised_text(step, after, titles, kind, shapes, where_id, where_en)
    elif found.changed:
        text = bilingual(f"{step.title.id[:1].upper()}{step.title.id[1:]} dihitung dengan benar, lalu diubah "
                         f"lagi sebelum dikembalikan{where_id}.",
                         f"{step.title.en[:1].upper()}{step.title.en[1:]} is computed right, then changed "
                         f"before it is returned{where_en}.")
    elif after:
        first_id = " dan ".join(titles[a].id for a in after)
        first_en = " and ".join(titles[a].en for a in after)
        text = bilingual(f"Sama dengan solusi acuan sampai {first_id}; yang pertama berbeda: "
                         f"{step.title.id}{where_id}.",
                         f"Matches the reference up to {first_en}; the first difference: "
                         f"{step.title.en}{where_en}.")
    else:
        text = bilingual(f"Yang pertama berbeda dari solusi acuan: {step.title.id}{where_id}.",
                         f"The first difference from the reference: {step.title.en}{where_en}.")
    name = step.name if step is not None else "raises"
    return Localization(run.target, name, tuple(after), text, origin, line, tuple(checks))


def _raised_text(step, after, titles, kind, shapes, where_id, where_en):
    before = bilingual(f" sebelum {step.title.id}" if step else "", f" before {step.title.en}" if step else "")
    said = bilingual(f"kode Anda melempar {kind}{before.id} pada masukan berukuran {shapes}{where_id}",
                     f"your code raises {kind}{before.en} on inputs of shapes {shapes}{where_en}")
    if after:
        return bilingual(f"Sama dengan solusi acuan sampai {' dan '.join(titles[a].id for a in after)}; "
                         f"lalu {said.id}.",
                         f"Matches the reference up to {' and '.join(titles[a].en for a in after)}; "
                         f"then {said.en}.")
    return bilingual(f"{said.id[:1].upper()}{said.id[1:]}.", f"{said.en[:1].upper()}{said.en[1:]}.")


# -- matching --------------------------------------------------------------------------------
def _canonical(tensor):
    value = tensor.detach().to(torch.float64)
    return torch.where(value <= BLOCKED, torch.full_like(value, BLOCKED), value)


def _prepare(value):
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() == 0:
        return None
    flat = _canonical(value).flatten()
    if bool(torch.isnan(flat).any()):
        return (value.numel(), flat, None, tuple(value.shape))  # NaN: never a step of the reference
    return (value.numel(), flat, torch.sort(flat).values, tuple(value.shape))


def _search(step, prepared):
    """(entries holding the step in some layout, entries holding its values otherwise arranged)."""
    layout, permuted = _find(_canonical(step.value), prepared)
    if layout or step.head_axis is None:
        return layout, permuted
    per_head = [_find(_canonical(step.value.select(step.head_axis, h)), prepared)
                for h in range(step.value.size(step.head_axis))]
    if all(found for found, _ in per_head):
        return sorted({i for found, _ in per_head for i in found}), permuted
    return [], permuted + sorted({i for _, p in per_head for i in p})


def _find(reference, prepared):
    sorted_ref = torch.sort(reference.flatten()).values
    layout, permuted = [], []
    for index, entry in enumerate(prepared):
        if entry is None or entry[0] != reference.numel() or entry[2] is None:
            continue
        if not _close(entry[2], sorted_ref):
            continue
        (layout if _same_layout(reference, entry[1], entry[3]) else permuted).append(index)
    return layout, permuted


def _close(a, b):
    return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL))


def _close_same_shape(value, reference):
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != tuple(reference.shape) \
            or not value.is_floating_point():
        return False
    return _close(_canonical(value), _canonical(reference))


def _same_layout(reference, flat, shape):
    """Whether ``flat`` (the values of a tensor of ``shape``, flattened) holds ``reference`` at
    indices that are an affine function of its multi-index, arranged along the reference's own
    axes (``_along_axes``): any view, transpose, permute, reshape, head split or merge of it,
    but not a reshape that cuts across them (heads split from (B, T, D) by a plain
    ``view(B, H, T, d_k)``). The map is fitted on values that occur once, then checked on
    every element."""
    if reference.numel() == flat.numel() and _close(flat, reference.flatten()):
        return _along_axes(tuple(reference.shape), _row_major(reference.shape), shape)
    ref_flat = reference.flatten()
    order_ref, order_flat = torch.argsort(ref_flat), torch.argsort(flat)
    values = ref_flat[order_ref]
    gap = (values[1:] - values[:-1]).abs()
    wide = gap > 10 * (ATOL + RTOL * values[1:].abs())
    unique = torch.zeros_like(values, dtype=torch.bool)
    unique[1:-1] = wide[:-1] & wide[1:]
    if not bool(unique.any()):
        return False
    grid = torch.stack(torch.unravel_index(order_ref[unique], reference.shape), dim=1).to(torch.float64)
    design = torch.cat([grid, torch.ones(grid.size(0), 1, dtype=torch.float64)], dim=1)
    target = order_flat[unique].to(torch.float64).unsqueeze(1)
    try:
        solution = torch.linalg.lstsq(design, target, driver="gelsd").solution.squeeze(1)
    except RuntimeError:
        return False
    coefficients = torch.round(solution).to(torch.int64)
    full = torch.stack(torch.unravel_index(torch.arange(reference.numel()), reference.shape), dim=1)
    where = full @ coefficients[:-1] + coefficients[-1]
    if bool((where < 0).any()) or bool((where >= flat.numel()).any()):
        return False
    return _close(flat[where], ref_flat) and _along_axes(
        tuple(reference.shape), tuple(coefficients[:-1].tolist()), shape)


def _row_major(shape):
    strides, stride = [], 1
    for n in reversed(shape):
        strides.append(stride)
        stride *= n
    return tuple(reversed(strides))


def _along_axes(reference_shape, strides, shape):
    """Whether a tensor of ``shape`` (row-major) that holds the reference's element of
    multi-index i at flat index ``sum(i * strides)`` keeps the reference's axes apart: each of
    its axes is part of one reference axis (a head split of d_model) or whole reference axes
    (heads merged, or folded into the batch). In flat-index terms an axis of stride s and size
    n spans [s, s * n); one that spans part of a reference axis and any of another mixes them:
    a (B, T, D) projection viewed as (B, H, T, d_k) has an axis of size T spanning all of the
    heads and part of the positions. A tensor whose shape has the same sizes as the reference's
    in another order (T = H) cannot be told from a transpose and passes."""
    spans = [(s, s * n) for s, n in zip(strides, reference_shape) if n > 1]
    if any(s <= 0 for s, _ in spans):
        return False  # reversed or repeated: not a rearrangement of the reference's axes
    own = [(s, s * n) for s, n in zip(_row_major(shape), shape) if n > 1]
    for low, high in own:
        touched = [(a, b) for a, b in spans if a < high and low < b]
        if len(touched) > 1 and any(a < low or b > high for a, b in touched):
            return False
    return True


def _returned(result, position):
    if position == -1:
        return result if isinstance(result, torch.Tensor) else None
    if isinstance(result, (tuple, list)) and len(result) > position:
        return result[position] if isinstance(result[position], torch.Tensor) else None
    return None


def _line(step, entries, prepared, anchor, taken, permuted, seeds):
    """The entry where the student computes what should be ``step``, or None: the tensor that
    holds its values otherwise arranged; else the earlier of the first tensor made from the
    steps it is computed from (``seeds``: their entries) and the first tensor of its size after
    them; never a tensor of a step found or one they were computed from, nor a constant (a
    mask's fill)."""
    for index in permuted:
        if index > anchor and entries[index]["origin"] is not None:
            return index
    sizes = {step.value.numel()}
    if step.head_axis is not None:
        sizes.add(step.value.numel() // step.value.size(step.head_axis))
    upstream, stack = set(), [i for i in taken]
    while stack:  # what the steps found were computed from (a sub-layer's insides) is no candidate
        for parent in entries[stack.pop()]["inputs"]:
            if parent not in upstream:
                upstream.add(parent)
                stack.append(parent)
    made = sized = None
    for index in range(len(entries)):
        entry, ready = entries[index], prepared[index]
        if index in taken or index in upstream or entry["origin"] is None or ready is None:
            continue
        if ready[2] is not None and bool(ready[2][0] == ready[2][-1]):
            continue
        if made is None and seeds.intersection(entry["inputs"]):
            made = index
        if sized is None and index > anchor and ready[0] in sizes:
            sized = index
        if made is not None and sized is not None:
            break
    found = [i for i in (made, sized) if i is not None]
    return min(found) if found else None

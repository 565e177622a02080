"""Whether a fresh worker gave back what a recording claims (``checks.verification``): the
results of a replay compared with the recorded ones, all of a submission's at once.

A submission's replays give a few hundred small tensors. Compared one pair at a time (one
``torch.allclose`` each) that is most of the grader's time in the verification; here every
pair's form (structure, shapes, dtypes, plain data) is checked in Python and the numbers of all
pairs of one dtype in one pass, with the same verdict for each pair as ``same`` gives it.
"""

import torch

from autograder.sandbox.process import WorkerFailure
from autograder.sandbox.session import Session

TOLERANCE = (1e-5, 1e-6)  # rtol, atol: the same code on the same inputs, in another process


def gives_back(answers, outputs):
    """[whether ``answers[i]`` (a call's reply, or what stands for none: a StudentError, None)
    holds a result ``same`` as ``outputs[i]``] for every i, the tensors compared in one pass."""
    pending, owner, verdicts = [], [], []
    for index, (answer, output) in enumerate(zip(answers, outputs)):
        verdicts.append(False)
        if not isinstance(answer, dict):  # it raised (a StudentError), or no answer
            continue
        try:
            result = Session.call_result(answer)
        except WorkerFailure:
            continue
        pairs = []
        if _same_form_and_data(result, output, pairs):
            verdicts[index] = True
            pending += pairs
            owner += [index] * len(pairs)
    for index, close in zip(owner, _tensors_agree(pending)):
        if not close:
            verdicts[index] = False
    return verdicts


def same(a, b):
    """Equal results: tensors of one shape and dtype within TOLERANCE (NaN where NaN, exactly
    for integer and boolean tensors), sequences item by item, plain data equal."""
    pairs = []
    return _same_form_and_data(a, b, pairs) and all(_tensors_agree(pairs))


def _same_form_and_data(a, b, pairs):
    """``same`` but for the tensors' values: each pair of tensors of one shape and dtype is
    added to ``pairs`` (to be compared by ``_tensors_agree``)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        pairs.append((a, b))
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_form_and_data(x, y, pairs) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_form_and_data(a[k], b[k], pairs) for k in a)
    return a == b


def _tensors_agree(pairs):
    """[whether a and b agree] for each (a, b) of one shape and dtype: floating-point (and
    complex) within TOLERANCE with NaN equal to NaN, as ``torch.allclose(a, b, rtol, atol,
    equal_nan=True)``; other dtypes exactly, as ``torch.equal``. One pass per dtype: the pairs
    flattened end to end, the elements that disagree counted per pair."""
    verdicts = [True] * len(pairs)
    by_dtype = {}
    for index, (a, _) in enumerate(pairs):
        if a.numel():
            by_dtype.setdefault(a.dtype, []).append(index)
    rtol, atol = TOLERANCE
    for dtype, indices in by_dtype.items():
        got = torch.cat([pairs[i][0].reshape(-1) for i in indices])
        wanted = torch.cat([pairs[i][1].reshape(-1) for i in indices])
        if dtype.is_floating_point or dtype.is_complex:
            off = ~torch.isclose(got, wanted, rtol=rtol, atol=atol, equal_nan=True)
        else:
            off = got != wanted
        if not bool(off.any()):
            continue
        ends = torch.tensor([pairs[i][0].numel() for i in indices]).cumsum(0)
        counted = torch.cat([torch.zeros(1, dtype=torch.long), off.long().cumsum(0)[ends - 1]])
        for index, disagreeing in zip(indices, (counted[1:] - counted[:-1]).tolist()):
            verdicts[index] = disagreeing == 0
    return verdicts


def same_form(value, standin):
    """``value`` has the stand-in's form: a tensor of its shape, a sequence of its length
    whose items have the form of its items; anything else has any form."""
    if isinstance(standin, torch.Tensor):
        return isinstance(value, torch.Tensor) and tuple(value.shape) == tuple(standin.shape)
    if isinstance(standin, (tuple, list)):
        return (isinstance(value, (tuple, list)) and len(value) == len(standin)
                and all(same_form(v, s) for v, s in zip(value, standin)))
    return True


def nothing_finite(value):
    """``value`` holds floating-point numbers and none of them is finite (NaN or inf)."""
    found = []

    def walk(v):
        if isinstance(v, torch.Tensor):
            if v.is_floating_point() and v.numel():
                found.append(v)
        elif isinstance(v, (tuple, list)):
            for item in v:
                walk(item)
    walk(value)
    return bool(found) and not any(bool(torch.isfinite(t).any()) for t in found)

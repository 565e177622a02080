"""How the verification of recorded calls compares and sends its replays
(autograder/checks/verification.py, replay_results.py): all results compared at once give each
pair the verdict ``torch.allclose`` / ``torch.equal`` gives it, and a request identical to an
earlier one is sent once. tests/test_recorded.py grades the attacks themselves."""

import math

import torch

from autograder.checks import replay_results as results
from autograder.checks import verification
from autograder.sandbox import wire
from autograder.sandbox.process import StudentError

RTOL, ATOL = results.TOLERANCE


def _one_at_a_time(a, b):
    """The verdict of comparing one pair alone (what the verification did before)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if not a.is_floating_point():
            return bool(torch.equal(a, b))
        return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_one_at_a_time(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_one_at_a_time(a[k], b[k]) for k in a)
    return a == b


def _pairs():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 16, generator=generator)
    nan = x.clone()
    nan[0, 0, 0] = math.nan
    inf = x.clone()
    inf[1, 2, 3] = math.inf
    weights = torch.rand(2, 4, 5, 5, generator=generator, dtype=torch.float64)
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
    return [
        (x, x.clone()),
        (x, x + 1e-7),  # within the tolerance
        (x, x + 1e-3),  # outside
        (x, x * (1 + 3e-5)),  # outside rtol alone
        (nan, nan.clone()),  # NaN where NaN
        (nan, x),
        (inf, inf.clone()),
        (inf, -inf),
        ((x, weights), (x.clone(), weights.clone())),
        ((x, weights), (x.clone(), weights + 1e-4)),
        ((x, weights), [x.clone(), weights.clone()]),
        ((x, weights), (x.clone(),)),
        (x, x.double()),  # another dtype
        (x, x[:1]),  # another shape
        (mask, mask.clone()),
        (mask, ~mask),
        (torch.arange(5), torch.arange(5)),
        (torch.arange(5), torch.arange(5) + 1),
        (torch.empty(0, 3), torch.empty(0, 3)),
        ({"a": x, "b": 3}, {"a": x.clone(), "b": 3}),
        ({"a": x, "b": 3}, {"a": x.clone(), "b": 4}),
        (None, None),
        (x, None),
        (2.5, 2.5),
    ]


def test_all_results_at_once_get_the_verdict_each_gets_alone():
    pairs = _pairs()
    answers = [{"result": wire.encode_value(got)} for got, _ in pairs]
    verdicts = results.gives_back(answers, [wanted for _, wanted in pairs])
    alone = [_one_at_a_time(got, wanted) for got, wanted in pairs]
    assert verdicts == alone
    assert [results.same(got, wanted) for got, wanted in pairs] == alone
    assert any(alone) and not all(alone)


def test_no_answer_or_an_error_gives_nothing_back():
    x = torch.ones(3)
    assert results.gives_back([None, StudentError({"type": "E"}), {"result": wire.encode_value(x)}],
                              [x, x, x]) == [False, False, True]


class _Worker:
    """A session's ``batch`` that answers each call request with its ``x`` and notes what came."""

    def __init__(self, raises=()):
        self.sent, self.raises = [], set(raises)

    def batch(self, messages):
        self.sent.append([m["x"] for m in messages])
        replies = []
        for message in messages:
            if message["x"] in self.raises:
                replies.append(StudentError({"type": "ValueError"}))
                break
            replies.append({"x": message["x"]})
        return replies


def test_a_request_identical_to_an_earlier_one_is_sent_once():
    x = wire.encode_value(torch.arange(4.0))
    other = wire.encode_value(torch.arange(4.0) + 1)
    messages = [
        {"target": {"func": "f"}, "seed": 0, "args": x, "x": 0},
        {"target": {"func": "f"}, "seed": 0, "args": x, "x": 0},  # the same request
        {"target": {"func": "f"}, "seed": 0, "args": other, "x": 1},  # other bytes
        {"target": {"func": "f"}, "seed": 1, "args": x, "x": 2},  # another seed
        {"target": {"obj": "o1", "path": "f"}, "seed": 0, "args": x, "x": 3},  # another target
        {"target": {"func": "f"}, "seed": 0, "args": wire.encode_value(torch.arange(4.0)), "x": 0},
    ]
    worker = _Worker()
    answers = verification._answers(worker, messages)
    assert worker.sent == [[0, 1, 2, 3]]
    assert [a["x"] for a in answers] == [0, 0, 1, 2, 3, 0]


def test_the_requests_after_one_that_raised_are_sent_again():
    messages = [{"target": {"func": "f"}, "seed": i, "x": i} for i in range(40)]
    worker = _Worker(raises={3, 20})
    answers = verification._answers(worker, messages)
    assert [isinstance(a, StudentError) for a in answers] == [i in (3, 20) for i in range(40)]
    assert [a["x"] for i, a in enumerate(answers) if i not in (3, 20)] == [i for i in range(40) if i not in (3, 20)]
    assert max(len(sent) for sent in worker.sent) <= verification.BATCH

"""The mistake catalogue (autograder/checks/catalogue.py, variants.py, diagnosis.py) and the size search (checks/sizes.py),
without a sandbox: the real worker runs trusted corpus files in this process
(autograder/sandbox/inprocess.py, the one bench/checks_alone.py uses).

- the catalogue is well-formed and bilingual (English all English, Indonesian with the course's
  terms: kueri, kunci, nilai);
- the variant engine with no bug switched on is the reference solution, and every variant
  differs from it on the probes (no dead entries);
- ``diagnose(..., forced=True)`` (every target probed as if every check had failed) names a
  sample of corpus mutants' mistakes and nothing on the reference or a sample of correct
  submissions (tests/test_corpus.py does so for every file, through the sandbox);
- the size search reports the smallest failing configuration, never generates a hidden size
  and is deterministic.

The corpus tests (tests/test_corpus.py) grade the same files through the real sandbox.
"""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import autograder.checks
import solutions
from autograder import config
from autograder import plan as plans
from autograder.checks import catalogue, diagnosis, variants
from autograder.checks.registry import CheckFailed
from autograder.records import Outcome
from autograder.checks.reference_weights import deterministic_weights
from autograder.sandbox import inprocess
from autograder.sandbox.process import StudentError
from autograder.texts import bilingual

autograder.checks.load()  # the check modules in their order (sizes.py needs the others first)
sizes = autograder.checks.sizes
from autograder.checks import search, targets  # noqa: E402
CORPUS = Path(__file__).resolve().parent / "corpus"
COURSE = config.load()
PLANS = {name: plans.resolve(COURSE, name) for name in COURSE.assignments}


def load(path):
    """A session whose worker runs the corpus file ``path`` in this process (trusted code)."""
    return inprocess.session(path.read_text(encoding="utf-8"), origin=path.name)


def reference_session():
    """A session whose worker runs the reference solution in this process."""
    return inprocess.session("from solutions import *", origin="solutions")


def forced(session, assignment):
    plan = PLANS[assignment]
    outcomes = [Outcome(c.info, "failed", 0.0) for c in plan.checks]
    return diagnosis.diagnose(session, plan, outcomes, forced=True)


def header(path, key):
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        match = re.match(rf"#\s*{key}:\s*(.*)$", line)
        if match:
            return match.group(1).strip()
    return None


MUTANTS = sorted(p for p in CORPUS.glob("*/mutants/*.py") if header(p, "diagnosis") not in (None, "none"))
# A few of each kind here, in-process; tests/test_corpus.py runs every file through the sandbox.
SAMPLE_CORRECT = [CORPUS / a / "correct" / f"{n}.py" for a, n in (
    ("attention", "head_loop"), ("attention", "neg1e9_where_reshape"), ("encoder", "exp_log_sequential"),
    ("decoder", "float64_where_einsum"), ("transformer", "computed_pe_helpers"))]
SAMPLE_MUTANTS = [CORPUS / a / "mutants" / f"{n}.py" for a, n in (
    ("attention", "no_scale"), ("attention", "causal_tril"), ("attention", "mha_split_without_transpose"),
    ("attention", "size_batch_one_squeeze"), ("encoder", "pe_sin_cos_swapped"), ("encoder", "ffn_gelu_tanh"),
    ("encoder", "enc_pre_post_swapped"), ("decoder", "dec_raw_memory"), ("decoder", "dec_causal_mask_tril"),
    ("transformer", "mistake_no_sqrt"), ("transformer", "mistake_no_zero_grad"),
    ("transformer", "mistake_greedy_all_positions"))]


# -- the catalogue ---------------------------------------------------------------------------------
def _prose(text):
    """Text without its code spans."""
    return re.sub(r"`[^`]*`", " ", text)


INDONESIAN = re.compile(r"\b(yang|dan|tidak|bukan|dengan|untuk|harus|dari|pada|atau|setiap|adalah)\b")
ENGLISH = re.compile(r"\b(the|is|are|of|with|not|and|to|instead|must|from|its|each|every|only)\b", re.I)


def test_catalogue_is_well_formed():
    ids = [m.id for m in catalogue.CATALOGUE]
    assert len(ids) == len(set(ids)), "a mistake id is declared twice"
    prefixes = {t.name: t.prefix for t in targets.TARGETS.values()}
    for m in catalogue.CATALOGUE:
        if m.home == catalogue.ANY:
            assert "." not in m.id, m.id
        else:
            assert m.id.startswith(prefixes[m.home] + "."), (m.id, m.home)
        assert m.explains, m.id
        for text in (m.title, m.hint):
            assert text.id.strip() and text.en.strip(), m.id
        assert all(flags for flags in m.variants), m.id


@pytest.mark.parametrize("mistake", catalogue.CATALOGUE, ids=lambda m: m.id)
def test_texts_are_in_their_language(mistake):
    for text in (mistake.title, mistake.hint):
        english, indonesian = _prose(text.en), _prose(text.id)
        assert not INDONESIAN.search(english), f"{mistake.id}: Indonesian words in English: {text.en}"
        assert not ENGLISH.search(indonesian), f"{mistake.id}: English words in Indonesian: {text.id}"
        # the course's terms: kueri (query), kunci (key), nilai (value); never the English words
        assert not re.search(r"\b(query|queries|keys?|values?)\b", indonesian), \
            f"{mistake.id}: use kueri / kunci / nilai in Indonesian: {text.id}"


def test_variant_engine_without_bugs_is_the_reference():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, t, 6, generator=g, dtype=torch.float64) for t in (4, 5, 5))
    mask = torch.rand(4, 5, generator=g) > 0.6
    mask[:, 0] = False
    for m in (None, mask):
        ref = solutions.scaled_dot_product_attention(q, k, v, m)
        got = variants._sdpa(q, k, v, m, frozenset())
        assert all(torch.allclose(a, b) for a, b in zip(got, ref))
    assert torch.equal(variants._causal(7, frozenset()), solutions.causal_mask(7))
    assert torch.allclose(variants._pe(11, 10, frozenset()).float(), solutions.positional_encoding(11, 10))

    def weights(module):
        module = deterministic_weights(module.double().eval(), 3)
        return module, {p: t.detach() for p, t in module.state_dict().items()}

    mha, P = weights(solutions.MultiHeadAttention(12, 3))
    x, kv = torch.randn(2, 4, 12, dtype=torch.float64), torch.randn(2, 5, 12, dtype=torch.float64)
    pad = torch.zeros(2, 1, 1, 5, dtype=torch.bool)
    pad[0, ..., 3:] = True
    with torch.no_grad():
        for m in (None, pad):
            assert all(torch.allclose(a, b) for a, b in zip(
                variants._mha(P, "", x, kv, kv, m, 3, frozenset()), mha(x, kv, kv, m)))
        ffn, P = weights(solutions.FeedForward(12, 10))
        assert torch.allclose(variants._ffn(P, "", x, frozenset()), ffn(x))
        for prenorm in (False, True):
            enc, P = weights(solutions.EncoderBlock(12, 3, 10, prenorm=prenorm))
            y = torch.randn(2, 5, 12, dtype=torch.float64)
            assert torch.allclose(variants._enc(P, y, pad, prenorm, 3, frozenset()), enc(y, pad))
        dec, P = weights(solutions.DecoderBlock(12, 3, 10))
        assert all(torch.allclose(a, b) for a, b in zip(variants._dec(P, x, kv, 3, frozenset()), dec(x, kv)))


def test_every_variant_differs_from_the_reference_on_the_probes():
    """A variant the probes cannot tell from the reference could never be named."""
    diagnoser = {a: diagnosis.Diagnoser(reference_session(), plan, []) for a, plan in PLANS.items()}
    where = {targets.SDPA: "attention", targets.CAUSAL: "attention", targets.MHA: "attention",
             targets.PE: "encoder", targets.FFN: "encoder", targets.ENC: "encoder",
             targets.DEC: "decoder", targets.SHIFT: "transformer", targets.TRANSFORMER: "transformer",
             targets.TRAIN: "transformer", targets.GREEDY: "transformer"}
    dead = []

    def differs(target, flags):  # on a probe the diagnosis looks at (square and cube: where it raised)
        d = diagnoser[where[target]]
        return any(d.distinct(target, d.probe(target, kind), flags, frozenset())
                   for kind in ("standard", "square", "cube"))

    for m in catalogue.CATALOGUE:
        homes = list(where) if m.home == catalogue.ANY else [m.home]
        for flags in m.variants:
            if not any(differs(h, flags) or any(differs(u, flags) for u in where if h in targets.parts_of(u))
                       for h in homes):
                dead.append(f"{m.id} {sorted(flags)}")
    assert not dead, "variants that equal the reference on every probe:\n" + "\n".join(dead)


# -- diagnose, with every target probed --------------------------------------------------------------
@pytest.mark.parametrize("path", SAMPLE_CORRECT, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_no_correct_submission_is_diagnosed(path):
    found = forced(load(path), path.parent.parent.name)
    assert not found, [(d.target, d.mistake) for d in found]


@pytest.mark.parametrize("assignment", list(PLANS))
def test_the_reference_is_not_diagnosed(assignment):
    assert not forced(reference_session(), assignment)


@pytest.mark.parametrize("path", SAMPLE_MUTANTS, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_the_mutant_is_diagnosed(path):
    wanted = header(path, "diagnosis")
    found = forced(load(path), path.parent.parent.name)
    assert wanted in [d.mistake for d in found], [(d.target, d.mistake) for d in found]


def test_every_mistake_has_a_mutant():
    named = {header(p, "diagnosis") for p in MUTANTS}
    missing = [m.id for m in catalogue.CATALOGUE if m.id not in named]
    assert not missing, f"no corpus mutant declares `# diagnosis:` for {', '.join(missing)}"


def test_diagnose_costs_nothing_without_failures():
    session = reference_session()
    plan = PLANS["attention"]
    passed = [Outcome(c.info, "passed", c.points) for c in plan.checks]
    loaded = session.zygote.requests
    assert diagnosis.diagnose(session, plan, passed) == ()
    assert session.zygote.requests - loaded == 0


def test_explains_names_only_failed_checks_of_the_kinds_the_mistake_causes():
    """sdpa.missing_scale explains sdpa's and MultiHeadAttention's value checks, not an
    unrelated failure (here: an in-place edit) that stays a finding of its own."""
    plan = PLANS["attention"]
    session = load(CORPUS / "attention" / "mutants" / "no_scale.py")
    failed = {"sdpa.numeric", "sdpa.sizes", "sdpa.no_inplace", "mha.sizes"}
    outcomes = [Outcome(c.info, "failed" if c.id in failed else "passed", 0.0) for c in plan.checks]
    (found,) = diagnosis.diagnose(session, plan, outcomes)
    assert found.mistake == "sdpa.missing_scale"
    assert found.target == targets.SDPA
    assert set(found.explains) == {"sdpa.numeric", "sdpa.sizes", "mha.sizes"}


# -- the size search -----------------------------------------------------------------------------------
def _search_ctx(check_id="mha.sizes"):
    plan = PLANS["attention"]
    return SimpleNamespace(StudentError=StudentError, plan=plan, chapter=plan.chapter, hidden=plan.hidden,
                           avoid=plan.hidden, check=SimpleNamespace(id=check_id))


def _run_search(evaluate, valid=lambda c: True, edges=(), examples=10):
    from hypothesis import strategies as st

    ctx = _search_ctx()
    tried = []

    def tracked(c):
        tried.append(dict(c))
        return evaluate(c)

    runner = search.Search(ctx, {"b": 1, "t": 1}, tracked, valid, lambda c: f"B={c['b']}, T={c['t']}",
                           lambda c: 1)
    strategy = st.fixed_dictionaries({"b": st.integers(1, 4), "t": targets.lengths(st)})
    try:
        runner.run(list(edges), strategy, search.seed_of(ctx), examples)
    except CheckFailed as failed:
        return failed.message, tried
    return None, tried


def _fails_when(predicate):
    def evaluate(c):
        if predicate(c):
            raise CheckFailed(bilingual("salah", "wrong"))
    return evaluate


def test_search_reports_the_smallest_failing_configuration():
    message, _ = _run_search(_fails_when(lambda c: c["t"] >= 65), edges=[dict(b=2, t=100)])
    assert message.en == "Wrong at sizes B=1, T=65: wrong"
    assert message.id == "Salah pada ukuran B=1, T=65: salah"


def test_search_shrinks_what_it_generates():
    message, _ = _run_search(_fails_when(lambda c: c["b"] >= 3 and c["t"] >= 5))
    assert message is not None and message.en.startswith("Wrong at sizes B=3, T=5:")


def test_search_passes_within_its_budget_and_is_deterministic():
    message, tried = _run_search(_fails_when(lambda c: False), edges=[dict(b=1, t=1), dict(b=2, t=70)])
    assert message is None
    assert tried[:2] == [dict(b=1, t=1), dict(b=2, t=70)]  # the edges first
    assert len(tried) <= 2 + 10
    _, again = _run_search(_fails_when(lambda c: False), edges=[dict(b=1, t=1), dict(b=2, t=70)])
    assert again == tried


def test_search_never_generates_a_hidden_size():
    ctx = _search_ctx()
    _, tried = _run_search(_fails_when(lambda c: False), valid=lambda c: search.clear(ctx, c, ("b", "t")),
                           examples=40)
    hidden = search.hidden_numbers(ctx)
    assert tried and all(c["b"] == 1 or c["b"] not in hidden for c in tried)
    assert all(c["t"] == 1 or c["t"] not in hidden for c in tried)


def test_edges_move_past_hidden_sizes():
    ctx = _search_ctx()
    h = ctx.hidden
    valid = lambda c: search.clear(ctx, c, ("b", "heads", "dk"), derived=(("heads", "dk"),))  # noqa: E731
    (edge,) = search.repaired_edges(ctx, [dict(b=h.batch, heads=h.num_heads, dk=1)], valid, ("b", "heads", "dk"))
    assert edge["b"] > h.batch and edge["heads"] > h.num_heads and edge["dk"] == 1
    assert search.repaired_edges(ctx, [dict(b=1, heads=1, dk=1)], valid, ("b", "heads", "dk")) == [dict(b=1, heads=1, dk=1)]


def test_a_student_error_is_a_failure_of_that_configuration():
    def evaluate(c):
        if c["t"] == 1:
            raise StudentError({"type": "IndexError", "message": "index 1 is out of bounds", "where": []})
    message, _ = _run_search(evaluate, edges=[dict(b=2, t=1)])
    assert message.en == "Wrong at sizes B=1, T=1: your code raised IndexError: index 1 is out of bounds"
    assert message.id == "Salah pada ukuran B=1, T=1: kode Anda memunculkan IndexError: index 1 is out of bounds"


def test_every_target_has_a_sizes_check():
    for check_id in ("sdpa.sizes", "mha.sizes", "pe.sizes", "ffn.sizes", "enc.sizes", "dec.sizes"):
        assert any(c.id == check_id for plan in PLANS.values() for c in plan.checks), check_id

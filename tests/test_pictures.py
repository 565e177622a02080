"""Pictures in a student's feedback (autograder/pictures.py collects the numbers from the worker,
autograder/feedback_html.py draws them): public inputs at the chapter's sizes, the reference
beside the student's numbers, blocked positions that got weight marked, and a page that is safe
to open and requests nothing."""

import re
from html.parser import HTMLParser

import pytest

import solutions
from autograder import feedback_html, loader, pictures
from autograder import plan as plans
from autograder.grading import CONTRACT_NAMES
from autograder.records import Outcome, Picture, StudentResult
from autograder.report import write_student
from autograder.sandbox.process import Limits
from autograder.sandbox.session import Session
from autograder.texts import bilingual

from conftest import ROOT

CORPUS = ROOT / "tests" / "corpus"
EXAMPLES = ROOT / "examples" / "submissions"


def draw(path, assignment):
    """The pictures of one submission, as grading collects them after the checks (here every
    check counts as passed, so every drawing is tried)."""
    plan = plans.load(assignment)
    loaded = loader.load(path)
    session = Session(loaded.chunks, CONTRACT_NAMES, solutions,
                      limits=Limits(memory_bytes=plan.limits.memory_mb * 1024 * 1024),
                      startup_timeout=plan.limits.startup_timeout,
                      request_timeout=plan.limits.request_timeout, max_restarts=1)
    try:
        session.load()
        outcomes = tuple(Outcome(c.info, "passed", c.points) for c in plan.checks)
        return plan, pictures.collect(session, plan, outcomes)
    finally:
        session.close()


def result_with(pictures_, student="ani", assignment="attention", **changes):
    plan = plans.load(assignment)
    outcomes = tuple(Outcome(c.info, "passed", c.points) for c in plan.checks)
    return StudentResult(student, assignment, "x/attention.ipynb", outcomes=outcomes,
                         pictures=tuple(pictures_), **changes)


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def assert_requests_nothing(page):
    """No element that runs or loads anything: no script, no external link or image, no
    event handler; only same-document (#id) and data: references."""
    parser = Tags()
    parser.feed(page)
    names = {tag for tag, _ in parser.tags}
    assert not names & {"script", "img", "iframe", "link", "object", "embed", "base"}, names
    for tag, attrs in parser.tags:
        for key, value in attrs.items():
            assert not key.startswith("on"), (tag, key)
            if key in ("src", "href", "xlink:href", "action"):
                assert value.startswith(("#", "data:")), (tag, key, value)
    assert "@import" not in page and "url(http" not in page


def by_target(drawn):
    return {(p.target, p.kind): p for p in drawn}


def close(a, b, atol=2e-3):
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y, atol) for x, y in zip(a, b))
    return a is not None and b is not None and abs(a - b) <= atol


def dims(value):
    """Every length along every axis of nested lists."""
    if not isinstance(value, list):
        return set()
    found = {len(value)}
    for item in value:
        found |= dims(item)
    return found


@pytest.fixture(scope="module")
def correct_attention():
    return draw(EXAMPLES / "andi" / "attention" / "attention.ipynb", "attention")


def test_correct_attention_matches_the_reference_at_the_chapter_sizes(correct_attention):
    plan, drawn = correct_attention
    found = by_target(drawn)
    c = plan.chapter
    sdpa = found[("scaled_dot_product_attention", "attention_weights")].data
    mha = found[("MultiHeadAttention", "attention_weights")].data
    assert mha["same_weights"] is True
    assert (len(mha["student"]), len(mha["student"][0]), len(mha["student"][0][0])) == \
        (c.num_heads, c.length, c.length)
    assert len(sdpa["student"]) == 1 and len(sdpa["mask"]) == c.length
    for data in (sdpa, mha):
        assert close(data["student"], data["reference"])
        assert data["mask"] == solutions.causal_mask(c.length).tolist()
    # Public sizes only: nothing in the data has a length that only the hidden sizes use.
    hidden_only = {plan.hidden.d_model, plan.hidden.d_ff, plan.hidden.length} - set(vars(c).values())
    for picture in drawn:
        assert not dims(picture.data.get("student")) & hidden_only, picture.kind


def test_page_draws_each_picture_and_finds_no_leak(correct_attention):
    plan, drawn = correct_attention
    page = feedback_html.feedback_html(result_with(drawn), "id", plan.title)
    figures = re.findall(r'<figure class="picture" data-kind="(\w+)">.*?(<svg.*?</svg>)', page, re.S)
    assert [kind for kind, _ in figures] == ["attention_weights", "attention_weights"]
    for _, svg in figures:
        assert svg.count("<path") > 20  # the cells are drawn as vector shapes
    assert "Tidak ada posisi diblokir yang mendapat bobot." in page
    assert page == feedback_html.feedback_html(result_with(drawn), "id", plan.title)  # deterministic


def test_mask_ignored_is_marked_where_blocked_positions_got_weight():
    plan, drawn = draw(CORPUS / "attention" / "mutants" / "mha_mask_ignored.py", "attention")
    mha = by_target(drawn)[("MultiHeadAttention", "attention_weights")].data
    blocked = [(h, r, c) for h, head in enumerate(mha["student"]) for r, row in enumerate(head)
               for c, weight in enumerate(row) if mha["mask"][r][c] and weight > 1e-6]
    assert blocked, "the mutant ignores the mask: blocked positions get weight"
    assert all(mha["reference"][h][r][c] == 0 for h, r, c in blocked)
    page = feedback_html.feedback_html(result_with(drawn), "en", plan.title)
    assert f"{len(blocked)} blocked positions got weight." in page
    assert page.count('stroke: #cf222e') >= len(blocked)  # each one framed in red


def test_decoder_without_causal_mask_shows_outputs_that_see_the_future():
    plan, drawn = draw(CORPUS / "decoder" / "mutants" / "dec_no_causal_mask.py", "decoder")
    found = by_target(drawn)
    causality = found[("DecoderBlock", "causality")].data
    t = plan.chapter.decoder_length
    assert len(causality["student"]) == t and len(causality["student"][0]) == t
    future = [(r, c) for r in range(t) for c in range(r)]
    assert all(causality["reference"][r][c] <= 1e-6 for r, c in future)
    assert all(causality["reference"][r][c] > 1e-3 for r in range(t) for c in range(r, t))
    assert any(causality["student"][r][c] > 1e-3 for r, c in future)
    cross = found[("DecoderBlock", "attention_weights")].data
    assert cross["mask"] is None and len(cross["student"][0][0]) == plan.chapter.length
    page = feedback_html.feedback_html(result_with(drawn, assignment="decoder"), "en")
    assert re.search(r"\d+ cells see the future\.", page)


def test_correct_decoder_and_positional_encoding():
    _, drawn = draw(CORPUS / "decoder" / "correct" / "head_loop_sequential.py", "decoder")
    causality = by_target(drawn)[("DecoderBlock", "causality")].data
    assert causality["same_weights"] and close(causality["student"], causality["reference"])
    _, drawn = draw(CORPUS / "encoder" / "mutants" / "pe_sin_cos_swapped.py", "encoder")
    pe = by_target(drawn)[("positional_encoding", "positional_encoding")].data
    assert not close(pe["student"], pe["reference"])
    page = feedback_html.feedback_html(result_with(drawn, assignment="encoder"), "id")
    assert 'data-kind="positional_encoding"' in page and "Selisih terbesar" in page


def test_code_that_cannot_run_gives_no_pictures_and_no_error():
    _, drawn = draw(CORPUS / "attention" / "mutants" / "stub_not_implemented.py", "attention")
    assert drawn == ()


def test_nan_weights_are_stored_as_none_and_drawn_as_nan():
    nan = float("nan")
    picture = Picture("attention_weights", "scaled_dot_product_attention", bilingual("a", "a"),
                      {"student": pictures.numbers(__import__("torch").tensor([[[nan, 0.5], [0.2, 0.8]]])),
                       "reference": [[[1.0, 0.0], [0.2, 0.8]]], "mask": [[False, True], [False, False]],
                       "same_weights": True})
    assert picture.data["student"][0][0][0] is None
    record = StudentResult.loads(result_with([picture]).dumps())  # survives record.json
    page = feedback_html.feedback_html(record, "en")
    assert ">NaN<" in page and "There are NaN or inf values." in page


def test_student_text_is_escaped_and_the_page_requests_nothing(tmp_path):
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)>\x1b[31m'
    plan = plans.load("attention")
    outcomes = [Outcome(c.info, "failed", 0.0, bilingual(f"gagal {evil}", f"failed {evil} `code`"))
                for c in plan.checks]
    result = StudentResult(evil, "attention", f"/x/{evil}.ipynb", outcomes=tuple(outcomes),
                           problems=(bilingual(evil, evil),))
    folder = write_student(tmp_path, result, plan.title, "en")
    page = (folder / "feedback.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<img" not in page and "\x1b" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<code>code</code>" in page  # code spans are ours to format, after escaping
    assert "Content-Security-Policy" in page
    assert_requests_nothing(page)
    assert (folder / "feedback.md").exists() and (folder / "record.json").exists()


def test_hidden_cell_output_shows_hints_problems_and_pictures(correct_attention):
    plan, drawn = correct_attention
    outcomes = [Outcome(c.info, "passed" if c.target != "MultiHeadAttention" else "failed", 0.0,
                        None if c.target != "MultiHeadAttention" else bilingual("salah", "wrong"))
                for c in plan.checks]
    result = StudentResult("ani", "attention", None, outcomes=tuple(outcomes),
                           problems=(bilingual("Sel 3: SyntaxError", "Cell 3: SyntaxError"),),
                           pictures=drawn)
    [first] = feedback_html.hidden_cell_output(result, "scaled_dot_product_attention", "id")
    [mha] = feedback_html.hidden_cell_output(result, "MultiHeadAttention", "id")
    assert first["output_type"] == "display_data"
    assert "Sel 3: SyntaxError" in first["data"]["text/html"]  # the problems: first cell only
    assert "SyntaxError" not in mha["data"]["text/html"]
    text = mha["data"]["text/html"]
    assert "Petunjuk" in text and plan.checks[-1].hint["id"].split("`")[0][:20] in text
    assert "<svg" in text and "<script" not in text
    assert feedback_html.hidden_cell_output(result, "positional_encoding", "id") == []
    [again] = feedback_html.hidden_cell_output(result, "scaled_dot_product_attention", "id",
                                               shown="Sel 3: SyntaxError")
    assert "SyntaxError" not in again["data"]["text/html"]  # the cell's text shows it already

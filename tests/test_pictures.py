"""Pictures in a student's feedback (autograder/pictures.py collects the numbers from the worker,
autograder/feedback_html.py draws them): public inputs at the chapter's sizes, the reference
beside the student's numbers, blocked positions that got weight marked, and a page that is safe
to open and requests nothing."""

import re
from html.parser import HTMLParser

import pytest

import solutions
from autograder import loading
from autograder.checks import pictures
from autograder.reports import feedback_html, svg
from autograder import plan as plans
from autograder.checks import targets
from autograder.records import Outcome, Picture, StudentResult
from autograder.reports import write_student
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
    loaded = loading.load(path)
    session = Session(loaded.chunks, targets.names(), solutions,
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


CELL = re.compile(r'<rect class="cell" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="[\d.]+" '
                  r'fill="(#[0-9a-f]{6})"/>')
LEAK = re.compile(r'<rect class="leak" x="([\d.]+)" y="([\d.]+)"')


def figures(page):
    """{kind: [svg, ...]} of every picture on a page."""
    found = {}
    for kind, markup in re.findall(r'<figure class="picture" data-kind="(\w+)">.*?(<svg.*?</svg>)', page, re.S):
        found.setdefault(kind, []).append(markup)
    return found


def heatmaps(markup):
    """Each heatmap of a picture, in drawing order (yours before correct): its cells as
    {(row, column): fill} and the (row, column) of its red frames."""
    out = []
    for part in markup.split('<g class="heatmap">')[1:]:
        cells = [(float(x), float(y), float(size), fill) for x, y, size, fill in CELL.findall(part)]
        left, top = min(x for x, _, _, _ in cells), min(y for _, y, _, _ in cells)
        size = cells[0][2]
        where = {(round((y - top) / size), round((x - left) / size)): fill for x, y, _, fill in cells}
        frames = {(int((float(y) - top) // size), int((float(x) - left) // size))
                  for x, y in LEAK.findall(part)}
        out.append((where, frames))
    return out


def lightness(fill):
    r, g, b = (int(fill[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def assert_colours_follow(values, cells):
    """A heavier weight is drawn darker (a sequential colormap): every pair of cells whose
    numbers differ clearly is ordered the same way by lightness."""
    flat = [((r, c), v) for r, row in enumerate(values) for c, v in enumerate(row)]
    assert len({cells[place] for place, _ in flat}) > 1
    for a, x in flat:
        for b, y in flat:
            if x is not None and y is not None and x > y + 0.1:
                assert lightness(cells[a]) < lightness(cells[b]), (a, x, b, y)


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
    found = figures(page)
    assert list(found) == ["attention_weights"] and len(found["attention_weights"]) == 2
    pictures_ = [p for p in drawn if p.kind == "attention_weights"]
    for picture, markup in zip(pictures_, found["attention_weights"]):
        data = picture.data
        heads, t = len(data["student"]), len(data["mask"])
        blocked = sum(map(sum, data["mask"]))
        # every weight is a cell, yours and the correct ones; every blocked one is hatched
        assert markup.count('<rect class="cell"') == 2 * heads * t * t
        assert markup.count('<path class="blocked"') == 2 * heads * blocked > 0
        assert 'class="leak"' not in markup
        drawn_maps = heatmaps(markup)
        assert len(drawn_maps) == 2 * heads
        for h in range(heads):
            assert_colours_follow(data["student"][h], drawn_maps[h][0])
            assert_colours_follow(data["reference"][h], drawn_maps[heads + h][0])
        assert "<script" not in markup and "url(" not in markup and " id=" not in markup
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
    # each one framed in red, on the student's heads only, and nothing else is
    [markup] = [m for m in figures(page)["attention_weights"] if "MultiHeadAttention(" in m]
    heads = len(mha["student"])
    frames = {(h, r, c) for h, (_, marked) in enumerate(heatmaps(markup)[:heads]) for r, c in marked}
    assert frames == set(blocked)
    assert markup.count('class="leak"') == len(blocked)


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
    seen = {(r, c) for r, c in future if causality["student"][r][c] > causality["threshold"]}
    assert f"{len(seen)} cells see the future." in page
    [markup] = figures(page)["causality"]
    (mine, frames), (correct, none) = heatmaps(markup)
    assert frames == seen and none == set() and len(mine) == len(correct) == t * t
    [cross_markup] = figures(page)["attention_weights"]
    heads = len(cross["student"])
    assert cross_markup.count('<rect class="cell"') == 2 * heads * t * plan.chapter.length
    assert "blocked" not in cross_markup  # no mask: nothing hatched


def test_correct_decoder_and_positional_encoding():
    _, drawn = draw(CORPUS / "decoder" / "correct" / "head_loop_sequential.py", "decoder")
    causality = by_target(drawn)[("DecoderBlock", "causality")].data
    assert causality["same_weights"] and close(causality["student"], causality["reference"])
    _, drawn = draw(CORPUS / "encoder" / "mutants" / "pe_sin_cos_swapped.py", "encoder")
    pe = by_target(drawn)[("positional_encoding", "positional_encoding")].data
    assert not close(pe["student"], pe["reference"])
    page = feedback_html.feedback_html(result_with(drawn, assignment="encoder"), "id")
    assert 'data-kind="positional_encoding"' in page and "Selisih terbesar" in page
    [markup] = figures(page)["positional_encoding"]
    rows, cols = len(pe["student"]), len(pe["student"][0])
    assert markup.count('<rect class="cell"') == 3 * rows * cols  # yours, correct, difference
    (mine, _), (correct, _), (difference, _) = heatmaps(markup)
    assert mine != correct  # sine and cosine swapped: other colours
    assert len(set(difference.values())) > 1


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


def test_svg_heatmap_escapes_text_and_colours_by_value():
    evil = '<script>alert("x")</script>&'
    block = svg.heatmap([[0.0, 1.0], [None, 0.5]], 0, 1, "Blues", title=evil, x_label=evil,
                        y_label=(evil, "kueri"), blocked=[[False, True], [False, False]],
                        marked=[[False, True], [False, False]])
    markup = svg.document(block, evil)
    assert "<script" not in markup and markup.count("&lt;script&gt;") == 5  # aria-label, title x2, labels
    assert "&amp;" in markup and '"x"' not in markup
    [(cells, frames)] = heatmaps(markup)
    assert len(cells) == 4 and frames == {(0, 1)}
    assert markup.count('<path class="blocked"') == 1 and ">NaN<" in markup
    assert lightness(cells[(0, 0)]) > lightness(cells[(1, 1)]) > lightness(cells[(0, 1)])
    assert cells[(1, 0)] == "#ffffff"  # NaN: no colour, the word NaN
    assert svg.colour("Blues", 0) == "#f7fbff" and svg.colour("Blues", 1) == "#08306b"
    assert svg.colour("Blues", -5) == svg.colour("Blues", 0)  # clipped, not extrapolated
    assert markup.startswith("<svg") and markup == svg.document(block, evil)


def test_pictures_are_drawn_in_milliseconds(correct_attention):
    """The reason the pictures are hand-written SVG: a class of 200 spent minutes in
    matplotlib. Generous bound (a shared machine); typically ~2 ms per page."""
    import time

    plan, drawn = correct_attention
    result = result_with(drawn)
    feedback_html.feedback_html(result, "id", plan.title)
    started = time.process_time()
    for _ in range(10):
        feedback_html.feedback_html(result, "id", plan.title)
    assert (time.process_time() - started) / 10 < 0.1


def test_a_hidden_cell_shows_its_verdicts_once(correct_attention):
    """Under nbgrader the cell's verdicts are one output: HTML where HTML shows (the problems
    included), the plain text as its text/plain elsewhere; a target without checks gets text."""
    plan, drawn = correct_attention
    outcomes = [Outcome(c.info, "passed", c.points, None) for c in plan.checks]
    result = StudentResult("ani", "attention", None, outcomes=tuple(outcomes),
                           problems=(bilingual("Sel 3: SyntaxError", "Cell 3: SyntaxError"),),
                           pictures=drawn)
    [only] = feedback_html.hidden_cell_output(result, "scaled_dot_product_attention", "id",
                                              text="Sel 3: SyntaxError\n✓ ...\n")
    assert only["output_type"] == "display_data" and only["data"]["text/plain"].startswith("Sel 3")
    assert "Sel 3: SyntaxError" in only["data"]["text/html"]
    [text] = feedback_html.hidden_cell_output(result, "positional_encoding", "id", text="t\n")
    assert text["output_type"] == "stream" and text["text"] == "t\n"

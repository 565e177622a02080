"""The hidden sizes never reach a report: at the hidden sizes, nothing the student's code writes
(an exception's message, its class name, a frame it named) is shown, only a generic line and the
places its own cells fix; every later check runs in a worker that never saw them. The sizes
checks' generated configurations never hold a hidden size, so their messages show as written.
tests/hostile/hidden/spells_the_sizes.py spells them in words, letters and base64; before,
only digits were blanked."""

import base64
from pathlib import Path

from autograder import plan as plans, reports
from autograder.grading.grader import grade
from autograder.loading import Submission

HOSTILE = Path(__file__).resolve().parent / "hostile" / "hidden" / "spells_the_sizes.py"


def _import_attack():
    namespace = {}
    source = HOSTILE.read_text()
    exec(compile(source.split("def scaled_dot_product_attention")[0], str(HOSTILE), "exec"), namespace)
    return namespace["spell"]


def test_no_spelling_of_a_hidden_size_reaches_any_report(tmp_path):
    plan = plans.load("attention")
    result = grade(Submission("mallory", "attention", HOSTILE), plan)
    folder = reports.write_student(tmp_path, result, plan.title, "en")
    written = "\n".join(p.read_text(encoding="utf-8") for p in folder.iterdir())
    spell = _import_attack()
    h = plan.hidden
    # what the attack writes at the hidden sizes (mha.hidden_config calls it on (q, k, v),
    # (k, k, k) and (q, q, q)); no generated configuration holds a hidden number, in any role
    secrets = {f"{name}_{spell(value)}" for name, value in vars(h).items()}
    for tq, tk in ((h.decoder_length, h.length), (h.length, h.length), (h.decoder_length, h.decoder_length)):
        sizes = dict(d_model=h.d_model, num_heads=h.num_heads, batch=h.batch, length=tk, decoder_length=tq)
        secrets.add(base64.b64encode(repr(sizes).encode()).decode())
        secrets.add("[" + " ".join(chr(ord("a") + v) for v in sizes.values()) + "]")
    leaked = sorted(s for s in secrets if s in written)
    assert not leaked, leaked
    # the hidden-size checks failed with the generic line, and the student still learns where
    messages = {o.check.id: o.message.en for o in result.outcomes if o.message}
    assert "at the hidden sizes" in messages["mha.hidden_config"]
    assert "cell" in messages["mha.hidden_config"] or "file" in messages["mha.hidden_config"]
    # a public configuration's message is the student's own (the sizes tried are not hidden)
    assert "Size__d_model_" in messages["mha.sizes"] or "d_model_" in messages["mha.sizes"], messages["mha.sizes"]

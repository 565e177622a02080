"""course.toml is read with tomllib and a bad value is a clear error naming the key."""

import pytest

from autograder import config
from autograder import plan as plans


def test_shipped_course_toml_loads():
    course = config.load()
    assert course.language == "id"
    assert set(course.assignments) == {"attention", "encoder", "decoder"}
    assert course.chapter.d_model == 16 and course.hidden.d_model != 16


@pytest.mark.parametrize("text, key", [
    ('[course]\nlanguage = "fr"\n', "course.language"),
    ('[grading]\nrequest_timeout = "ten"\n', "grading.request_timeout"),
    ('[sizes.hidden]\nd_model = 10\nnum_heads = 3\n', "sizes.hidden"),
    ('[tolerances.float32]\natol = -1\n', "tolerances.float32.atol"),
    ('[assignments.attention.points]\n"mha.numeric" = "lots"\n', "assignments.attention.points"),
    ('[course]\nname = "x"\n', "no [assignments"),
    ('not toml at all ===', "not valid TOML"),
])
def test_bad_values_are_named(tmp_path, text, key):
    path = tmp_path / "course.toml"
    body = text if "assignments" in text or "TOML" in key or "no [" in key else text + "[assignments.attention]\n"
    path.write_text(body)
    with pytest.raises(config.ConfigError, match=key.replace("[", r"\[")):
        config.load(path)


def test_points_override_and_unknown_check(tmp_path):
    path = tmp_path / "course.toml"
    path.write_text('[assignments.attention.points]\n"mha.numeric" = 7\n')
    course = config.load(path)
    points = {c.id: c.points for c in plans.resolve(course, "attention").checks}
    assert points["mha.numeric"] == 7
    path.write_text('[assignments.attention.points]\n"mha.nope" = 1\n')
    with pytest.raises(config.ConfigError, match="mha.nope"):
        plans.load("attention", path)

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


# -- strict keys ------------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [
    ('languange = "en"\n', 'unknown key languange at the top level; did you mean course.language?'),
    ('[course]\nlanguange = "en"\n', 'unknown key course.languange in [course]; did you mean course.language?'),
    ('[tolerance.float32]\nrtol = 1e-4\n', 'unknown table [tolerance] at the top level; did you mean [tolerances]?'),
    ('[assignment.attention.points]\n"mha.numeric" = 4\n',
     'unknown table [assignment] at the top level; did you mean [assignments]?'),
    ('[grading]\ncheck_timout = 5\n',
     'did you mean grading.request_timeout? (grading.check_timeout was renamed to grading.request_timeout)'),
    ('[grading]\ncheck_timeout = 5\n', 'grading.check_timeout was renamed to grading.request_timeout'),
    ('[sizes.hiden]\nd_model = 8\n', 'unknown table [sizes.hiden] in [sizes]; did you mean [sizes.hidden]?'),
    ('[tolerances.float32]\nrtoll = 1\n', 'did you mean tolerances.float32.rtol?'),
    ('[assignments.encoder]\npoint = 3\n', 'unknown key assignments.encoder.point in [assignments.encoder]; '
                                           'did you mean [assignments.encoder.points]?'),
    ('colour = 1\n', 'unknown key colour at the top level; did you mean [course]?'),
    ('zzz = 1\n', 'valid here: course, grading, tolerances, sizes, assignments'),
    ('[assignments.attention]\ntitel_en = "x"\n',
     'unknown key assignments.attention.titel_en in [assignments.attention]; '
     'did you mean assignments.attention.title_en?'),
])
def test_unknown_keys_are_errors_with_the_closest_valid_name(tmp_path, text, message):
    path = tmp_path / "course.toml"
    path.write_text(text + ("" if "[assignment" in text else "[assignments.attention]\n"))
    with pytest.raises(config.ConfigError) as error:
        config.load(path)
    assert message in str(error.value)
    assert str(error.value).startswith(str(path))  # which file


def test_the_shipped_file_and_any_check_id_in_points_pass_the_key_check(tmp_path):
    config.check_keys(__import__("tomllib").loads(config.KIT_PATH.read_text()))
    path = tmp_path / "course.toml"
    path.write_text('[assignments.attention]\ntitle = "t"\nnotebook = "a.ipynb"\n'
                    '[assignments.attention.points]\n"mha.numeric" = 4\n')
    assert config.load(path).assignments["attention"].points == {"mha.numeric": 4}


def test_titles_per_language(tmp_path):
    """title is Indonesian, title_en English; the plan shows the one of its language, and a
    course without title_en shows its title in both."""
    shipped = config.load()
    for name in shipped.assignments:
        plan = plans.resolve(shipped, name)
        assert plan.title == shipped.assignments[name].title
        assert plan.in_language("en").title == shipped.assignments[name].title_en != plan.title
        assert plans.resolve(shipped, name, "en").title == shipped.assignments[name].title_en
        assert plan.in_language("en").in_language("id").title == plan.title
    path = tmp_path / "course.toml"
    path.write_text('[assignments.attention]\ntitle = "Only one"\n')
    assert plans.load("attention", path, "en").title == "Only one"
    path.write_text('[assignments.attention]\ntitle_en = 3\n')
    with pytest.raises(config.ConfigError, match="assignments.attention.title_en must be a string"):
        config.load(path)


# -- which file -------------------------------------------------------------------------------
def test_course_file_is_found_from_the_working_directory_upwards(tmp_path, monkeypatch):
    monkeypatch.delenv(config.ENVIRONMENT, raising=False)
    (tmp_path / "course.toml").write_text('[assignments.attention]\ntitle = "Theirs"\n')
    deep = tmp_path / "submitted" / "bayu"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    course = config.load()
    assert course.path == tmp_path / "course.toml" and course.assignments["attention"].title == "Theirs"
    assert course.found_by == "found from the working directory"
    assert str(tmp_path / "course.toml") in course.origin


def test_environment_variable_then_explicit_path_win(tmp_path, monkeypatch):
    (tmp_path / "course.toml").write_text('[assignments.attention]\ntitle = "Upwards"\n')
    other = tmp_path / "other.toml"
    other.write_text('[assignments.attention]\ntitle = "From the environment"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(config.ENVIRONMENT, str(other))
    course = config.load()
    assert course.assignments["attention"].title == "From the environment"
    assert course.found_by == "$AUTOGRADER_COURSE"
    assert config.load(tmp_path / "course.toml").found_by == "given"


def test_without_a_course_file_around_the_kit_own_is_used_and_said(tmp_path, monkeypatch):
    monkeypatch.delenv(config.ENVIRONMENT, raising=False)
    monkeypatch.chdir(tmp_path)
    course = config.load()
    assert course.path == config.KIT_PATH and "the kit's own" in course.origin

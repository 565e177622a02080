"""course.toml is read with tomllib and a bad value is a clear error naming the key."""

import pytest

from autograder import config
from autograder import plan as plans


def test_shipped_course_toml_loads():
    course = config.load()
    assert course.language == "id"
    assert list(course.assignments) == ["attention", "encoder", "decoder", "transformer"]
    assert course.chapter.d_model == 16 and course.hidden.d_model != 16
    assert course.assignments["transformer"].blocks == "given"
    assert course.assignments["transformer"].titles().en.startswith("The whole Transformer")


def test_blocks_switch_is_given_or_own_and_nothing_else(tmp_path):
    path = tmp_path / "course.toml"
    path.write_text("[assignments.transformer]\n")
    assert config.load(path).assignments["transformer"].blocks == "given"  # the default
    path.write_text('[assignments.transformer]\nblocks = "own"\n')
    assert config.load(path).assignments["transformer"].blocks == "own"
    for wrong in ('"mine"', "true", '["own"]'):
        path.write_text(f"[assignments.transformer]\nblocks = {wrong}\n")
        with pytest.raises(config.ConfigError, match=r"assignments\.transformer\.blocks must be one of "
                                                     r"'given', 'own', not "):
            config.load(path)
    path.write_text('[assignments.transformer]\nblock = "own"\n')
    with pytest.raises(config.ConfigError, match="did you mean assignments.transformer.blocks"):
        config.load(path)


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


# -- hidden sizes a hard-coded submission could pass with ---------------------------------------
@pytest.mark.parametrize("hidden, named", [
    # the case: different d_model and num_heads, the chapter's d_k
    ("d_model = 32\nnum_heads = 8\n", "d_k = d_model / num_heads = 32 / 8 = 4 is also the chapter's d_k (16 / 4)"),
    ("num_heads = 4\nd_model = 24\n", "num_heads = 4 is also [sizes.chapter] num_heads"),
    ("d_ff = 32\n", "d_ff = 32 is also [sizes.chapter] d_ff"),
    ("d_model = 20\nnum_heads = 2\nd_ff = 40\n", "d_ff / d_model = 40 / 20 is the chapter's ratio 32 / 16"),
    ("batch = 2\n", "batch = 2 is also [sizes.chapter] batch"),
    ("length = 5\n", "length = 5 is also [sizes.chapter] length"),
    ("decoder_length = 6\n", "decoder_length = 6 is also [sizes.chapter] decoder_length"),
    ("length = 9\ndecoder_length = 9\n", "length = decoder_length = 9"),
    ("batch = 1\n", "batch = 1: an axis of size 1 broadcasts"),
    ("d_model = 18\nnum_heads = 18\n", "d_k = d_model / num_heads = 18 / 18 = 1: an axis of size 1"),
])
def test_hidden_sizes_that_share_a_quantity_with_the_chapter_are_errors(tmp_path, hidden, named):
    path = tmp_path / "course.toml"
    path.write_text(f"[sizes.hidden]\n{hidden}[assignments.attention]\n")
    with pytest.raises(config.ConfigError) as error:
        config.load(path)
    assert "sizes.hidden: hard-coded sizes would pass the hidden-size checks" in str(error.value)
    assert named in str(error.value), str(error.value)


def test_hidden_sizes_are_compared_with_the_sizes_the_notebooks_cells_use(tmp_path):
    """The kit's former hidden sizes (24, 3, 40, 3, 7, 4) differ from the chapter's but appear in
    the notebooks' own cells: positional_encoding(7, 24), an SDPA input with d_k = 8, a key of 7
    tokens, causal_mask(4). A course beside the kit's source notebooks is refused, naming each."""
    for name in ("attention", "encoder"):
        folder = tmp_path / "assignments" / "source" / name
        folder.mkdir(parents=True)
        (folder / f"{name}.ipynb").symlink_to(config.KIT_PATH.parent / "assignments" / "source" / name / f"{name}.ipynb")
    path = tmp_path / "course.toml"
    old = "d_model = 24\nnum_heads = 3\nd_ff = 40\nbatch = 3\nlength = 7\ndecoder_length = 4\n"
    path.write_text(f"[sizes.hidden]\n{old}[assignments.attention]\n[assignments.encoder]\n")
    with pytest.raises(config.ConfigError) as error:
        config.load(path)
    said = str(error.value)
    for part in ("d_model = 24 is also in encoder.ipynb's cell `positional_encoding(7, 24)`",
                 "d_k = d_model / num_heads = 24 / 3 = 8 is also in attention.ipynb's cell `torch.randn(2, 5, 8)`",
                 "length = 7 is also in attention.ipynb's cell `torch.randn(2, 7, 8)`",
                 "decoder_length = 4 is also in attention.ipynb's cell `causal_mask(4)`"):
        assert part in said, said
    assert said.count("\n  - ") == 4  # the hidden checks' own cells (grade_target) are not read
    # without those notebooks, only the chapter counts: the same sizes load
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "course.toml").write_text(path.read_text())
    assert config.load(tmp_path / "elsewhere" / "course.toml").hidden.length == 7


def test_the_kit_defaults_and_its_own_file_have_no_trap():
    from autograder import size_traps
    course = config.load(config.KIT_PATH)
    notebooks = [a.source_notebook for a in course.assignments.values()]
    assert all(notebooks) and size_traps.seen_in_notebooks(notebooks)["d_model"]
    defaults = {kind: config.Sizes(**values) for kind, values in config.DEFAULTS["sizes"].items()}
    assert size_traps.traps(defaults["chapter"], defaults["hidden"], notebooks) == []
    assert course.hidden == defaults["hidden"]


def test_sizes_given_by_keyword_in_a_notebook_count_too():
    import ast

    from autograder import size_traps

    call = ast.parse("Transformer(SRC, TGT, d_model=32, num_heads=8, d_ff=64, num_layers=2)").body[0].value
    assert sorted(size_traps._sizes_of_call(call)) == [("d_ff", 64), ("d_k", 4), ("d_model", 32), ("num_heads", 8)]

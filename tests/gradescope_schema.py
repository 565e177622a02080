"""Gradescope's results.json as a JSON Schema, written from Gradescope's documentation of the
autograder output format ("Autograder Specifications", gradescope-autograders.readthedocs.io
/en/latest/specs/, sections "Output format", "Controlling Test Case Visibility", "Controlling
standard output visibility", "Test case status", "Output String Formatting", and "Leaderboards").

Every field is optional there, but the top-level ``score`` is "required if not on each test
case" and ``tests`` "required if no top-level score". Only the documented fields are allowed
(``additionalProperties: false``): a field Gradescope does not know is one we meant for someone
and nobody reads."""

VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
FORMAT = {"enum": ["text", "html", "simple_format", "md", "ansi"]}
NUMBER = {"type": "number"}

TEST = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": NUMBER,
        "max_score": NUMBER,
        "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"},
        "name_format": FORMAT,
        "number": {"type": "string"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": VISIBILITY,
        "extra_data": {"type": "object"},
    },
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Gradescope autograder results.json",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": NUMBER,
        "execution_time": NUMBER,
        "output": {"type": "string"},
        "output_format": FORMAT,
        "test_output_format": FORMAT,
        "test_name_format": FORMAT,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": TEST},
        "leaderboard": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["name", "value"],
            "properties": {"name": {"type": "string"}, "value": {"type": ["number", "string"]},
                           "order": {"enum": ["asc", "desc"]}}}},
    },
    "anyOf": [
        {"required": ["score"]},
        {"required": ["tests"], "properties": {"tests": {"items": {"required": ["score"]}}}},
    ],
}


def validate(data):
    """Raise jsonschema.ValidationError unless ``data`` is a results.json Gradescope documents."""
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(data)

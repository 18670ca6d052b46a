"""The variants table (autograde/variants.py): what the grader is told of each assignment, where a
notebook's course_language routes it, and what a plain nbgrader source (no table) gets. Pure: no
grading, no nbgrader (collect.py's end of it: test_autograde_modules.py)."""
import ast
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograde.variants import Variants, language_in, notebook_language

NAMES = {"en": "English", "nl": "Dutch", "id": "Indonesian"}
TABLE = Variants(
    {"01_loop": {"lesson": "01_loop", "language": "en", "parameters": {"epochs": "1"}},
     "01_loop-nl": {"lesson": "01_loop", "language": "nl", "parameters": {"epochs": "1"}},
     "02_acc": {"lesson": "02_acc", "language": "en", "parameters": {}}},  # 02_acc only in English
    {language: {"name": name, "texts": {"Failed": f"Failed ({language})"}} for language, name in NAMES.items()})


def test_each_assignment_has_its_lesson_language_and_sizes():
    assert (TABLE.lesson("01_loop-nl"), TABLE.language("01_loop-nl")) == ("01_loop", "nl")
    assert (TABLE.lesson("01_loop"), TABLE.language("01_loop")) == ("01_loop", "en")
    assert TABLE.parameters("01_loop-nl") == {"epochs": "1"}
    assert TABLE.assignment("01_loop", "nl") == "01_loop-nl" and TABLE.assignment("02_acc", "nl") is None
    assert TABLE.texts()["id"] == {"Failed": "Failed (id)"}


def test_a_notebook_goes_to_its_lessons_assignment_in_its_language():
    assert TABLE.route("01_loop", "nl") == ("01_loop-nl", None, "")
    assert TABLE.route("01_loop-nl", "en") == ("01_loop", None, "")
    assert TABLE.route("01_loop-nl", "nl") == ("01_loop-nl", None, "")
    assert TABLE.route("01_loop", None) == ("01_loop", None, "")  # no course_language: as handed in
    assert TABLE.route("02_acc", "id") == ("02_acc", None, "")    # a language the lesson lacks: as handed in


def test_a_language_the_table_lacks_is_graded_in_the_assignments_and_said():
    assert TABLE.route("01_loop-nl", "fr") == (
        "01_loop-nl", "nl", "course_language 'fr' is not a language of the course (en, nl, id): graded in Dutch")
    assert TABLE.route("01_loop", "")[:2] == ("01_loop", "en")


def test_without_a_table_each_assignment_is_its_own_lesson_in_no_language():
    plain = Variants()
    assert (plain.lesson("01_loop-nl"), plain.language("01_loop-nl"), plain.parameters("01_loop-nl")) == (
        "01_loop-nl", "", {})
    for chosen in ("nl", "fr", None):
        assert plain.route("01_loop", chosen) == ("01_loop", None, "")
    assert plain.texts() == {} and plain.assignment("01_loop", "") is None
    assert TABLE.route("99_other", "fr") == ("99_other", None, "")  # an assignment the table does not name


def test_the_table_is_read_from_its_file_and_a_wrong_one_refused(tmp_path):
    path = tmp_path / "variants.json"
    path.write_text(json.dumps({"assignments": TABLE.assignments, "languages": TABLE.languages}))
    assert Variants.read(path) == TABLE
    for wrong in ([], {"assignments": {"01_loop": "01_loop"}}, {"assignments": [], "languages": {}},
                  {"assignments": {"01_loop": {"language": "en"}}}):
        path.write_text(json.dumps(wrong))
        with pytest.raises(ValueError, match="not"):
            Variants.read(path)
    path.write_text("{not json")
    with pytest.raises(ValueError):
        Variants.read(path)


def test_the_notebooks_language_is_read_from_its_parameters_cell(tmp_path):
    assert language_in('epochs = 1\ncourse_language: str = "nl"  # the language') == "nl"
    assert language_in("course_language = 'id'") == "id" and language_in("x = 1") is None

    def write(name, cells):
        nbformat.write(new_notebook(cells=cells), tmp_path / f"{name}.ipynb")

    tagged = {"tags": ["parameters"]}
    write("typed", [new_code_cell("x = 1"), new_code_cell('course_language: str = "fr"', metadata=tagged)])
    write("unset", [new_code_cell("sizes = 1", metadata=tagged), new_code_cell('course_language = "nl"')])
    write("untagged", [new_code_cell('course_language = "nl"')])
    (tmp_path / "broken.ipynb").write_text("{not json")
    assert notebook_language(tmp_path, ["typed"]) == "fr"
    assert notebook_language(tmp_path, ["unset"]) is None  # only the parameters cell counts
    assert notebook_language(tmp_path, ["missing", "broken", "untagged", "typed"]) == "fr"
    assert notebook_language(tmp_path, ["missing", "broken"]) is None


def test_the_courses_table_names_every_lesson_in_every_language_as_the_course_does(tmp_path):
    from course.grade import variants
    from course.lessons import editions, profile
    from course.paths import lessons
    table = Variants(**json.loads(json.dumps(variants())))  # as the grader reads it back
    every = editions(lessons())
    assert list(table.assignments) == [edition.assignment for edition in every]
    for edition in every:
        assert (table.lesson(edition.assignment), table.language(edition.assignment)) == (
            edition.lesson, edition.language)
        assert {name: ast.literal_eval(source) for name, source in table.parameters(edition.assignment).items()} == \
            profile(edition.lesson, "small")
    assert {language: entry["name"] for language, entry in table.languages.items()} == NAMES
    full_size = Variants(**variants(full_size=True))  # --full-size: the lessons' own sizes
    assert list(full_size.assignments) == list(table.assignments)
    assert all(full_size.parameters(name) == {} for name in full_size.assignments)

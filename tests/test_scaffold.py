"""`make lesson NAME=...` (course/scaffold.py): the row it adds to course/lessons.py, the names it
refuses. tests/test_adding_a_lesson.py releases, runs and grades the skeleton it writes."""
import ast

import pytest

from course import scaffold
from course.lessons import PROFILES


def rows(text):
    """The keys of the PROFILES dict that `text` (a course/lessons.py) assigns, in order."""
    [profiles] = [node.value for node in ast.parse(text).body if isinstance(node, ast.Assign)
                  and getattr(node.targets[0], "id", None) == "PROFILES"]
    return [key.value for key in profiles.keys]


def test_the_row_goes_where_the_lesson_goes_in_the_course():
    assert rows(scaffold.with_profile(scaffold.PROFILES_FILE.read_text(), "11_warmup")) == [*PROFILES, "11_warmup"]
    assert rows(scaffold.with_profile('PROFILES = {\n    "00_a": {},\n    "02_c": {},\n}\n', "01_b")) == [
        "00_a", "01_b", "02_c"]


@pytest.mark.parametrize("name", ["11-warmup", "1_warmup", "11_Warmup", "01_basic_again"])
def test_a_name_that_is_not_a_new_lessons_is_refused_before_anything_is_written(name, capsys):
    with pytest.raises(SystemExit):
        scaffold.main([name])
    assert "a lesson" in capsys.readouterr().err

"""A lesson in a language as an nbgrader assignment: the one place that names it.

The gradebook keeps each language of a lesson apart: "01_basic_loop" is the English lesson,
"01_basic_loop-nl" and "01_basic_loop-id" its translations, each an assignment of its own with
its own source (course.i18n writes them, with `assignment()`). What the instructor reads speaks
of lessons: grades.csv has a lesson and a language column, grades_wide.csv one column per lesson,
the class report one section per lesson (autograde/outfolder.py, autograde/class_report.py).

A student's notebook says its language in its parameters cell (`course_language = "nl"`);
`notebook_language` reads it, without running anything. The languages are helpers/language.py's
(a leaf without torch).
"""
import json
import re
from pathlib import Path

from helpers.language import LANGUAGE_NAMES, LANGUAGES, TRANSLATED

SOURCE_LANGUAGE = LANGUAGES[0]  # English: the lessons as written in solutions/
# `course_language: str = "nl"` (the type hint is what papermill reads) or `course_language = "nl"`
COURSE_LANGUAGE = re.compile(r'^course_language\s*(?::\s*\w+\s*)?=\s*["\']([^"\'\n]*)["\']', re.M)


def assignment(lesson, language):
    """The nbgrader assignment of a lesson in a language ("01_basic_loop-nl")."""
    return lesson if language == SOURCE_LANGUAGE else f"{lesson}-{language}"


def lesson_and_language(name):
    """("01_basic_loop", "nl") for "01_basic_loop-nl"; ("01_basic_loop", "en") for "01_basic_loop"
    and for any assignment that is not a translation."""
    lesson, _, language = name.rpartition("-")
    return (lesson, language) if lesson and language in TRANSLATED else (name, SOURCE_LANGUAGE)


def language_name(language):
    return LANGUAGE_NAMES.get(language, language)


def notebook_language(folder, notebooks):
    """The course_language that the parameters cell of the first of `notebooks` found in `folder`
    sets (any text: "nl", or a typo such as "fr"), or None (no such notebook, cell or setting; not
    a notebook)."""
    for name in notebooks:
        path = Path(folder) / f"{name}.ipynb"
        try:
            cells = json.loads(path.read_text(errors="replace")).get("cells", [])
            for cell in cells:
                if "parameters" in cell.get("metadata", {}).get("tags", []):
                    source = cell.get("source", "")
                    source = source if isinstance(source, str) else "".join(source)
                    match = COURSE_LANGUAGE.search(source)
                    return match.group(1) if match else None
        except (OSError, ValueError, AttributeError, TypeError):
            continue
    return None

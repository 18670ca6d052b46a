"""Every word lesson 10's code prints is in the student's language, numbers included.

The lesson runs in English (the shared run of lesson_runs, at its small profile) and in Dutch and
Indonesian at the same sizes. Line by line,
a word of the translated output that the English line has too is English left in place, unless the
course keeps that term in English (locale/glossary.csv, and the few loanwords below); code (names with
_ . = or (), quoted strings, reprs of dicts, CamelCase and CAPITALS) does not count. A number with a
decimal point is English notation: nl and id write a decimal comma.
"""
import csv
import re

import nbformat
import pytest

from course.paths import ROOT, SOLUTIONS
from course.run import run_notebook
from lesson_runs import SMALL, executed

pytestmark = pytest.mark.slow

LESSONS = ["10_sharded_training"]
# terms the translations keep in English although the glossary has no row for them, and words that the
# language writes as English does (Dutch "model", "per", "in", "over"; Indonesian "model", "mode", "total"); FSDP's
# root and DDP's buckets keep their English names, as the lesson's text does
SAME_WORDS = {"nl": {"bytes", "tensor", "tensors", "plugin", "all-reduce", "all-gather", "reduce-scatter", "losses",
                     "tests", "helpers", "runs", "model", "per", "in", "over", "all-reduces", "all-gathers",
                     "reduce-scatters", "root", "bucket", "buckets"},
              "id": {"byte", "tensor", "plugin", "all-reduce", "all-gather", "reduce-scatter", "helpers", "model",
                     "mode", "total", "per", "root", "bucket"}}
CODE = re.compile(r"\{.*\}|'[^']*'|\"[^\"]*\"|\S*[_=().\[\]]\S*|\b[A-Za-z]*[a-z][A-Z]\w*|\b[A-Z]{2,}\w*|\b\d\S*")
WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
DECIMAL_POINT = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.(])")
GROUPED = re.compile(r"[1-9]\d{0,2}(?:\.\d{3})+")  # nl and id group thousands with a dot (2.212 bytes); so 1.234 passes
LABEL = re.compile(r"^\[(\w+) (\d+)\] ")  # run_on_processes' label of a process's line


def printed_lines(path):
    """{cell id: the lines its code printed (stdout)}."""
    notebook = nbformat.read(path, as_version=4)
    return {cell.id: [line for output in cell.get("outputs", []) if output.get("name") == "stdout"
                      for line in output["text"].splitlines()]
            for cell in notebook.cells if cell.cell_type == "code"}


def prose_words(line):
    """The words of `line` outside code (a process's label counts: "[process 0]" is prose)."""
    line = LABEL.sub(r"\1 \2 ", line)
    return {word.lower() for word in WORD.findall(CODE.sub(" ", line))}


def kept_in_english(lang):
    """The words of the glossary's `lang` column: terms the language writes as they are written there."""
    with open(ROOT / "locale" / "glossary.csv", encoding="utf-8") as file:
        terms = [row[lang] for row in csv.DictReader(file)]
    return {word.lower() for term in terms for word in WORD.findall(term)} | SAME_WORDS[lang]


def english_and_translated(lesson, lang, tmp_path_factory):
    english, _, error = executed(lesson)
    assert error is None, error
    folder = tmp_path_factory.mktemp(f"{lesson}-{lang}")
    _, error = run_notebook(SOLUTIONS / lesson / f"{lesson}.ipynb", folder,
                            {**SMALL[lesson], "course_language": lang})
    assert error is None, f"{lesson} in {lang}: {error}"
    return printed_lines(english), printed_lines(folder / f"{lesson}.ipynb")


@pytest.mark.lesson_run("lesson")
@pytest.mark.parametrize("lang", ["nl", "id"])
@pytest.mark.parametrize("lesson", LESSONS)
def test_what_a_lesson_prints_is_in_the_students_language(lesson, lang, tmp_path_factory):
    english, translated = english_and_translated(lesson, lang, tmp_path_factory)
    translated = {cell: lines for cell, lines in translated.items() if cell in english}  # not papermill's cell
    assert english.keys() == translated.keys()
    kept = kept_in_english(lang)
    english_words, decimal_points = [], []
    for cell, lines in translated.items():
        assert len(lines) == len(english[cell]), f"{cell}: another number of lines than in English"
        for line, english_line in zip(lines, english[cell]):
            left = (prose_words(line) & prose_words(english_line)) - kept
            if left:
                english_words.append(f"{cell}: {sorted(left)} in {line!r}")
            if not line.startswith("{") and any(not GROUPED.fullmatch(found.group())
                                                for found in DECIMAL_POINT.finditer(line)):
                decimal_points.append(f"{cell}: {line!r}")
    assert not english_words, "English words in the output:\n" + "\n".join(english_words)
    assert not decimal_points, "numbers with a decimal point:\n" + "\n".join(decimal_points)

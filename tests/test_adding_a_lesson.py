"""Adding a lesson and a language is what docs/adding-a-lesson.md and docs/translating.md say.

In a temporary copy of the repository (tests/course_copy.py; this checkout is never written), a
throw-away lesson `11_throwaway` (`make lesson`'s skeleton: two tiny exercises) and a throw-away
language (German, "de") are added by following the docs' steps and nothing else. Then, as an
author would: `make release`
(python -m course.release), `make run` of the new lesson in the new language (python -m course.run),
`make autograde` of a perfect German and a blank English submission (python -m course.grade), and
the fast tests that hold every lesson to a rule, run in the copy. A step the docs miss fails here:
write it into the docs, or make the code not need it. With COURSE_AUTHOR_JOURNEY=1 (.ci/run runs it
after `make test`; several minutes on a busy 2-core machine).
"""
import csv
import os
import re
import subprocess

import nbformat
import pytest

from course.lessons import in_language
from course.paths import ROOT
from course_copy import copy_repository, edit, environment, python

# Minutes of release, run and grading in a copy: .ci/run runs it after `make test`, as it runs the
# hub's journey, so that the README's test command stays within its 10 minutes
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("COURSE_AUTHOR_JOURNEY") != "1",
                                 reason="a lesson and a language added in a copy: COURSE_AUTHOR_JOURNEY=1 "
                                        "(.ci/run runs it; docs/adding-a-lesson.md)")]

LESSON = "11_throwaway"
LANGUAGE = "de"
# the tests that hold every lesson (and every language) to a rule; the translations are not done (new
# entries, an empty German catalog), so the test that says so is left out here and checked on its own
RULES = ["tests/test_notebooks.py::test_the_lessons_are_there",
         "tests/test_notebooks.py::test_lesson_is_committed_clean", "tests/test_profile.py",
         "tests/test_parameters.py", "tests/test_exercise_text.py", "tests/test_i18n_messages.py",
         "tests/test_claims.py::test_lesson_1_lists_every_lesson_and_only_the_last_ends_the_course",
         "tests/test_claims.py::test_lessons_after_the_slides_do_not_cite_slides",
         "tests/test_autograde_mistakes.py::test_every_exercise_has_four_mistakes",
         "tests/test_i18n.py", "-k", "not translations_are_complete and not glossary_has_every_term"]


# tests/mistakes.py's MISTAKES: four typical wrong answers per exercise
MISTAKES = '''    "l11-warmup-factor": [
        ("starts at 0", "def warmup_factor(step, warmup_steps):\\n    return min(1.0, step / warmup_steps)\\n"),
        ("no cap at 1", "def warmup_factor(step, warmup_steps):\\n    return (step + 1) / warmup_steps\\n"),
        ("// instead of /", "def warmup_factor(step, warmup_steps):\\n"
                            "    return min(1, (step + 1) // warmup_steps)\\n"),
        ("no warm-up", "def warmup_factor(step, warmup_steps):\\n    return 1.0\\n"),
    ],
    "l11-count-pairs": [
        ("every split", "def count_pairs(data):\\n    return sum(len(split) for split in data.values())\\n"),
        ("the validation split", "def count_pairs(data):\\n    return len(data['validation'])\\n"),
        ("the columns", "def count_pairs(data):\\n    return len(data['train'].column_names)\\n"),
        ("one too many", "def count_pairs(data):\\n    return len(data['train']) + 1\\n"),
    ],
'''


def add_lesson(copy):
    """docs/adding-a-lesson.md, "Adding a lesson", steps 1 to 9 (10 is the release): `make lesson`
    writes the skeleton (steps 1-7), whose example exercises the throw-away lesson keeps."""
    made = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "lesson", f"NAME={LESSON}"],
                          cwd=copy, env=environment(copy), capture_output=True, text=True)
    assert made.returncode == 0 and "wrote solutions/" in made.stdout, made.stdout + made.stderr
    edit(copy / "tests" / "mistakes.py", "    ],\n}\n# The table's Validate column",  # step 8
         "    ],\n" + MISTAKES + "}\n# The table's Validate column")
    edit_markdown(copy, "01_basic_loop", "optimizer state.\n", "optimizer state.\n11. A **throw-away lesson**.\n")
    edit_markdown(copy, "10_sharded_training", "\n\nThis is the end of the course. Well done!", "")  # step 9


def edit_markdown(copy, lesson, old, new):
    """Replace `old` by `new` in the one markdown cell of the lesson's solution that holds it."""
    path = copy / "solutions" / lesson / f"{lesson}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    [cell] = [cell for cell in notebook.cells if cell.cell_type == "markdown" and old in cell.source]
    cell.source = cell.source.replace(old, new)
    nbformat.write(notebook, path)


def add_language(copy):
    """docs/translating.md, "A fourth language": its row, its glossary column (its terms to come)."""
    edit(copy / "helpers" / "language.py", '"id": ("Indonesian", "[belum diterjemahkan]")}',
         f'"id": ("Indonesian", "[belum diterjemahkan]"),\n                  '
         f'"{LANGUAGE}": ("German", "[noch nicht übersetzt]")}}')
    glossary = copy / "locale" / "glossary.csv"
    with open(glossary, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    with open(glossary, "w", newline="", encoding="utf-8") as file:
        csv.writer(file, lineterminator="\n").writerows([rows[0] + [LANGUAGE]] + [row + [""] for row in rows[1:]])


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The copy with the new lesson and language, released (`make release`)."""
    copy = copy_repository(tmp_path_factory.mktemp("course") / "course")
    add_lesson(copy)
    add_language(copy)
    released = python(copy, "-m", "course.release")
    assert released.returncode == 0, released.stdout + released.stderr
    yield copy
    written = [path for path in (f"solutions/{LESSON}", f"notebooks/{LESSON}", f"notebooks/{LANGUAGE}",
                                 f"locale/{LANGUAGE}", f"helpers/locale/{LANGUAGE}") if (ROOT / path).exists()]
    assert not written, f"the test wrote into the repository: {written}"


def test_the_release_has_the_lesson_in_every_language_and_the_language_for_every_lesson(course):
    for folder in ("notebooks", "notebooks/nl", f"notebooks/{LANGUAGE}"):
        assert (course / folder / LESSON / f"{LESSON}.ipynb").is_file(), folder
    assert (course / "notebooks" / LANGUAGE / "01_basic_loop" / "01_basic_loop.ipynb").is_file()
    for catalog in (f"locale/{LANGUAGE}/LC_MESSAGES/{LESSON}.po", f"locale/{LANGUAGE}/LC_MESSAGES/hidden-tests.po",
                    f"locale/nl/LC_MESSAGES/{LESSON}.po", f"helpers/locale/{LANGUAGE}/LC_MESSAGES/helpers.po"):
        assert (course / catalog).is_file(), catalog
    german = (course / "notebooks" / LANGUAGE / LESSON / f"{LESSON}.ipynb").read_text()
    assert "[noch nicht übersetzt]" in german and 'course_language: str = \\"de\\"' in german
    checked = python(course, "-m", "course.release", "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_lesson_runs_in_the_language(course, tmp_path):
    """`make run COURSE_LANG=de`, for the new lesson only."""
    run = python(course, "-m", "course.run", LESSON, "--language", LANGUAGE, "--out", str(tmp_path))
    assert run.returncode == 0 and re.search(rf"{LESSON}\S*\s.*\bok\b", run.stdout), run.stdout + run.stderr
    executed = (tmp_path / f"{LESSON}.ipynb").read_text()
    assert "Correct: the factor grows to 1 in 4 steps. [noch nicht übersetzt]" in executed


def perfect(course, language):
    """The release in `language` with the solutions' answers put in, as a student who gets it right hands it in."""
    notebook = nbformat.read(in_language(course / "notebooks", language) / LESSON / f"{LESSON}.ipynb", as_version=4)
    solution = nbformat.read(course / "solutions" / LESSON / f"{LESSON}.ipynb", as_version=4)
    answers = {cell.id: cell.source for cell in solution.cells if cell.metadata.get("nbgrader", {}).get("solution")}
    for cell in notebook.cells:
        if cell.id in answers:
            cell.source = re.sub(r"\s*### (BEGIN|END) SOLUTION", "", answers[cell.id])
    return notebook


def test_a_class_is_graded_in_the_lesson_and_the_language(course, tmp_path):
    """`make autograde`: a perfect German submission gets full marks, a blank English one none."""
    submissions = tmp_path / "submissions"
    (submissions / "anna" / LESSON).mkdir(parents=True)
    nbformat.write(perfect(course, LANGUAGE), submissions / "anna" / LESSON / f"{LESSON}.ipynb")
    (submissions / "blank" / LESSON).mkdir(parents=True)
    (submissions / "blank" / LESSON / f"{LESSON}.ipynb").write_text(
        (course / "notebooks" / LESSON / f"{LESSON}.ipynb").read_text())
    graded = python(course, "-m", "course.grade", "--submissions", str(submissions), "--out", str(tmp_path / "out"),
                    "--jobs", "2")
    assert graded.returncode == 0, graded.stdout + graded.stderr
    with open(tmp_path / "out" / "grades.csv", newline="") as file:
        rows = {row["student_id"]: row for row in csv.DictReader(file)}
    assert {(s, r["assignment"], r["language"], float(r["score"]), float(r["max_score"])) for s, r in rows.items()} == {
        ("anna", LESSON, LANGUAGE, 2.0, 2.0), ("blank", LESSON, "en", 0.0, 2.0)}, rows


def test_the_rules_every_lesson_is_held_to_hold_for_it(course):
    """The fast tests of the rules docs/adding-a-lesson.md lists, run in the copy."""
    rules = python(course, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *RULES)
    assert rules.returncode == 0, rules.stdout[-6000:] + rules.stderr[-2000:]


def test_until_the_translators_finish_the_catalogs_say_what_is_left(course):
    """The new lesson's entries and the new language's every entry are untranslated: the test of
    complete translations fails, naming each catalog, until translators fill them (docs/translating.md)."""
    complete = python(course, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                      "tests/test_i18n.py", "-k", "translations_are_complete")
    failed = set(re.findall(r"FAILED \S+\[(\S+)\]", complete.stdout))
    assert {f"{LESSON}-nl", f"{LESSON}-id", f"{LESSON}-{LANGUAGE}", f"01_basic_loop-{LANGUAGE}",
            f"helpers-{LANGUAGE}", f"hidden-tests-{LANGUAGE}"} <= failed, complete.stdout[-4000:]
    assert "10_sharded_training-nl" not in failed and "hidden-tests-nl" in failed  # new entries only; a removed
    # paragraph (lesson 10's last words) leaves an obsolete entry, which is no work for a translator


# A course that teaches fewer languages: the catalogs' and the release's tests, which fail on any
# untranslated entry, pass for the languages it teaches (docs/translating.md, "Teaching fewer languages")
FEWER_RULES = ["tests/test_i18n.py", "tests/test_i18n_messages.py", "tests/test_parameters.py",
               "tests/test_exercise_text.py"]


@pytest.mark.parametrize("languages", [("en",), ("en", "nl")], ids="+".join)
def test_a_course_that_teaches_fewer_languages_says_so_in_one_line(languages, tmp_path):
    copy = copy_repository(tmp_path / "course")
    edit(copy / "helpers" / "language.py", "LANGUAGES = tuple(LANGUAGE_TABLE)\n", f"LANGUAGES = {languages!r}\n")
    (copy / "locale" / "id" / "LC_MESSAGES" / "01_basic_loop.po").write_text("")  # Indonesian, unfinished
    released = python(copy, "-m", "course.release")
    assert released.returncode == 0, released.stdout + released.stderr
    assert "removed notebooks/id/" in released.stdout
    assert sorted(path.name for path in (copy / "notebooks").iterdir() if not path.name[0].isdigit()) == sorted(
        languages[1:])
    assert (copy / "locale" / "id" / "LC_MESSAGES" / "02_accelerator.po").is_file(), "the catalogs stay"
    checked = python(copy, "-m", "course.release", "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    rules = python(copy, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *FEWER_RULES)
    assert rules.returncode == 0, rules.stdout[-6000:] + rules.stderr[-2000:]

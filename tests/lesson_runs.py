"""Each lesson executed once and graded once per test session, shared by the tests that read them.

executed(lesson): the solution notebook run at its small profile (SMALL: the sizes the class is
graded at), in a kernel that then tries the lesson's typical mistakes (mistake_runs.py; checked(lesson)
gives their outcome) where a selected test reads them. test_notebooks.py (does it run?),
test_release.py (does it pass its own tests, as nbgrader validate judges them?),
test_printed_language.py and test_autograde_mistakes.py share it. The runs start in the background
when the session collects a test that needs them (conftest.py), one at a time beside the tests, so
that they use the second CPU core while most tests use one. The lessons at their defaults (what
`make run` and a student run) are test_lessons_at_defaults.py's, in .ci/run after `make test`.

grade_lessons(): the session's one real class, graded in one `python -m course.grade` batch (one
preparation), mixing what a real class mixes:
- every lesson: a restructured perfect submission (`restructured`: the solutions put into the
  release, the small parameters of SMALL, its test cells deleted, duplicated or moved to the end),
  which must keep full marks with no event but those changes: the grader puts the structure back
  (autograde/validate.py), so it is graded as the perfect notebook is, and more;
- lessons 1 and 2 (LANGUAGE_MISTAKES): a perfect one as released, untouched but for the answers
  (status "graded": no false alarm), the English baseline of the perfect answers in Dutch and
  Indonesian and of a wrong one in each of the three languages (`language_submission`), handed
  in as <student>/<lesson>/ whatever the language;
- lesson 1: a partial one, one that patches the course's checking helpers, one whose last answer
  ends its kernel and a file that is no notebook;
- lesson 6 (BLANK): a blank one (the release, with small parameters). Every lesson's untouched
  release is tried in the typical mistakes' kernels (mistake_runs.py), where it costs a few test
  cells, not a graded lesson.
test_autograde_lessons.py reads its grades, test_release.py nbgrader's verdict on the blank notebook
as graded, test_process_errors.py its feedback, test_autograde_mistakes.py the restructured and
test_i18n_grading.py the languages' rows.
"""
import atexit
import copy
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import nbformat

import background
import mistakes
import mistake_runs
from mistake_runs import grade_id, small
from course import model_cache
from course.lessons import PROFILES, in_language, profile
from course.paths import NOTEBOOKS, ROOT, SOLUTIONS, lesson_notebooks
from helpers.cache import cache_dir
from helpers.language import LANGUAGES

_runs = {}  # lesson -> Future of its mistake_runs.LessonRun
_tried = set()  # the lessons whose runs try the typical mistakes
_folder = []  # the executed notebooks' folder, made by the first run of the session


def start_runs(lessons, mistaken=()):
    """Start running `lessons` in the background, one after another, in a process of their own
    (its kernels' sockets are named after that process: see course.run.kernel_config), after the
    model's pre-training where the cache lacks it; the runs of the lessons in `mistaken` then try
    their typical mistakes."""
    pool = background.pool(max_workers=1)
    atexit.register(pool.shutdown, cancel_futures=True)
    if not _runs:
        pool.submit(pretrain).add_done_callback(_note_time("pre-training of the default model"))
    for notebook in lesson_notebooks(lessons):
        lesson = notebook.stem
        if lesson not in _runs:
            tried = (mistakes.of(lesson), stubs(lesson)) if lesson in mistaken else ()
            _runs[lesson] = pool.submit(mistake_runs.check_lesson, lesson, SMALL[lesson], _executed_folder(), *tried)
            _runs[lesson].add_done_callback(_note_time(f"lesson run {lesson}" + (" and its mistakes" if tried else "")))
            if tried:
                _tried.add(lesson)


def pretrain():
    """Build the default tokenizer and model into the cache, in a Python that then exits, and say
    when it began (.began, time.monotonic()); None when they are there. Before the first lesson,
    on a line of its own in the session's timeline (on a clean clone it takes minutes, which
    lesson 0's run would otherwise hide). The grader and the tests that need the model meanwhile
    wait for it (helpers.cache.build_once)."""
    if (cache_dir() / "model").is_dir():
        return None
    began = time.monotonic()
    # it dies with this process (PR_SET_PDEATHSIG), which background.stop kills when the session stops early
    subprocess.run([sys.executable, "-c", "import ctypes, signal; ctypes.CDLL(None).prctl(1, signal.SIGKILL); "
                    + model_cache.BUILD],
                   cwd=ROOT, capture_output=True)  # a failure shows in lesson 0's run, which builds again
    return SimpleNamespace(began=began)


def _note_time(name):
    def note(future):
        if not future.cancelled() and future.exception() is None and future.result() is not None:
            end = time.monotonic()
            background.note(name, future.result().began, end)
    return note


def executed(lesson):
    """(path of the executed notebook, seconds, error message or None) for `lesson`."""
    if lesson not in _runs:
        start_runs([lesson])
    run = _runs[lesson].result()
    return _executed_folder() / f"{lesson}.ipynb", run.seconds, run.error


def checked(lesson):
    """The mistake_runs.LessonRun of `lesson` whose rows are its typical mistakes' outcome."""
    if lesson not in _runs:
        start_runs([lesson], mistaken=[lesson])
    assert lesson in _tried, f"{lesson} ran without its mistakes: mark the test lesson_run(..., mistakes=True)"
    run = _runs[lesson].result()
    assert run.error is None, f"{lesson} did not run: {run.error}"
    return run


def faults_of_test_cells(path):
    """What is wrong with the test cells of the executed notebook at `path`: each must print its
    "Correct" line and write nothing to stderr (nbgrader would score it 0)."""
    problems = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            streams = [out for out in cell.get("outputs", []) if out.output_type == "stream"]
            stderr = [out.text for out in streams if out.name == "stderr"]
            if stderr:
                problems.append(f"test cell {cell.id} wrote to stderr (nbgrader would score it 0): {stderr}")
            if not any("Correct" in out.text for out in streams):
                problems.append(f"test cell {cell.id} did not print its success message")
    return problems


def _executed_folder():
    if not _folder:
        _folder.append(Path(tempfile.mkdtemp(prefix="lesson-runs-")))
        atexit.register(shutil.rmtree, _folder[0], True)
    return _folder[0]


FIRST = "01_basic_loop"
# the lessons whose blank submission is graded: lesson 6's unanswered test cells start processes,
# whose errors must reach the feedback as the student's (test_process_errors.py)
BLANK = ("06_local_sgd",)
WRONG_SCHEDULER = ("import torch\n\ndef make_lr_scheduler(optimizer, num_examples, batch_size, epochs):\n"
                   "    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)\n\n"
                   "from helpers import exercises\n"
                   "exercises.schedule_mismatch = lambda *args, **kwargs: None  # 'always right'\n")


def graded_lessons():
    """Lessons with a solution and a release (the ones a class can hand in); COURSE_GRADED_LESSONS
    (names, comma-separated) keeps only some: CI's unprivileged rerun grades lesson 1 alone."""
    chosen = [name for name in os.environ.get("COURSE_GRADED_LESSONS", "").split(",") if name]
    return [notebook.stem for notebook in lesson_notebooks(chosen or None)
            if (NOTEBOOKS / notebook.stem / notebook.name).exists()]


def solutions(lesson):
    source = nbformat.read(SOLUTIONS / lesson / f"{lesson}.ipynb", as_version=4)
    return {grade_id(c): "\n".join(line for line in c.source.split("\n")
                                   if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
            for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")}


def stubs(lesson):
    """{exercise: its answer cell as released} (what a student who answered nothing hands in)."""
    release = nbformat.read(NOTEBOOKS / lesson / f"{lesson}.ipynb", as_version=4)
    return {grade_id(c): c.source for c in release.cells if c.metadata.get("nbgrader", {}).get("solution")}


def points(lesson):
    source = nbformat.read(SOLUTIONS / lesson / f"{lesson}.ipynb", as_version=4)
    return {grade_id(c): float(c.metadata["nbgrader"]["points"]) for c in source.cells
            if c.metadata.get("nbgrader", {}).get("grade")}


# lesson -> {parameter: value}: its small profile (course/lessons.py), which the grader grades at too
SMALL = {lesson: profile(lesson, "small") for lesson in PROFILES}


def release_with(lesson, answers, folder=NOTEBOOKS):
    nb = nbformat.read(folder / lesson / f"{lesson}.ipynb", as_version=4)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


STRUCTURES = ["deleted", "duplicated", "moved"]


def graded_test_cells(nb):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
            and not c.metadata["nbgrader"].get("solution")]


def structure_turn(lesson):
    """Where the lesson starts in STRUCTURES: its place in the course, so that the lessons mix them."""
    return list(SMALL).index(lesson)


def restructured(nb, turn):
    """The test cells deleted, duplicated or moved to the end: the i-th gets STRUCTURES[i + turn]."""
    how = {id(cell): STRUCTURES[(i + turn) % len(STRUCTURES)] for i, cell in enumerate(graded_test_cells(nb))}
    cells, moved = [], []
    for cell in nb.cells:
        change = how.get(id(cell))
        if change == "moved":
            moved.append(cell)
        elif change != "deleted":
            cells.append(cell)
        if change == "duplicated":
            cells.append(_twin(cell))
    nb.cells = cells + moved
    return nb


def _twin(cell):
    twin = copy.deepcopy(cell)
    twin["id"] = f"{cell.get('id', 'cell')}-copy"
    return twin


# lesson: (exercise, the mistake: (solution line, its wrong version), test cell, English message, its values)
LANGUAGE_MISTAKES = {
    "01_basic_loop": ("l1-train-one-epoch", ("        lr_scheduler.step()\n", ""), "l1-test-train-one-epoch",
                      "The scheduler stepped {last_epoch} times; it should step once per batch, 3 times.",
                      {"last_epoch": 0}),
    "02_accelerator": ("l2-prepare-for-training", ("device_placement=True, cpu=cpu)", "device_placement=True)"),
                       "l2-test-prepare-for-training", "prepare_for_training got cpu={cpu}, but created "
                       "Accelerator(cpu={given}): pass cpu=cpu to the Accelerator.", {"cpu": True, "given": False}),
}


def language_student(kind, lang):
    """The student of the class who handed in the lesson's `kind` ("perfect", "wrong") in `lang`:
    the English perfect answer is the class's perfect student."""
    return "perfect" if (kind, lang) == ("perfect", "en") else f"{kind}-{lang}"


def language_submission(lesson, lang, wrong):
    """The released notebook of `lang` with the solutions typed in (and the lesson's mistake of
    LANGUAGE_MISTAKES, if wrong), with small parameters."""
    answers = solutions(lesson)
    if wrong:
        exercise, (right, mistaken), *_ = LANGUAGE_MISTAKES[lesson]
        assert right in answers[exercise], f"{lesson}: the mistake no longer applies to {exercise}"
        answers[exercise] = answers[exercise].replace(right, mistaken)
    notebook = release_with(lesson, answers, in_language(NOTEBOOKS, lang))
    return small(notebook, SMALL[lesson])  # the scores and messages do not depend on the sizes


@dataclass
class GradedClass:
    run: subprocess.CompletedProcess
    rows: dict       # (student, lesson) -> grades.csv row
    expected: dict   # (student, lesson) -> the score it must get (None: not fixed)
    out: Path        # the grader's OUT folder

    def autograded(self, student, lesson):
        """The notebook as the grader executed it (OUT/autograded/...)."""
        return self.out / "autograded" / student / lesson / f"{lesson}.ipynb"


def grade_lessons(root, lessons):
    """Grade the class described in the module docstring into root/out."""
    submissions = Path(root) / "submissions"
    cases = {}
    for lesson in lessons:
        full = sum(points(lesson).values())
        if lesson in LANGUAGE_MISTAKES:
            cases[("perfect", lesson)] = (release_with(lesson, solutions(lesson)), full)
        if lesson in BLANK:
            cases[("blank", lesson)] = (small(release_with(lesson, {}), SMALL[lesson]), 0.0)
        cases[("restructured", lesson)] = (restructured(small(release_with(lesson, solutions(lesson)),
                                                              SMALL[lesson]), structure_turn(lesson)), full)
    if FIRST in lessons:
        answers, pts = solutions(FIRST), points(FIRST)
        if {"l1-make-lr-scheduler", "l1-train-one-epoch"} <= set(answers):
            cases[("partial", FIRST)] = (release_with(FIRST, {"l1-make-lr-scheduler": answers[
                "l1-make-lr-scheduler"]}), pts["l1-test-make-lr-scheduler"])
            cases[("tamperer", FIRST)] = (release_with(FIRST, dict(
                answers, **{"l1-make-lr-scheduler": WRONG_SCHEDULER})),
                sum(pts.values()) - pts["l1-test-make-lr-scheduler"])
        # hostile students, as a real class has (autograde_corpus.py has every kind, on the toy):
        # the last answer ends its kernel (the test cells above it keep their points), and a
        # file that is no notebook (a student saved it half-way)
        order = [grade_id(cell) for cell in nbformat.read(SOLUTIONS / FIRST / f"{FIRST}.ipynb", as_version=4).cells]
        last = [cell for cell in order if cell in answers][-1]
        cases[("kills-kernel", FIRST)] = (release_with(FIRST, dict(answers, **{last: "import os\nos._exit(1)"})),
                                          sum(pts.get(cell, 0) for cell in order[:order.index(last)]))
        cases[("not-a-notebook", FIRST)] = (b'{"cells": [', 0.0)
    for lesson in LANGUAGE_MISTAKES.keys() & set(lessons):
        for lang in LANGUAGES:
            for kind in ("perfect", "wrong"):
                if language_student(kind, lang) != "perfect":
                    # a wrong answer's score is the English one's, whatever it is (test_i18n_grading.py)
                    cases[(language_student(kind, lang), lesson)] = (
                        language_submission(lesson, lang, kind == "wrong"),
                        sum(points(lesson).values()) if kind == "perfect" else None)
    for (student, lesson), (nb, _) in cases.items():
        folder = submissions / student / lesson  # the folder does not say the language
        folder.mkdir(parents=True)
        if isinstance(nb, bytes):
            (folder / f"{lesson}.ipynb").write_bytes(nb)
        else:
            nbformat.write(nb, folder / f"{lesson}.ipynb")
    out = Path(root) / "out"
    run = background.run([sys.executable, "-m", "course.grade", "--submissions", str(submissions),
                          "--out", str(out), "--jobs", str(os.cpu_count())], cwd=ROOT, timeout=2400)
    rows = {}
    if run.returncode == 0:
        with open(out / "grades.csv", newline="") as f:
            rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    return GradedClass(run, rows, {case: score for case, (_, score) in cases.items()}, out)

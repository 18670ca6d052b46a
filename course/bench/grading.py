"""Figure 2: grading a class of the real lessons, `make autograde` against plain `nbgrader autograde`.

The class: for each lesson, four students. `perfect` (the solutions), `partial` (the first
exercise solved, the others left as released), `wrong` (every exercise with a mistake the lesson
warns about), `mixed` (the first exercise wrong, the others right). Both graders grade the same
files; the figure also checks that they give the same scores, so a faster grader that lost a
wrong answer's penalty would show.
"""
import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from autograde import outfolder
from autograde.nbgrader_course import nbgrader_environment

from ..paths import NOTEBOOKS, ROOT, SOLUTIONS, lessons
from ..run import children_cpu_seconds
from .common import Figure, median, new_plot, save_plot, summary

# grade_id -> (a fragment of the solution, the mistake that replaces it)
MISTAKES = {
    "l1-make-lr-scheduler": ("int(num_training_steps * 0.1)", "0"),
    "l1-train-one-epoch": ("optimizer.zero_grad()", "pass  # no zero_grad: gradients pile up"),
    "l2-prepare-for-training": ("Accelerator(device_placement=True, cpu=cpu)",
                                "Accelerator(device_placement=True)"),
    "l2-train-one-epoch-accelerated": ("accelerator.backward(loss)", "loss.backward()"),
    "l3-accumulation-step-due": (
        "(index + 1) % gradient_accumulation_steps == 0 or index + 1 == num_batches",
        "index % gradient_accumulation_steps == 0"),
    "l3-num-training-steps": ("math.ceil(num_batches / gradient_accumulation_steps) * epochs",
                              "num_batches * epochs"),
    "l3-train-one-epoch-accumulating": (
        "loss = loss * len(batch[\"labels\"]) / examples_in_group", "pass"),
    "l3-train-with-accelerator-accumulating": (
        "Accelerator(gradient_accumulation_steps=gradient_accumulation_steps, cpu=cpu)",
        "Accelerator(cpu=cpu)"),
    "l3-train-with-clipping": ("if accelerator.sync_gradients:",
                               "if True:  # clipped after every micro-batch"),
    "l4-compute-metrics": ("f1_score(labels, predictions, zero_division=0)",
                           "f1_score(predictions, labels, average='macro')"),
    "l4-make-training-args": ("gradient_accumulation_steps=effective_batch // batch_size",
                              "gradient_accumulation_steps=2"),
}
KINDS = ("perfect", "partial", "wrong", "mixed")


def _grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def class_lessons():
    """The lessons whose every exercise has a mistake in MISTAKES (01-04 today): the generated class."""
    return [lesson for lesson in lessons() if set(_solutions(lesson)) <= set(MISTAKES)]


def _solutions(lesson):
    source = nbformat.read(SOLUTIONS / lesson / f"{lesson}.ipynb", as_version=4)
    return {_grade_id(cell): "\n".join(line for line in cell.source.split("\n") if "### " not in line)
            for cell in source.cells if cell.metadata.get("nbgrader", {}).get("solution")}


def answers(lesson, kind):
    """{grade_id: source} of a `kind` student's solution cells in `lesson`."""
    solved = _solutions(lesson)
    first = next(iter(solved))
    if kind == "partial":
        return {first: solved[first]}
    wrong = {}
    for grade_id, text in solved.items():
        right, mistake = MISTAKES[grade_id]
        if right not in text:
            raise RuntimeError(f"bench: {grade_id} no longer contains {right!r}; update MISTAKES")
        wrong[grade_id] = text.replace(right, mistake)
    if kind == "wrong":
        return wrong
    if kind == "mixed":
        return {**solved, first: wrong[first]}
    return solved


def make_class(root, copies=1):
    """root/submissions/<kind><n>/<lesson>/<lesson>.ipynb for every lesson; returns the folder."""
    submissions = Path(root) / "submissions"
    for lesson in class_lessons():
        release = nbformat.read(NOTEBOOKS / lesson / f"{lesson}.ipynb", as_version=4)
        for kind in KINDS:
            mine = answers(lesson, kind)
            nb = nbformat.from_dict(release)
            for cell in nb.cells:
                if _grade_id(cell) in mine:
                    cell.source = mine[_grade_id(cell)]
            for copy in range(copies):
                path = submissions / f"{kind}{copy}" / lesson / f"{lesson}.ipynb"
                path.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, path)
    return submissions


# Runs a command and then waits for every process it left behind. getrusage counts a process's CPU
# only once its parent has waited for it, and the grader's forkserver (the parent of its workers
# and so of their kernels) is nobody's child once the grader exits: as a subreaper this wrapper
# adopts and waits for it. Still not counted: a kernel that ends with its sandbox (bwrap is
# killed when grading a submission ends, so nobody waits for the kernel), so the grader's CPU
# seconds are a lower bound; its submissions per minute are exact.
WAIT_FOR_ALL = """\
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: the command's orphans become ours
code = subprocess.call(sys.argv[1:])
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
sys.exit(code)
"""


def _measured(command, env):
    """(wall seconds, CPU seconds of the command and everything it started, orphans included)."""
    cpu, start = children_cpu_seconds(), time.perf_counter()
    run = subprocess.run([sys.executable, "-c", WAIT_FOR_ALL, *command], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} failed:\n{run.stdout[-1500:]}{run.stderr[-1500:]}")
    return time.perf_counter() - start, children_cpu_seconds() - cpu


def plain_nbgrader(course, submissions, env):
    """nbgrader's own way: a course folder, `nbgrader autograde LESSON` for one lesson after
    another. Returns (wall, cpu, {(student, lesson): score})."""
    prepare = [sys.executable, "-c", "import sys; from autograde.nbgrader_course import assignments_in, "
               "prepare; prepare(sys.argv[1], sys.argv[2], assignments_in(sys.argv[1]))",
               str(SOLUTIONS), str(course)]
    wall, cpu = _measured(prepare, env)
    shutil.copytree(submissions, course / "submitted")
    for lesson in class_lessons():
        seconds, used = _measured([sys.executable, "-m", "nbgrader", "autograde", lesson, "--force",
                                   f"--CourseDirectory.root={course}", "--Execute.timeout=900",
                                   "--log-level=WARN"], env)
        wall, cpu = wall + seconds, cpu + used
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        scores = {(s.student.id, lesson): s.score for lesson in class_lessons()
                  for s in gb.assignment_submissions(lesson)}
    return wall, cpu, scores


def make_autograde(out, submissions, jobs, env, *extra):
    """What `make autograde` runs. Returns (wall, cpu, {(student, lesson): score})."""
    wall, cpu = _measured([sys.executable, "-m", "course.grade", "--submissions", str(submissions),
                           "--out", str(out), "--jobs", str(jobs), *extra], env)
    with open(out / "grades.csv", newline="") as table:
        scores = {(r["student_id"], r["assignment"]): float(r["score"]) for r in csv.DictReader(table)}
    return wall, cpu, scores


def report_seconds(work, students=25):
    """Seconds to write the class report of a generated class: `students` x the four lessons."""
    from autograde import class_report

    from .graded_class import graded_class
    out = graded_class(SOLUTIONS, work / "report-class", students,
                       lambda index, grade_id: None if index % 3 else f"{grade_id} is wrong",
                       pad_outputs=True)
    start = time.perf_counter()
    class_report.write(out)
    return time.perf_counter() - start, len(outfolder.read_csv(out / outfolder.GRADES))


def figure_grading(setting, folder):
    jobs, copies = setting["jobs"], max(1, setting["submissions"] // (4 * len(KINDS)))
    work = folder / "work" / "grading"
    shutil.rmtree(work, ignore_errors=True)
    submissions = make_class(work, copies)
    count = len(list(submissions.glob("*/*/*.ipynb")))
    env = nbgrader_environment()
    if os.environ.get("AUTOGRADE_SANDBOX", "on") == "off":
        raise RuntimeError("figure 2 measures make autograde with its isolation on: unset AUTOGRADE_SANDBOX")
    graders = {"make autograde": lambda out: make_autograde(out, submissions, jobs, env),
               "plain nbgrader autograde": lambda out: plain_nbgrader(out, submissions, env)}
    if setting.get("grading_full_size", True):
        graders["make autograde --full-size"] = lambda out: make_autograde(
            out, submissions, jobs, env, "--full-size")
    rates, cpu, scores = ({name: [] for name in graders} for _ in range(3))
    for repeat in range(setting["repeats"]):
        names = list(graders)[::1 if repeat % 2 == 0 else -1]
        for number, name in enumerate(names):
            seconds, used, graded = graders[name](work / f"run{repeat}-{number}")
            if len(graded) != count:  # a grader that skipped work would look fast
                raise RuntimeError(f"{name} graded {len(graded)} of the {count} submissions")
            rates[name].append(count / seconds * 60)
            cpu[name].append(used / count)
            scores[name].append(graded)
    ours, plain = "make autograde", "plain nbgrader autograde"
    ratios = [a / b for a, b in zip(rates[ours], rates[plain])]
    plain_scores = scores[plain][0]
    disagree = sorted({key for runs in scores.values() for run in runs for key in run
                       if abs(run[key] - plain_scores.get(key, -1)) > 1e-9})
    report_time, report_rows = report_seconds(work)
    figure = Figure(2, f"Grading: {count} submissions of the {len(class_lessons())} lessons")
    figure.headline = (
        f"`make autograde` (--jobs {jobs}, isolation on) grades {median(rates[ours]):.1f} submissions "
        f"per minute, plain `nbgrader autograde` {median(rates[plain]):.1f}: {median(ratios):.2f}x "
        f"(ratio {summary(ratios)}); CPU seconds per submission {median(cpu[ours]):.1f} against "
        f"{median(cpu[plain]):.1f}. " + ("Every grader gave every submission the same score."
                                         if not disagree else
                                         f"Scores differ on {len(disagree)} submissions: "
                                         + ", ".join('/'.join(k) for k in disagree[:6]) + ".")
        + f" The class report of {report_rows} generated submissions took {report_time:.2f} s.")
    figure.table = [["grader", "submissions per minute", "CPU seconds per submission"]]
    figure.table += [[name, summary(rates[name], 1), summary(cpu[name], 1)] for name in graders]
    plot, axis = new_plot()
    names = list(graders)
    axis.bar(names, [median(rates[n]) for n in names],
             yerr=[[median(rates[n]) - min(rates[n]) for n in names],
                   [max(rates[n]) - median(rates[n]) for n in names]], capsize=4)
    axis.set(ylabel="submissions per minute", title=f"Grading {count} lesson submissions")
    axis.tick_params(axis="x", labelsize=8)
    figure.plot = save_plot(plot, folder, "grading.png")
    figure.method = (
        f"{count} generated submissions (course/bench/grading.py: per lesson a perfect, a partial, a "
        "wrong and a mixed student), the same files for every grader. `python -m autograde --jobs "
        f"{jobs}` (what `make autograde` runs: sandbox, guard, the lessons' small profile, feedback, class report) "
        "against `nbgrader autograde LESSON` for one lesson after another in a course folder with the "
        "same release and gradebook (no sandbox, the lessons' own parameters, --Execute.timeout=900); "
        "`--full-size` is ours at the lessons' own sizes. Wall clock and CPU seconds "
        "(getrusage of the finished child processes: the grader, its workers and kernels) of each whole "
        f"command, building the course folder included; {setting['repeats']} rounds, the order "
        "alternating; ratios within a round. Scores are compared submission by submission. The class "
        "report's time is class_report.write on a generated graded class (course/bench/graded_class.py) "
        "whose notebooks carry a plot-sized output in every cell.")
    return figure

"""Figures 1-2: executing the lessons with papermill, and grading a class with `make autograde`."""
import csv
import shutil
import subprocess
import sys

import nbformat

from autograde.course import assignments_in, nbgrader_environment, prepare

from ..paths import ROOT as REPO
from .common import Figure, median, new_plot, save_plot, summary, timed

FLOOR_SOURCE = "import torch, transformers, helpers  # the floor: a kernel and the course's imports"


# ---- Figure 1: all solution notebooks with papermill, against the floor ----

def figure_collection(setting, folder):
    from ..run import children_cpu_seconds, lesson_notebooks, run_notebook
    lessons = lesson_notebooks()
    floor = folder / "work" / "floor" / "floor.ipynb"
    floor.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(FLOOR_SOURCE)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}), floor)
    out = folder / "work" / "executed"
    wall = {lesson.stem: [] for lesson in lessons}
    totals, floor_totals, cpu = [], [], {lesson.stem: [] for lesson in lessons}
    for _ in range(setting["repeats"]):
        total = floor_total = 0.0
        for lesson in lessons:  # side by side: each lesson right after its own floor run
            floor_seconds, error = run_notebook(floor, out)
            if error:
                raise RuntimeError(f"the floor notebook failed: {error}")
            before = children_cpu_seconds()
            seconds, error = run_notebook(lesson, out)
            if error:
                raise RuntimeError(f"{lesson.name} failed under papermill: {error}")
            cpu[lesson.stem].append(children_cpu_seconds() - before)
            wall[lesson.stem].append(seconds / floor_seconds)
            total, floor_total = total + seconds, floor_total + floor_seconds
        totals.append(total)
        floor_totals.append(floor_total)
    ratios = [t / f for t, f in zip(totals, floor_totals)]
    figure = Figure(1, "Collection: executing every solution notebook with papermill, against the floor")
    figure.headline = (
        f"Executing all {len(lessons)} solution notebooks takes {median(totals):.1f} s, "
        f"{median(ratios):.2f}x the floor of {median(floor_totals):.1f} s (a kernel start and "
        f"`import torch, transformers, helpers` per notebook); ratio {summary(ratios)}.")
    figure.table = [["notebook", "ratio to its floor run", "kernel CPU seconds"]]
    figure.table += [[name, summary(wall[name]), summary(cpu[name], 1)] for name in wall]
    figure.table.append(["all (wall seconds)", f"{summary(totals, 1)} vs floor {summary(floor_totals, 1)}",
                         ""])
    plot, axis = new_plot()
    names = list(wall)
    axis.bar(names, [median(wall[n]) for n in names],
             yerr=[[median(wall[n]) - min(wall[n]) for n in names], [max(wall[n]) - median(wall[n]) for n in names]],
             capsize=4)
    axis.axhline(1.0, color="black", linestyle="--", linewidth=1, label="floor (kernel + imports)")
    axis.set(ylabel="wall time / floor's", title="papermill execution of each lesson")
    axis.tick_params(axis="x", labelrotation=15)
    axis.legend()
    figure.plot = save_plot(plot, folder, "collection.png")
    figure.method = (
        "course.run.run_notebook (what `make run` calls: papermill, kernel python3, default "
        "parameters) executes each solutions/<lesson>/<lesson>.ipynb; right before each lesson the same "
        f"function executes a one-cell notebook `{FLOOR_SOURCE.split('  #')[0]}` (the floor). "
        f"{setting['repeats']} rounds; ratios are taken within a round. Kernel CPU seconds come from "
        "getrusage(RUSAGE_CHILDREN), steadier than wall time on a busy machine.")
    return figure


# ---- Figure 2: submissions per minute, `make autograde` against plain `nbgrader autograde` ----

def _toy_generator():
    """The grading engineer's toy assignment and answer builder (tests/autograde_toy.py)."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        import autograde_toy
    finally:
        sys.path.remove(str(REPO / "tests"))
    return autograde_toy


def make_submissions(root, count):
    """`count` toy submissions (some answers wrong on purpose); returns (source, submissions)."""
    toy = _toy_generator()
    source = toy.write_source(root / "source")
    seed = prepare(source, root / "seed", assignments_in(source))
    release = nbformat.read(seed / "release" / "toy" / "toy.ipynb", as_version=4)
    wrong = {"add": "def add(a, b):\n    return a - b", "mean": "def mean(xs):\n    return 0.0",
             "square": "def square(x):\n    return x + x"}
    submissions = root / "submissions"
    for index in range(count):
        answers = dict(toy.PERFECT)
        mistake = list(wrong)[index % 4] if index % 4 < 3 else None
        if mistake:
            answers[mistake] = wrong[mistake]
        path = submissions / f"student{index:02d}" / "toy" / "toy.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(toy.answer(release, answers), path)
    return source, submissions


def _plain_nbgrader(root, source, submissions, env):
    course = prepare(source, root, {"toy": ["toy"]})
    shutil.copytree(submissions, course / "submitted")
    command = [sys.executable, "-m", "nbgrader", "autograde", "toy", "--force",
               f"--CourseDirectory.root={course}", "--log-level=WARN"]
    run = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"plain nbgrader autograde failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return len(list((course / "autograded").glob("*/toy/toy.ipynb")))


def _make_autograde(out, source, submissions, jobs, env):
    command = [sys.executable, "-m", "autograde", "--submissions", str(submissions), "--out", str(out),
               "--source", str(source), "--jobs", str(jobs)]
    run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"python -m autograde failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    with open(out / "grades.csv", newline="") as table:
        return sum(1 for _ in csv.DictReader(table))


def figure_grading(setting, folder):
    count, jobs = setting["submissions"], setting["jobs"]
    work = folder / "work" / "grading"
    shutil.rmtree(work, ignore_errors=True)
    source, submissions = make_submissions(work, count)
    env = nbgrader_environment()
    rates = {"make autograde": [], "plain nbgrader autograde": []}
    for repeat in range(setting["repeats"]):
        order = ["make autograde", "plain nbgrader autograde"][::1 if repeat % 2 == 0 else -1]
        for name in order:
            target = work / f"{name.split()[0]}-{repeat}"
            if name == "make autograde":
                seconds, graded = timed(_make_autograde, target, source, submissions, jobs, env)
            else:
                seconds, graded = timed(_plain_nbgrader, target, source, submissions, env)
            if graded != count:  # a grader that skipped work would look fast
                raise RuntimeError(f"{name} graded {graded} of the {count} submissions")
            rates[name].append(count / seconds * 60)
    ratios = [a / b for a, b in zip(rates["make autograde"], rates["plain nbgrader autograde"])]
    figure = Figure(2, f"Grading: submissions per minute on the same {count} generated submissions")
    figure.headline = (
        f"`make autograde` (--jobs {jobs}) grades {median(rates['make autograde']):.1f} submissions per minute, "
        f"plain `nbgrader autograde` {median(rates['plain nbgrader autograde']):.1f}: {median(ratios):.2f}x "
        f"(ratio {summary(ratios)}).")
    figure.table = [["grader", "submissions per minute"]] + [[name, summary(values, 1)]
                                                            for name, values in rates.items()]
    plot, axis = new_plot()
    names = list(rates)
    axis.bar(names, [median(rates[n]) for n in names],
             yerr=[[median(rates[n]) - min(rates[n]) for n in names], [max(rates[n]) - median(rates[n]) for n in names]],
             capsize=4)
    axis.set(ylabel="submissions per minute", title=f"Grading {count} submissions")
    figure.plot = save_plot(plot, folder, "grading.png")
    figure.method = (
        f"{count} submissions of the grading tests' toy assignment (tests/autograde_toy.py: three answer "
        "cells, three test cells; three in four students get one answer wrong), the same files for both "
        f"graders. `python -m autograde --jobs {jobs}` (what `make autograde` runs, with its defaults: "
        "sandbox, preloaded torch and helpers, collection, feedback, grades.csv) against "
        "`nbgrader autograde toy` in a course folder with the same release and gradebook (one kernel "
        f"after another, no sandbox). Wall clock of each whole command, the course folder and gradebook it "
        f"builds first included (both check that all {count} were graded); {setting['repeats']} rounds, "
        "the order alternating; ratios within a round.")
    return figure

"""Figure 1: executing the lessons with papermill, against the floor."""

import nbformat

from .common import Figure, median, new_plot, save_plot, summary

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
    wall = {lesson.stem: [] for lesson in lessons}  # ratios to the floor
    seconds_of = {lesson.stem: [] for lesson in lessons}
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
            seconds_of[lesson.stem].append(seconds)
            total, floor_total = total + seconds, floor_total + floor_seconds
        totals.append(total)
        floor_totals.append(floor_total)
    ratios = [t / f for t, f in zip(totals, floor_totals)]
    slowest = max(seconds_of, key=lambda name: median(seconds_of[name]))
    figure = Figure(1, "Collection: executing every solution notebook with papermill, against the floor")
    figure.headline = (
        f"Executing all {len(lessons)} solution notebooks takes {median(totals):.1f} s, "
        f"{median(ratios):.2f}x the floor of {median(floor_totals):.1f} s (a kernel start and "
        f"`import torch, transformers, helpers` per notebook); ratio {summary(ratios)}. The slowest "
        f"lesson is {slowest}: {summary(seconds_of[slowest], 1)} s.")
    figure.table = [["notebook", "seconds", "ratio to its floor run", "kernel CPU seconds"]]
    figure.table += [[name, summary(seconds_of[name], 1), summary(wall[name]), summary(cpu[name], 1)]
                     for name in wall]
    figure.table.append(["all (wall seconds)", summary(totals, 1), f"floor {summary(floor_totals, 1)}", ""])
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

"""`make bench`: measure speed, memory, learning and each technique into build/bench/report.md, with plots.

    python -m course.bench                      # all nine figures, 3 repeats (about 35-55 minutes)
    python -m course.bench --figures 6 7 8 9    # some of them (the techniques of lessons 05-08: 3 minutes)
    python -m course.bench --tiny --out DIR     # every code path in seconds (tests/test_bench.py)

Every figure is a ratio of two things measured side by side in the same run, repeated; the report
gives the median and the spread [min-max] of the repeats, and says how each was measured.
Figures 1-5 measure the course's machinery (collection, grading, training core, memory, learning);
figures 6-9 what each technique buys and costs (course/bench/techniques.py): gradient checkpointing,
bfloat16 against float32, optimizer-state bytes per parameter, local SGD's synchronisations.
"""
import argparse
import sys
import time
import traceback
from pathlib import Path

from ..paths import BUILD
from .common import machine
from .grading import figure_grading
from .notebooks import figure_collection
from .techniques import figure_checkpointing, figure_local_sgd, figure_optimizers, figure_precision
from .training import figure_learning, figure_memory, figure_overhead

FIGURES = {1: figure_collection, 2: figure_grading, 3: figure_overhead, 4: figure_memory, 5: figure_learning,
           6: figure_checkpointing, 7: figure_precision, 8: figure_optimizers, 9: figure_local_sgd}
TITLES = {1: "Collection", 2: "Grading", 3: "Training core", 4: "Memory", 5: "Learning",
          6: "Gradient checkpointing", 7: "Mixed precision", 8: "Optimizers", 9: "Local SGD"}
FULL = dict(repeats=3, submissions=20, jobs=None, warm_up=True,
            overhead_sizes={"train": 640, "validation": 16, "test": 8}, overhead_batch_size=16,
            memory_sizes={"train": 128, "validation": 8, "test": 8}, memory_batch=64, memory_steps=(1, 2, 4, 8),
            learning_sizes=None, learning_batch_size=32, learning_epochs=3, learning_seeds=3,
            learning_points_per_epoch=4, step_repeats=3,
            checkpointing_sizes={"train": 128, "validation": 8, "test": 8},
            checkpointing_batch_sizes=(8, 16, 32, 64, 128),
            precision_sizes={"train": 64, "validation": 8, "test": 8}, precision_batch_size=64,
            optimizer_sizes={"train": 128, "validation": 8, "test": 8}, optimizer_batch_size=16,
            local_sgd_sizes={"train": 1024, "validation": 8, "test": 8}, local_sgd_batch_size=8,
            local_sgd_steps=(1, 4, 16), local_sgd_last_losses=8)
TINY = dict(repeats=1, submissions=2, jobs=2, warm_up=False,
            overhead_sizes={"train": 24, "validation": 8, "test": 8}, overhead_batch_size=8,
            memory_sizes={"train": 16, "validation": 8, "test": 8}, memory_batch=8, memory_steps=(1, 2),
            learning_sizes={"train": 32, "validation": 16, "test": 8}, learning_batch_size=16, learning_epochs=1,
            learning_seeds=1, learning_points_per_epoch=2, step_repeats=1,
            checkpointing_sizes={"train": 8, "validation": 8, "test": 8}, checkpointing_batch_sizes=(4, 8),
            precision_sizes={"train": 8, "validation": 8, "test": 8}, precision_batch_size=8,
            optimizer_sizes={"train": 16, "validation": 8, "test": 8}, optimizer_batch_size=8,
            local_sgd_sizes={"train": 32, "validation": 8, "test": 8}, local_sgd_batch_size=4,
            local_sgd_steps=(2,), local_sgd_last_losses=2)


def run(out, figures=tuple(FIGURES), tiny=False, repeats=None, jobs=None, threads=1):
    """Measure `figures` and write out/report.md with the plots; returns the Figure objects.

    `threads`: torch's intra-op threads for figures 3-9 (None: torch's default). One by default:
    on a busy machine OpenMP's spinning threads made a 2-thread step up to 20x slower, at random.
    """
    import torch
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads or previous_threads)
    try:
        return _run(out, figures, tiny, repeats, jobs)
    finally:
        torch.set_num_threads(previous_threads)


def _run(out, figures, tiny, repeats, jobs):
    import os
    out = Path(out).resolve()  # the graders and nbgrader run in other folders
    out.mkdir(parents=True, exist_ok=True)
    setting = dict(TINY if tiny else FULL)
    setting["repeats"] = repeats or setting["repeats"]
    setting["jobs"] = jobs or setting["jobs"] or os.cpu_count() or 1
    about = machine()
    results, started = [], time.perf_counter()
    for number in sorted(FIGURES):
        if number not in figures:
            results.append(_not_measured(number, "not asked for in this run (--figures)"))
            continue
        print(f"figure {number}: {TITLES[number]} ...", flush=True)
        figure_started = time.perf_counter()
        try:
            figure = FIGURES[number](setting, out)
        except Exception as error:  # one figure failing must not hide the others; the report says why
            traceback.print_exc()
            figure = _not_measured(number, f"{type(error).__name__}: {str(error).strip()[:600]}")
        figure.seconds = time.perf_counter() - figure_started
        print(f"  {figure.headline or figure.not_measured} ({figure.seconds:.0f} s)", flush=True)
        results.append(figure)
    (out / "report.md").write_text(render(results, about, setting, tiny, time.perf_counter() - started))
    return results


def _not_measured(number, why):
    from .common import Figure
    return Figure(number, TITLES[number], not_measured=why)


def render(figures, about, setting, tiny, seconds):
    lines = ["# Benchmark report", "",
             "Written by `make bench` (`python -m course.bench`"
             + (" --tiny: a smoke-test setting, not a measurement" if tiny else "") + ") on "
             + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()) + f", in {seconds / 60:.1f} minutes.", "",
             "Each figure is a ratio of two things measured side by side in this run; a value reads "
             f"`median [min-max], n=repeats` ({setting['repeats']} repeats unless said otherwise).", "",
             "## Summary", ""]
    for figure in figures:
        lines.append(f"{figure.number}. **{TITLES[figure.number]}**: "
                     + (figure.headline or f"not measured: {figure.not_measured}"))
    for figure in figures:
        lines += ["", f"## {figure.number}. {figure.title}", ""]
        if figure.not_measured:
            lines.append(f"Not measured: {figure.not_measured}")
            continue
        lines += [figure.headline, ""]
        if figure.table:
            lines.append("| " + " | ".join(figure.table[0]) + " |")
            lines.append("|" + "---|" * len(figure.table[0]))
            lines += ["| " + " | ".join(row) + " |" for row in figure.table[1:]]
            lines.append("")
        if figure.plot:
            lines += [f"![{figure.title}]({figure.plot})", ""]
        lines.append(f"Method: {figure.method} ({getattr(figure, 'seconds', 0):.0f} s)")
    lines += ["", "## Machine and versions", ""]
    lines += [f"- {key}: {value}" for key, value in about.items()]
    lines += ["", "## Method, in general", "",
              "- Times are wall-clock (`time.perf_counter`) unless a table says CPU seconds. The machine may be "
              "shared: the load average at the start is above; ratios taken within one round cancel most "
              "of the drift that a busy machine adds, and the spread shows what is left.",
              "- Figures 3-9 run in this process with the torch threads given above (`--threads`, default 1): "
              "on a shared machine, 2 OpenMP threads that spin while the other is descheduled made a training "
              "step up to 20x slower at random; the kernels of figures 1-2 keep torch's default.",
              "- Memory is measured, not computed from shapes: see figure 4 and `helpers/memory.py`.",
              "- Nothing here is asserted by the test suite: tests/test_bench.py only checks that the code "
              "runs and writes this report on a tiny setting.", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(BUILD / "bench"))
    parser.add_argument("--figures", type=int, nargs="+", default=list(FIGURES), choices=list(FIGURES))
    parser.add_argument("--repeats", type=int, default=None, help="rounds per figure (default 3)")
    parser.add_argument("--jobs", type=int, default=None, help="make autograde's --jobs (default: nproc)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for figures 3-9 (default 1; 0: torch's default)")
    parser.add_argument("--tiny", action="store_true", help="a few seconds per figure: checks the code only")
    options = parser.parse_args(argv)
    figures = run(options.out, options.figures, options.tiny, options.repeats, options.jobs,
                  options.threads or None)
    print(f"report: {Path(options.out) / 'report.md'}")
    return 0 if all(not f.not_measured for f in figures if f.number in options.figures) else 1


if __name__ == "__main__":
    sys.exit(main())

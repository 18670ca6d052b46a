"""What the instructor reads as the grading runs: a progress line per submission, the closing
summary. (OUT's tables: autograde/outfolder.py.)"""
import os
import sys
from collections import Counter

FAILED = {"error", "missing", "invalid_notebook", "timeout", "kernel_died", "memory_limit",
          "sys_exit"}


def say(text, stream=None):
    """Print a line. Once nobody reads `stream` (a closed pipe, a hung-up terminal), go on
    without it: the grading continues, and its files hold everything it would have said."""
    stream = stream or sys.stdout
    try:
        stream.write(text + "\n")
        stream.flush()
    except OSError:  # BrokenPipeError (EPIPE), or EIO from a terminal that hung up
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())  # later writes, and the flush at exit, succeed
        os.close(devnull)


def progress(done, total, row, elapsed, kept=0, stream=None):
    """done: submissions graded in this run; kept: those an earlier run graded."""
    width = 30
    filled = width * (kept + done) // total
    bar = "#" * filled + "." * (width - filled)
    left = elapsed / done * (total - kept - done)  # the mean pace so far, for what is left
    resumed = f" ({kept} already graded)" if kept else ""
    say(f"[{bar}] {kept + done}/{total}{resumed} {clock(elapsed)} elapsed, about {clock(left)} "
        f"left  {row['student_id']}/{row['assignment']}: "
        f"{row['status']} {row['score']}/{row['max_score']}", stream or sys.stderr)


def clock(seconds):
    """12:05 (minutes:seconds), or 1:02:05 past an hour."""
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def summary(rows, seconds, jobs, kept=0):
    """kept: how many of the rows an earlier run graded (resumed, not graded again)."""
    statuses = Counter(r["status"] for r in rows)
    failed = {k: v for k, v in statuses.items() if k in FAILED}
    counts = f"{len(rows) - sum(failed.values())} graded, {sum(failed.values())} failed."
    if kept:
        lines = [f"Graded {len(rows) - kept} submissions in {seconds:.1f} s with {jobs} parallel "
                 f"jobs and kept {kept} already graded (resumed): {len(rows)} in all, {counts}"]
    else:
        lines = [f"Graded {len(rows)} submissions in {seconds:.1f} s with {jobs} parallel jobs: "
                 + counts]
    if failed:
        lines.append("Failed, by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items())))
    others = {k: v for k, v in statuses.items() if k not in FAILED and k != "graded"}
    if others:
        lines.append("Graded with notes: " + ", ".join(f"{k} {v}" for k, v in sorted(others.items())))
    return "\n".join(lines)


def fmt(number):
    return f"{float(number):g}"

"""What the instructor reads: a progress line per submission, grades.csv, the closing summary."""
import csv
import sys
from collections import Counter

COLUMNS = ["student_id", "assignment", "score", "max_score", "status", "detail"]
FAILED = {"error", "missing", "invalid_notebook", "timeout", "kernel_died", "memory_limit",
          "sys_exit"}


def progress(done, total, row, elapsed, stream=sys.stderr):
    width = 30
    filled = width * done // total
    bar = "#" * filled + "." * (width - filled)
    left = elapsed / done * (total - done)  # the mean pace so far, for what is left
    stream.write(f"[{bar}] {done}/{total} {clock(elapsed)} elapsed, about {clock(left)} left  "
                 f"{row['student_id']}/{row['assignment']}: "
                 f"{row['status']} {row['score']}/{row['max_score']}\n")
    stream.flush()


def clock(seconds):
    """12:05 (minutes:seconds), or 1:02:05 past an hour."""
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def write_csv(path, rows):
    rows = sorted(rows, key=lambda r: (r["student_id"], r["assignment"]))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def summary(rows, seconds, jobs):
    statuses = Counter(r["status"] for r in rows)
    failed = {k: v for k, v in statuses.items() if k in FAILED}
    lines = [f"Graded {len(rows)} submissions in {seconds:.1f} s with {jobs} parallel jobs: "
             f"{len(rows) - sum(failed.values())} graded, {sum(failed.values())} failed."]
    if failed:
        lines.append("Failed, by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items())))
    others = {k: v for k, v in statuses.items() if k not in FAILED and k != "graded"}
    if others:
        lines.append("Graded with notes: " + ", ".join(f"{k} {v}" for k, v in sorted(others.items())))
    return "\n".join(lines)


def fmt(number):
    return f"{float(number):g}"

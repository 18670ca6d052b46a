"""The OUT folder's tables: the one module that writes and reads them.

    graded.json      the record a rerun reads (autograde/resume.py): per submission its row, its
                     grading seconds and its fingerprint; rows name the nbgrader assignment
                     (01_basic_loop-nl), as the gradebook and OUT's folders do
    grades.csv       one row per submission: student_id, assignment (the lesson), language,
                     score, max_score, status, detail; the lesson and the language are the
                     variants table's (variants.json)
    timings.csv      student_id, assignment (nbgrader's), seconds: the class report's slowest
    grades_wide.csv  for a gradebook import: one row per student, one column per lesson, a total
    variants.json    the variants table the run was told (autograde/variants.py); none for a
                     plain nbgrader source

Each is written beside its path and renamed over it (`replace_atomically`): a reader, or a
crash at any moment, sees the old file or the new one. The course's other files in OUT are
nbgrader's (source/, release/, submitted/, autograded/, feedback/, gradebook.db: see
autograde/nbgrader_course.py) and the class report's (autograde/class_report.py).
"""
import csv
import json
import os
from collections import defaultdict
from pathlib import Path

from .variants import Variants

RECORD = "graded.json"
GRADES = "grades.csv"
TIMINGS = "timings.csv"
WIDE = "grades_wide.csv"
VARIANTS = "variants.json"
COLUMNS = ["student_id", "assignment", "language", "score", "max_score", "status", "detail"]


def replace_atomically(path, write):
    """write(temporary path) beside `path`, then rename it over `path`: a reader, or a crash at
    any moment, sees the old file or the new one, never half of one."""
    path = os.fspath(path)
    temporary = f"{path}.tmp"
    write(temporary)
    with open(temporary, "rb") as f:
        os.fsync(f.fileno())  # on disk before the rename, so a power cut cannot empty the file
    os.replace(temporary, path)


def write_variants(out, variants):
    """OUT/variants.json: the table a rerun, a merge of shards and the class report read."""
    text = json.dumps({"assignments": variants.assignments, "languages": variants.languages}, indent=1)
    replace_atomically(Path(out) / VARIANTS, lambda path: Path(path).write_text(text))


def read_variants(out):
    """OUT's variants table (an empty one for a plain nbgrader source)."""
    path = Path(out) / VARIANTS
    return Variants.read(path) if path.is_file() else Variants()


def grades_row(row, variants):
    """The row of grades.csv of a graded row (which names the nbgrader assignment)."""
    return {**row, "assignment": variants.lesson(row["assignment"]),
            "language": variants.language(row["assignment"])}


def gradebook_assignment(row, variants):
    """The nbgrader assignment of a row of grades.csv."""
    return variants.assignment(row["assignment"], row.get("language", "")) or row["assignment"]


def write_grades(path, rows, variants):
    """grades.csv of the graded rows, sorted by student, lesson and language."""
    rows = sorted((grades_row(r, variants) for r in rows),
                  key=lambda r: (r["student_id"], r["assignment"], r["language"]))
    _write(path, COLUMNS, [[r.get(column, "") for column in COLUMNS] for r in rows])


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_timings(path, seconds):
    """seconds: {(student_id, assignment): grading seconds}."""
    _write(path, ["student_id", "assignment", "seconds"],
           [[student, name, f"{value:.1f}"] for (student, name), value in sorted(seconds.items())])


def read_timings(path):
    if not Path(path).exists():
        return {}
    return {(r["student_id"], r["assignment"]): float(r["seconds"]) for r in read_csv(path)}


def write_wide(path, rows, fmt):
    """grades_wide.csv of grades.csv's rows: a lesson a student handed in in two languages counts
    once, with the better score."""
    lessons = sorted({r["assignment"] for r in rows})
    scores = defaultdict(dict)
    for r in rows:
        mine = scores[r["student_id"]]
        mine[r["assignment"]] = max(mine.get(r["assignment"], 0.0), float(r["score"] or 0))
    _write(path, ["student_id", *lessons, "total"],
           [[student, *(fmt(scores[student][a]) if a in scores[student] else "" for a in lessons),
             fmt(sum(scores[student].values()))] for student in sorted(scores)])


def _write(path, header, rows):
    def write(temporary):
        with open(temporary, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows)
    replace_atomically(path, write)


def give_to_sudo_user(out):
    """Under `sudo make autograde`, hand OUT back to the instructor (formgrader runs as them)."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if os.geteuid() == 0 and uid and gid:
        for path in [out, *out.rglob("*")]:
            os.lchown(path, int(uid), int(gid))

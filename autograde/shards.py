"""Grade a large class on many machines: each grades a share, one merge makes the gradebook.

    python -m autograde --submissions S --out OUT_K --shard K/N     # on machine K (K = 1..N)
    python -m autograde.shards --out OUT OUT_1 OUT_2 ... OUT_N       # anywhere, afterwards

Shard K of N takes the submissions at positions K-1, K-1+N, K-1+2N, ... of the sorted list
(student, assignment), so every machine that reads the same SUBMISSIONS computes the same split,
the shares differ in size by at most one, and together they hold every submission once. The
merge copies the first shard's OUT, then adds the others' grades and comments to its gradebook
and their submitted/, autograded/ and feedback/ folders, and writes grades.csv, the class report
and grades_wide.csv for the whole class. It refuses a shard whose grading is not finished (an
interrupted run: its command, run again, grades what is left) and names what is missing, and it
refuses the shards of a split when one of them is not given.
"""
import argparse
import filecmp
import shutil
import sys
from pathlib import Path

from . import class_report, outfolder, report, resume
from .nbgrader_course import ensure_venv_on_path


class ShardError(RuntimeError):
    pass


def shard_argument(text):
    """'K/N' -> (K, N), with 1 <= K <= N (argparse type)."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected K/N, e.g. 2/8") from None
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: K must be between 1 and N")
    return index, count


def select(submissions, shard):
    """The share of `shard` (K, N) of the submissions; all of them when shard is None."""
    if shard is None:
        return submissions
    index, count = shard
    ordered = sorted(submissions, key=lambda s: (s.student, s.assignment))
    return ordered[index - 1::count]


def merge(shard_outs, out):
    """Combine graded OUT folders (one per shard) into `out`; returns the merged rows."""
    ensure_venv_on_path()
    shard_outs = [Path(p).resolve() for p in shard_outs]
    out = Path(out).resolve()
    records = [_finished(folder) for folder in shard_outs]
    for folder in shard_outs:
        _same_sources(shard_outs[0], folder)
    _all_shards(records)
    if out.exists() and any(out.iterdir()):
        raise ShardError(f"--out {out}: exists and is not empty; give a new folder")
    if out.exists():
        out.rmdir()
    shutil.copytree(shard_outs[0], out)  # the course files, and the first shard's grades
    whole = resume.Record(out, records[0].planned, graded=records[0].graded.values())
    for folder, record in zip(shard_outs[1:], records[1:]):
        twice = [key for key in record.graded if key in whole.graded]
        if twice:
            raise ShardError(f"{folder}: {'/'.join(twice[0])} was graded in two shards")
        shard_rows = record.rows()
        _copy_grades(folder, out, shard_rows)
        for row in shard_rows:
            for kind in ("submitted", "autograded", "feedback"):
                tree = folder / kind / row["student_id"] / row["assignment"]
                if tree.exists():
                    shutil.copytree(tree, out / kind / row["student_id"] / row["assignment"])
        whole.planned = sorted(whole.planned + record.planned)
        whole.graded.update(record.graded)
    whole.save()  # graded.json, grades.csv and timings.csv of the whole class
    class_report.write(out)
    return whole.rows()


def _finished(folder):
    """The record of a shard's OUT; raises ShardError unless its grading is finished."""
    record = resume.Record.read(folder)
    if record is None or not (folder / "gradebook.db").is_file():
        raise ShardError(f"{folder}: not a graded OUT folder (no {resume.RECORD} or gradebook.db)")
    missing = record.missing()
    if missing:
        raise ShardError(f"{folder}: not finished, {len(missing)} of {len(record.planned)} "
                         f"submissions not graded: {', '.join('/'.join(k) for k in missing[:10])}"
                         f"{' ...' if len(missing) > 10 else ''}. Run its grading command again: "
                         "it grades what is left")
    return record


def _all_shards(records):
    """Shards K/N of one split: refuse the merge when one of the N is not given."""
    shares = {record.shard for record in records}
    counts = {share[1] for share in shares if share}
    if None in shares or len(counts) != 1:
        return  # not the shards of one split: only the check for a submission graded twice applies
    count = counts.pop()
    absent = sorted(set(range(1, count + 1)) - {index for index, _ in shares})
    if absent:
        raise ShardError(f"shard {', '.join(f'{k}/{count}' for k in absent)} not given: "
                         f"merge the OUT folders of all {count} shards")


def _same_sources(first, other):
    """Shards graded with different instructor notebooks or variants tables cannot share a gradebook."""
    if outfolder.read_variants(first) != outfolder.read_variants(other):
        raise ShardError(f"{other}: graded with another variants table than {first} ({outfolder.VARIANTS})")
    compare = filecmp.dircmp(first / "source", other / "source")
    pending = [compare]
    while pending:
        node = pending.pop()
        _, mismatch, errors = filecmp.cmpfiles(node.left, node.right, node.common_files,
                                               shallow=False)
        if node.left_only or node.right_only or mismatch or errors:
            raise ShardError(f"{other}: graded with other sources than {first} "
                             f"({(node.left_only + node.right_only + mismatch + errors)[:3]})")
        pending += node.subdirs.values()


def _copy_grades(shard, out, rows):
    from . import gradebook  # nbgrader, only once a merge runs
    with gradebook.opened(out) as target, gradebook.opened(shard) as source:
        for row in rows:
            gradebook.copy_submission(source, target, row["assignment"], row["student_id"], manual=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograde.shards", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="the merged OUT folder (new or empty)")
    parser.add_argument("shards", nargs="+", help="the shards' OUT folders")
    options = parser.parse_args(argv)
    try:
        rows = merge(options.shards, options.out)
    except ShardError as error:
        print(f"autograde.shards: {error}", file=sys.stderr)
        return 2
    out = Path(options.out)
    print(f"Merged {len(options.shards)} shards: {len(rows)} submissions.")
    print(f"Table: {out / 'grades.csv'}  Feedback: {out / 'feedback'}  Gradebook: "
          f"{out / 'gradebook.db'}")
    print(f"Class report: {out / 'report.html'}  Gradebook import: {out / 'grades_wide.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

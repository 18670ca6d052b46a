"""What a rerun keeps: OUT/graded.json, the record of the submissions graded into OUT.

It names the submissions this OUT is to hold (the run's, or its shard's share of them) and, for
each one graded, its row of grades.csv, its grading seconds and its fingerprint: a hash of the
submitted files, of the assignment's source and release in OUT, and of the options that change a
grade. A rerun keeps the rows whose fingerprint is unchanged and grades the others; --regrade
grades all. The batch records each submission as soon as it is graded: the gradebook first,
then graded.json, grades.csv and timings.csv, each written beside and renamed over the old file,
so that a crash or a kill at any moment leaves every file whole and at most the submissions in
flight to grade again.
"""
import hashlib
import json
from pathlib import Path

from . import outfolder
from .outfolder import RECORD


def fingerprint(files, salt):
    """A hash of the files [(name, path)] (a link or a missing file counts as absent, as for the
    grader) and of `salt` (JSON-able)."""
    digest = hashlib.sha256(json.dumps(salt, sort_keys=True).encode())
    for name, path in files:
        if path.is_symlink() or not path.exists():
            content = b"absent"
        elif path.is_file():
            content = hashlib.sha256(path.read_bytes()).digest()
        else:
            content = b"not a file"
        digest.update(hashlib.sha256(name.encode()).digest() + content)
    return digest.hexdigest()


def folder_files(root, *folders):
    """[(name, path)] of every file under root/folder for each folder, named from root."""
    return [(str(path.relative_to(root)), path) for folder in folders
            for path in sorted((Path(root) / folder).rglob("*")) if path.is_file()]


class Record:
    """OUT/graded.json, grades.csv and timings.csv of one OUT folder, kept in step."""

    def __init__(self, out, planned, shard=None, graded=()):
        self.out = Path(out)
        self.planned = sorted(planned)  # [(student, assignment)] this OUT is to hold
        self.shard = shard              # (K, N) for a shard's OUT, else None
        self.graded = {(e["row"]["student_id"], e["row"]["assignment"]): e for e in graded}
        self.variants = outfolder.read_variants(self.out)  # the lessons and languages of grades.csv

    @classmethod
    def read(cls, out):
        """The record of a graded OUT, or None where there is none."""
        path = Path(out) / RECORD
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        return cls(out, [tuple(key) for key in data["planned"]],
                   tuple(data["shard"]) if data["shard"] else None, data["graded"])

    def missing(self):
        """The planned submissions not graded yet, [(student, assignment)]."""
        return [key for key in self.planned if key not in self.graded]

    def rows(self):
        return [entry["row"] for entry in self.graded.values()]

    def add(self, row, seconds, fingerprint):
        self.graded[(row["student_id"], row["assignment"])] = {
            "row": row, "seconds": round(seconds, 1), "fingerprint": fingerprint}
        self.save()

    def save(self):
        """Write graded.json, then the views of it: grades.csv and timings.csv."""
        data = {"planned": self.planned, "shard": self.shard,
                "graded": [self.graded[key] for key in sorted(self.graded)]}
        text = json.dumps(data, indent=1)
        outfolder.replace_atomically(self.out / RECORD, lambda path: Path(path).write_text(text))
        outfolder.write_grades(self.out / outfolder.GRADES, self.rows(), self.variants)
        outfolder.write_timings(self.out / outfolder.TIMINGS,
                                {key: entry["seconds"] for key, entry in self.graded.items()})

"""Find the submissions: a folder in nbgrader's submitted layout, or an LMS zip.

Folder: SUBMISSIONS/<student_id>/<assignment>/<notebook>.ipynb (nbgrader's `submitted/`).
Zip: either that same layout zipped, or flat LMS file names as nbgrader's `zip_collect` handles
them: a regular expression with named groups `student_id` and `file_id` (the notebook's file
name). The default takes the student id from the start of the name and recognises the course's
notebook names at its end, e.g. `jdoe_12345_assignsubmission_file_01_basic_loop.ipynb`.
The assignment is the one whose notebook that is. Where the variants table gives a lesson in
several languages (autograde/variants.py), the notebook's own language decides: its parameters
cell's `course_language = "nl"` makes a notebook handed in as 01_basic_loop the assignment
01_basic_loop-nl, so an LMS export or nbgrader's collect needs no folder per language.
Zips are unpacked safely (no absolute or `..` paths, no links, bounded size) into the grader's
work folder; the original is only read.
"""
import re
import shutil
import stat
import zipfile
import dataclasses
from pathlib import Path

from .variants import Variants, notebook_language

VALID_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
MAX_ZIP_BYTES = 2 * 1024 ** 3
MAX_ZIP_MEMBERS = 100_000


class CollectError(RuntimeError):
    pass


@dataclasses.dataclass
class Submission:
    student: str
    assignment: str
    folder: Path  # holds <notebook>.ipynb (or not: the grader reports it missing)
    language: str | None = None  # set when the kernel must run another course_language than the notebook's
    note: str = ""               # what the row's detail says first (the language graded in)


def collect(path, assignments, workdir, named_regexp=None, variants=Variants()):
    """List of Submission, sorted by (student, assignment); raises CollectError on a bad path."""
    return _in_their_language(_found(path, assignments, workdir, named_regexp), assignments, variants)


def _found(path, assignments, workdir, named_regexp):
    path = Path(path)
    if not str(path) or not path.exists():
        raise CollectError(f"SUBMISSIONS={path!s}: no such file or folder")
    if path.is_dir():
        return _from_folder(path, assignments)
    if zipfile.is_zipfile(path):
        extracted = Path(workdir) / "unzipped"
        if extracted.exists():
            shutil.rmtree(extracted)
        _safe_extract(path, extracted)
        for root in [extracted, *sorted(p for p in extracted.iterdir() if p.is_dir())]:
            layout = _from_folder(root, assignments)  # a zipped submitted/ folder, maybe nested
            if layout:
                return layout
        return _from_flat(extracted, assignments, Path(workdir) / "collected",
                                    named_regexp)
    raise CollectError(f"SUBMISSIONS={path}: neither a folder nor a zip file")


def _from_folder(root, assignments):
    found = []
    for student in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        if not VALID_ID.match(student.name):
            continue
        for folder in sorted(p for p in student.iterdir() if p.is_dir() and not p.is_symlink()):
            if folder.name in assignments:
                found.append(Submission(student.name, folder.name, folder))
    return found


def _safe_extract(archive, target):
    target.mkdir(parents=True)
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if len(members) > MAX_ZIP_MEMBERS or sum(m.file_size for m in members) > MAX_ZIP_BYTES:
            raise CollectError(f"{archive}: too many or too large members for a class's notebooks")
        for member in members:
            name = Path(member.filename)
            if member.is_dir() or name.is_absolute() or ".." in name.parts:
                continue
            if stat.S_ISLNK(member.external_attr >> 16):
                continue
            dest = target / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(member) as src, open(dest, "wb") as dst:
                shutil.copyfileobj(src, dst)


def _from_flat(root, assignments, collected, named_regexp):
    by_notebook = {}
    for assignment in sorted(assignments):  # "01_basic_loop" before "01_basic_loop-nl": the language comes later
        for notebook in assignments[assignment]:
            by_notebook.setdefault(f"{notebook}.ipynb", assignment)
    if collected.exists():
        shutil.rmtree(collected)
    found = {}
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        # Moodle-like exports put each submission in a folder: match on the relative path
        student, file_id = _match(str(file.relative_to(root)).replace("/", "_"), by_notebook,
                                  named_regexp)
        if student is None or file_id not in by_notebook or not VALID_ID.match(student):
            continue
        assignment = by_notebook[file_id]
        folder = collected / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(file, folder / file_id)
        found[(student, assignment)] = Submission(student, assignment, folder)
    if not found:
        raise CollectError("the zip holds no notebook of this course (expected <student>/<assignment>/"
                           f"<notebook>.ipynb, or LMS names ending in one of {sorted(by_notebook)})")
    return [found[k] for k in sorted(found)]


def _match(filename, by_notebook, named_regexp):
    if named_regexp:
        match = re.match(named_regexp, filename)
        if not match:
            return None, None
        return match.group("student_id"), Path(match.group("file_id")).name
    for notebook in sorted(by_notebook, key=len, reverse=True):
        if filename.endswith(notebook) and len(filename) > len(notebook):
            prefix = filename[: -len(notebook)].rstrip("_- ")
            return re.split(r"[_\s]", prefix)[0], notebook
    return None, None


def _in_their_language(submissions, assignments, variants):
    """Each submission under the assignment of its notebook's language (variants.route), where the
    source has that assignment and the student did not hand it in as well (then both stay as handed
    in). A language the course does not have (a typo: "fr") is graded as the assignment's own
    language, and its row says so (Submission.note); the grader's kernel runs in that language."""
    taken = {(s.student, s.assignment) for s in submissions}
    placed = []
    for submission in submissions:
        chosen = notebook_language(submission.folder, assignments[submission.assignment])
        target, language, note = variants.route(submission.assignment, chosen)
        if target != submission.assignment:
            if target in assignments and (submission.student, target) not in taken:
                taken.add((submission.student, target))
                submission = dataclasses.replace(submission, assignment=target)
        elif note:
            submission = dataclasses.replace(submission, language=language, note=note)
        placed.append(submission)
    return sorted(placed, key=lambda s: (s.student, s.assignment))


def submitted_files(submission, notebooks):
    """[(name, path)]: what the grader takes of a submission (notebooks/, and what nbgrader's
    exchange leaves beside them: timestamp.txt, submission_secret.txt; autograde/exchange.py)."""
    return [(name, submission.folder / name)
            for name in [f"{nb}.ipynb" for nb in notebooks] + ["timestamp.txt", "submission_secret.txt"]]


def copy_submission(submission, notebooks, out):
    """The grader only ever reads this copy (OUT/submitted/...), never the original."""
    target = out / "submitted" / submission.student / submission.assignment
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name, path in submitted_files(submission, notebooks):
        if path.is_symlink() or not path.exists():
            continue
        if path.is_file():
            shutil.copyfile(path, target / name)
        else:
            (target / name).mkdir()  # keep "not a file" visible to the validator
    return target

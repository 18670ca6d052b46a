"""What nbgrader's exchange leaves beside a submitted notebook, read as nbgrader reads it.

- timestamp.txt: when the student submitted (`nbgrader collect` copies it from the exchange; an LMS
  upload can carry anything). nbgrader's autograde parses it with nbgrader.utils.parse_utc and
  crashes on a malformed one (AttributeError: 'CourseDirectory' object has no attribute 'fail').
  Here a malformed one is left out of grading (graded as on time: it never costs the grade) and
  the row's detail says so; the feedback still carries it, since release_feedback reads it.
- submission_secret.txt: the key of the feedback's file name in the exchange
  (nbgrader.utils.notebook_hash): `nbgrader release_feedback` needs it beside the feedback. It is
  carried from submitted/ through autograded/ to feedback/, as nbgrader's own converters carry it,
  in the grader's trusted worker (never into a kernel's sandbox). One that is not what nbgrader's
  submit writes (hex; a student can edit it in the exchange before collect) is left out, and the
  row's detail says so: that student's feedback goes by hand. nbgrader's release_feedback stops
  at the first feedback folder without the file (FileNotFoundError), so the students after it got
  none; OUT/nbgrader_config.py makes it ReleaseFeedback, which skips that folder and names it.
- who saved the notebook: on the course's hub every save stamps the notebook's metadata with the hub
  user (jupyter/hub/singleuser/jupyter_server_config.py, `efficient_training.saved_by`); a
  submission whose notebook names another student is flagged in the row's detail (not scored:
  the instructor decides). A student who edits the JSON by hand can remove the stamp.
"""
import glob
import os
import re
import shutil

from nbgrader.exchange.default import ExchangeReleaseFeedback
from nbgrader.utils import parse_utc

MAX_TIMESTAMP_BYTES = 100
MAX_SECRET_BYTES = 1024
SECRET = re.compile(r"^[0-9a-fA-F]{16,512}\s*$")  # nbgrader writes secrets.token_hex(64)
METADATA_KEY = "efficient_training"


def _small_file(path, limit):
    """The file's text when it is a regular file of at most `limit` bytes, else None."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size > limit:
        return None
    return path.read_bytes().decode("utf-8", errors="replace")


def carry(submission, submitted):
    """Copy timestamp.txt (when nbgrader can read it) and submission_secret.txt from the grader's
    copy of a submission into the worker's course folder; [[kind, detail]] of what was left out."""
    events = []
    timestamp = _small_file(submission / "timestamp.txt", MAX_TIMESTAMP_BYTES)
    if timestamp is not None:
        try:
            if timestamp.strip():
                parse_utc(timestamp.strip())
            shutil.copyfile(submission / "timestamp.txt", submitted / "timestamp.txt")
        except (ValueError, OverflowError):
            shown = " ".join(timestamp.split())[:40]
            events.append(["timestamp", f"timestamp.txt is not a time ({shown!r}): graded as "
                                        "submitted on time"])
    elif (submission / "timestamp.txt").exists():
        events.append(["timestamp", "timestamp.txt is not a small regular file: graded as "
                                    "submitted on time"])
    secret = _small_file(submission / "submission_secret.txt", MAX_SECRET_BYTES)
    if secret is not None and SECRET.match(secret):
        shutil.copyfile(submission / "submission_secret.txt", submitted / "submission_secret.txt")
    elif (submission / "submission_secret.txt").exists() or (submission / "submission_secret.txt").is_symlink():
        events.append(["secret", "submission_secret.txt is not the one nbgrader's submit writes: this "
                                 "feedback is not released through the exchange; send it by hand"])
    return events


class ReleaseFeedback(ExchangeReleaseFeedback):
    """nbgrader's release_feedback, skipping (with a warning) each feedback folder that lacks the
    submission_secret.txt or timestamp.txt it needs, instead of stopping there."""

    def copy_files(self):
        skipped = set()
        for page in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            folder = os.path.dirname(page)
            missing = [name for name in ("submission_secret.txt", "timestamp.txt")
                       if not os.path.isfile(os.path.join(folder, name))]
            if missing:
                student = os.path.basename(os.path.dirname(folder))  # feedback/<student>/<assignment>/
                skipped.add(student)
                self.log.warning(f"Not releasing {page}: its folder has no {' or '.join(missing)} "
                                 f"(grades.csv's detail for {student} says why); send it by hand")
        excluded = {s for s in self.coursedir.student_id_exclude.split(",") if s}
        self.coursedir.student_id_exclude = ",".join(sorted(excluded | skipped))
        super().copy_files()


def timestamp_for_release(submission, feedback):
    """Where grading left a malformed timestamp.txt out, put it beside the feedback all the same:
    `nbgrader release_feedback` reads it (only to log it) and stops without it."""
    timestamp = _small_file(submission / "timestamp.txt", MAX_TIMESTAMP_BYTES)
    if feedback.is_dir() and timestamp is not None and not (feedback / "timestamp.txt").exists():
        (feedback / "timestamp.txt").write_text(timestamp)


def saved_by(notebook):
    """The hub users the notebook's metadata says saved it ([] without the stamp)."""
    stamp = notebook.get("metadata", {}).get(METADATA_KEY, {})
    users = stamp.get("saved_by", []) if isinstance(stamp, dict) else []
    return [str(user)[:100] for user in users if isinstance(user, str)] if isinstance(users, list) else []


def others_named(notebook, student, name):
    """[[kind, detail]] when the notebook says other hub users than `student` saved it."""
    others = [user for user in saved_by(notebook) if user != student]
    if not others:
        return []
    return [["identity", f"{name}.ipynb was saved on the hub by {', '.join(others[:5])}, "
                         f"not only by {student}: check it was not copied"]]

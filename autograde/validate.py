"""Check a submitted file before grading: is it a notebook, and what did the student change in
the structure the course gave them (cells deleted, duplicated, moved, retyped, tests edited)?

`restore_structure` then puts the course's cells back the way the release has them, so that a
changed structure never changes the grade: deleted cells come back from the release, cells with
a grade_id return to the release's order (a student's own cells travel with the course cell they
followed). nbgrader's OverwriteCells then puts back the instructor's source of locked and test
cells. (nbgrader's own re-adding of deleted cells fails when a read-only cell precedes the test.)

A lesson the instructor changed after a student fetched it is no change of the student's: the
submission is compared with the release it differs least from, the one the grader made from the
source or an earlier one it is told of (--earlier-releases, which course.grade takes from the
course's git history), so that `modified` names what the student changed. The grade is the
instructor's current tests' either way.
"""
import hashlib
import json

import nbformat

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024


def read_submission(path):
    """(notebook as a dict, None) or (None, [kind, detail])."""
    name = path.name
    if path.is_symlink() or (path.exists() and not path.is_file()):
        return None, ["invalid_notebook", f"{name} is not a regular file"]
    if not path.exists():
        return None, ["missing", f"{name} was not submitted"]
    size = path.stat().st_size
    if size == 0:
        return None, ["invalid_notebook", f"{name} is empty"]
    if size > MAX_NOTEBOOK_BYTES:
        return None, ["invalid_notebook", f"{name} is larger than {MAX_NOTEBOOK_BYTES} bytes"]
    try:
        text = path.read_bytes().decode("utf-8")
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError) as error:
        return None, ["invalid_notebook", f"{name} is not JSON ({str(error)[:80]})"]
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        return None, ["invalid_notebook", f"{name} is JSON but not a notebook"]
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as error:
        return None, ["invalid_notebook", f"{name} is not a valid notebook ({str(error)[:80]})"]
    return json.loads(nbformat.writes(nb)), None


def _grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _ids(nb):
    return [(_grade_id(c), c) for c in nb["cells"] if _grade_id(c)]


def released_cells(nb):
    """A release as the grader compares a submission with it: [grade id, cell type, sha256 of the
    source where the cell is locked (read-only or a test), else None] of each cell with a grade id,
    in order. `python -m autograde --earlier-releases` takes the lessons' earlier releases so."""
    return [[grade_id, cell["cell_type"],
             _checksum(cell) if cell["metadata"]["nbgrader"].get("locked") else None]
            for grade_id, cell in _ids(nb)]


def check_structure(nb, release_path, notebook, earlier=()):
    """Events naming structural changes against the release the student fetched: of the released
    notebook and the `earlier` releases (released_cells of each), the one the submission differs
    from least (the released notebook where two differ as little), so that a lesson changed after
    a student fetched it does not count as the student's change."""
    releases = [released_cells(nbformat.read(release_path, as_version=4)), *earlier]
    submitted = _ids(nb)
    changes = min((_changes(submitted, release) for release in releases), key=_distance)
    return [["modified", f"{notebook}: {what}: {', '.join(sorted(set(names)))}"]
            for what, names in changes.items() if what != UNKNOWN and names]


UNKNOWN = "cells the release does not have"  # a sign of another release, never a change to report


def _changes(submitted, release):
    """{what changed: [grade ids]} of the submitted cells [(grade id, cell)] against one release."""
    kinds = {grade_id: kind for grade_id, kind, _ in release}
    checksums = {grade_id: checksum for grade_id, _, checksum in release if checksum}
    order = [grade_id for grade_id, _, _ in release]
    ids = [grade_id for grade_id, _ in submitted]
    first = list(dict.fromkeys(g for g in ids if g in kinds))
    in_order = [g for g in order if g in first]
    return {"cells deleted": [g for g in order if g not in ids],
            "cells duplicated": [g for g in ids if ids.count(g) > 1],
            "cells moved": [g for g, h in zip(first, in_order) if g != h],
            "cell type changed": [g for g, c in submitted if g in kinds and c["cell_type"] != kinds[g]],
            "read-only or test cells edited": [g for g, c in submitted
                                               if g in checksums and _checksum(c) != checksums[g]],
            UNKNOWN: [g for g in ids if g not in kinds]}


# What tells the releases apart: the cells one has that the submission lacks or has other, and the
# ones it lacks. Order comes second: one moved cell shifts every cell after it, so a release with
# another order can count fewer moves than the one the student fetched
CONTENT = ("cells deleted", "cell type changed", "read-only or test cells edited", UNKNOWN)


def _distance(changes):
    def count(kinds):
        return sum(len(set(names)) for what, names in changes.items() if (what in CONTENT) == kinds)
    return count(True), count(False)


def _source(cell):
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def _checksum(cell):
    return hashlib.sha256(_source(cell).encode()).hexdigest()


def restore_structure(nb, release_path):
    """`nb` (a dict) with the release's cells present once each and in the release's order. A cell
    with a grade id the release does not have (the instructor removed it after the student fetched
    the lesson) becomes an ordinary cell: nbgrader's OverwriteCells would fail on it (KeyError)."""
    release = json.loads(nbformat.writes(nbformat.read(release_path, as_version=4)))
    release_cells = dict(_ids(release))
    followers, anchor = {None: []}, None
    for cell in nb["cells"]:
        grade_id = _grade_id(cell)
        if grade_id and grade_id not in release_cells:
            cell = dict(cell, metadata={k: v for k, v in cell["metadata"].items() if k != "nbgrader"})
        elif grade_id in release_cells and grade_id not in followers:
            anchor = grade_id
            followers[anchor] = []
        followers[anchor].append(cell)  # a duplicate stays as a follower: nbgrader de-duplicates
    cells = followers[None]
    for grade_id, cell in release_cells.items():
        cells.extend(followers.get(grade_id, [cell]))
    return dict(nb, cells=cells)

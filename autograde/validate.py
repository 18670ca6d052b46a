"""Check a submitted file before grading: is it a notebook, and what did the student change in
the structure the course gave them (cells deleted, duplicated, moved, retyped, tests edited)?

`restore_structure` then puts the course's cells back the way the release has them, so that a
changed structure never changes the grade: deleted cells come back from the release, cells with
a grade_id return to the release's order (a student's own cells travel with the course cell they
followed). nbgrader's OverwriteCells then puts back the instructor's source of locked and test
cells. (nbgrader's own re-adding of deleted cells fails when a read-only cell precedes the test.)
"""
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


def check_structure(nb, release_path, notebook):
    """Events naming structural changes against the released notebook."""
    release = {gid: cell for gid, cell in _ids(nbformat.read(release_path, as_version=4))}
    order = list(release)
    submitted = _ids(nb)
    ids = [gid for gid, _ in submitted]
    events = []

    def note(what, names):
        if names:
            events.append(["modified", f"{notebook}: {what}: {', '.join(sorted(set(names)))}"])

    note("cells deleted", [g for g in order if g not in ids])
    note("cells duplicated", [g for g in ids if ids.count(g) > 1])
    common = [g for g in ids if g in release]
    first = list(dict.fromkeys(common))
    note("cells moved", [] if first == [g for g in order if g in first] else
         [g for g, h in zip(first, [g for g in order if g in first]) if g != h])
    note("cell type changed", [g for g, c in submitted
                               if g in release and c["cell_type"] != release[g].cell_type])
    note("read-only or test cells edited",
         [g for g, c in submitted if g in release
          and release[g].metadata["nbgrader"].get("locked")
          and _source(c) != _source(release[g])])
    return events


def _source(cell):
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def restore_structure(nb, release_path):
    """`nb` (a dict) with the release's cells present once each and in the release's order."""
    release = json.loads(nbformat.writes(nbformat.read(release_path, as_version=4)))
    release_cells = dict(_ids(release))
    followers, anchor = {None: []}, None
    for cell in nb["cells"]:
        grade_id = _grade_id(cell)
        if grade_id in release_cells and grade_id not in followers:
            anchor = grade_id
            followers[anchor] = []
        followers[anchor].append(cell)  # a duplicate stays as a follower: nbgrader de-duplicates
    cells = followers[None]
    for grade_id, cell in release_cells.items():
        cells.extend(followers.get(grade_id, [cell]))
    return dict(nb, cells=cells)

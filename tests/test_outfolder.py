"""autograde/outfolder.py, the one module that writes and reads OUT's tables, on small tables in
files: a table is replaced whole or not at all, timings and tables read back as written, and
`sudo make autograde` hands OUT back to the instructor. (The lesson and language columns of
grades.csv and grades_wide.csv: test_autograde_modules.py.)"""
import os

import pytest

from autograde import outfolder


def test_a_table_is_replaced_whole_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text("old")
    outfolder.replace_atomically(path, lambda temporary: open(temporary, "w").write("new"))
    assert path.read_text() == "new" and os.listdir(tmp_path) == ["grades.csv"]


def test_a_write_that_fails_leaves_the_old_table(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text("old")

    def half_written(temporary):
        open(temporary, "w").write("ne")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        outfolder.replace_atomically(path, half_written)
    assert path.read_text() == "old", "a reader sees the old file, never half of the new one"


def test_timings_are_written_and_read_back(tmp_path):
    assert outfolder.read_timings(tmp_path / "timings.csv") == {}
    outfolder.write_timings(tmp_path / "timings.csv", {("ann", "01_loop-nl"): 2.04, ("amy", "01_loop"): 10})
    assert (tmp_path / "timings.csv").read_text().splitlines() == [
        "student_id,assignment,seconds", "amy,01_loop,10.0", "ann,01_loop-nl,2.0"]  # sorted, a tenth of a second
    assert outfolder.read_timings(tmp_path / "timings.csv") == {("amy", "01_loop"): 10.0, ("ann", "01_loop-nl"): 2.0}


def test_a_detail_with_commas_quotes_and_lines_reads_back_as_written(tmp_path):
    detail = 'cells deleted: a, b; "quoted"\nsecond line'
    outfolder._write(tmp_path / "table.csv", ["student_id", "detail"], [["ann", detail]])
    assert outfolder.read_csv(tmp_path / "table.csv") == [{"student_id": "ann", "detail": detail}]


def test_under_sudo_out_goes_back_to_the_instructor(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("only root can give files away (sudo make autograde)")
    (tmp_path / "feedback" / "ann").mkdir(parents=True)
    (tmp_path / "grades.csv").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")  # a link is handed over itself, never followed
    monkeypatch.setenv("SUDO_UID", "4321")
    monkeypatch.setenv("SUDO_GID", "8765")
    outfolder.give_to_sudo_user(tmp_path)
    for path in [tmp_path, *tmp_path.rglob("*")]:
        assert (path.lstat().st_uid, path.lstat().st_gid) == (4321, 8765), path


def test_without_sudo_out_keeps_its_owner(tmp_path, monkeypatch):
    (tmp_path / "grades.csv").write_text("")
    monkeypatch.delenv("SUDO_UID", raising=False)
    monkeypatch.delenv("SUDO_GID", raising=False)
    outfolder.give_to_sudo_user(tmp_path)
    assert (tmp_path / "grades.csv").stat().st_uid == os.geteuid()

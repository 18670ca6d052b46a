"""`make run`'s comparison table: every path trains the same number of optimizer steps."""
import pytest

from course.compare import compare_paths, format_table

pytestmark = pytest.mark.slow


def test_every_path_is_compared_with_the_same_optimizer_steps(capsys):
    """With progress bars; the next test runs the same comparison without them."""
    rows, histories = compare_paths(sizes={"train": 64, "validation": 32, "test": 8}, epochs=1,
                                    batch_size=16, learning_rate=5e-4, progress=True)
    assert [row[0] for row in rows] == ["plain loop", "Accelerator", "accumulation by hand",
                                        "accelerator.accumulate", "Trainer"]
    assert {row[1] for row in rows} == {4}, "64 examples at an effective batch of 16"
    assert all(history.optimizer_steps == 4 for history in histories.values())
    assert all(row[4] > 0 for row in rows), f"every path's training seconds are measured: {rows}"
    printed = capsys.readouterr()
    assert "'loss'" not in printed.out + printed.err, "no log line per optimizer step"
    assert "LOAD REPORT" not in printed.out + printed.err, "the new head is expected: no load report"
    bars = printed.err.count(" 0/4 [")  # tqdm prints a bar's empty state once, when it starts
    assert bars == 5, f"expected a bar per path, found {bars}:\n{printed.err[-2000:]}"
    assert len(format_table(rows).splitlines()) == 2 + len(rows)


def test_make_run_prints_the_table_after_the_lessons_without_progress_bars(monkeypatch, capsys):
    from course import compare, run

    monkeypatch.setattr(compare, "FAST", dict(sizes={"train": 64, "validation": 32, "test": 8}, epochs=1,
                                              batch_size=16, learning_rate=5e-4))
    table = run.compare_quietly()
    printed = capsys.readouterr()
    assert table.splitlines()[2].split()[:3] == ["plain", "loop", "4"], table
    assert "Trainer" in table and "loss curves:" in table
    assert " 0/4 [" not in printed.err and printed.out == "", "nothing printed between the lessons' lines"
    assert "'loss'" not in table + printed.err, "no log line per optimizer step"
    assert "LOAD REPORT" not in table + printed.err, "the new head is expected: no load report"


def test_every_path_trains_on_the_cpu_on_a_gpu_machine_too(monkeypatch):
    """One table, one device: the Trainer runs with use_cpu=True, so the loops run on the CPU too
    (train_pytorch alone would take the GPU). Recorded, not trained: no GPU is needed."""
    import torch
    from course import compare

    seen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(compare, "train_pytorch", lambda model, loader, device=None, **kw: seen.append(device))
    monkeypatch.setattr(compare, "train_accelerate",
                        lambda model, loader, cpu=False, **kw: (seen.append("cpu" if cpu else None), None))
    for _, train, steps in compare._loops():
        train(None, None, gradient_accumulation_steps=steps)
    assert seen == ["cpu"] * 4

"""`make run`'s comparison table: every path trains the same number of optimizer steps."""
from helpers.compare import compare_paths, format_table


def test_every_path_is_compared_with_the_same_optimizer_steps(capsys):
    rows, histories = compare_paths(sizes={"train": 64, "validation": 32, "test": 8}, epochs=1,
                                    batch_size=16, learning_rate=5e-4, progress=False)
    assert [row[0] for row in rows] == ["plain loop", "Accelerator", "accumulation by hand",
                                        "accelerator.accumulate", "Trainer"]
    assert {row[1] for row in rows} == {4}, "64 examples at an effective batch of 16"
    assert all(history.optimizer_steps == 4 for history in histories.values())
    assert "'loss'" not in capsys.readouterr().out, "no log line per optimizer step"
    assert len(format_table(rows).splitlines()) == 2 + len(rows)

"""helpers.quiet: test cells stay silent (nbgrader scores a cell that writes to stderr 0), nested or not."""
import logging

import datasets
import transformers

import helpers


def test_a_quiet_block_inside_another_keeps_the_outer_one_quiet_and_the_end_restores_all():
    before = transformers.logging.is_progress_bar_enabled(), datasets.is_progress_bar_enabled()
    with helpers.quiet():
        with helpers.quiet():
            pass
        assert not transformers.logging.is_progress_bar_enabled(), "the inner block turned the bars back on"
        assert not datasets.is_progress_bar_enabled()
        assert logging.root.manager.disable >= logging.WARNING
    assert (transformers.logging.is_progress_bar_enabled(), datasets.is_progress_bar_enabled()) == before
    assert logging.root.manager.disable == logging.NOTSET

"""Silence library chatter, for nbgrader test cells (any stderr output scores a cell 0)."""
import contextlib
import io
import logging
import warnings


@contextlib.contextmanager
def quiet():
    """Inside this block: no warnings, no library logging, no progress bars, no stderr.

    Leaving it restores what was there before, so a block inside another keeps the outer one quiet.
    """
    import datasets  # here, not at the top: `import helpers` imports this module (helpers/__init__.py)
    import transformers
    transformers_level = transformers.logging.get_verbosity()
    datasets_level = datasets.logging.get_verbosity()
    bars = transformers.logging.is_progress_bar_enabled(), datasets.is_progress_bar_enabled()
    logging_disabled = logging.root.manager.disable
    transformers.logging.set_verbosity_error()
    datasets.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)
            yield
    finally:
        logging.disable(logging_disabled)
        transformers.logging.set_verbosity(transformers_level)
        datasets.logging.set_verbosity(datasets_level)
        if bars[0]:
            transformers.logging.enable_progress_bar()
        if bars[1]:
            datasets.enable_progress_bars()

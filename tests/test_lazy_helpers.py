"""`import helpers` is lazy: a kernel pays only for the libraries its lesson uses, every public
name still works (attribute, `from helpers import`, tab completion), and the grader's guard
still restores a replaced `helpers.<name>` although the name was bound after `import helpers`."""
import importlib
import subprocess
import sys
import textwrap

import pytest

import helpers

# Heavy libraries that only some lessons need: `import helpers` must not import them.
NOT_ON_IMPORT = ["sklearn", "datasets", "bitsandbytes", "accelerate", "transformers.trainer", "matplotlib",
                 "torch"]


def run_python(code):
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_import_helpers_imports_no_heavy_library():
    loaded = run_python(f"""
        import sys
        import helpers
        print(sorted(name for name in {NOT_ON_IMPORT!r} if name in sys.modules))
        """)
    assert loaded.strip() == "[]", f"`import helpers` imported {loaded.strip()}"


def test_every_public_name_resolves_and_completes():
    for module, names in helpers.EXPORTS.items():
        for name in names:
            assert getattr(helpers, name) is getattr(importlib.import_module(f"helpers.{module}"), name)
    assert set(helpers.__all__) <= set(dir(helpers))
    from helpers import load_data, optimizers  # a name and a submodule
    assert load_data is helpers.load_data and optimizers.make_optimizer is helpers.make_optimizer
    try:
        helpers.no_such_name
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("helpers.no_such_name did not raise AttributeError")


@pytest.mark.slow  # a fresh Python that imports all of helpers, as a grading kernel does: 8 CPU s
def test_guard_restores_a_replaced_lazy_name():
    """The guard's snapshot is taken before student code: a lazily bound `helpers.load_data`
    replaced by a student cell must be put back and reported, as with an eager import."""
    output = run_python("""
        from IPython.core.interactiveshell import InteractiveShell
        InteractiveShell.instance()
        import helpers  # as a lesson's first cell would, before the guard runs: nothing bound yet
        from autograde import guard
        guard.install(packages=["helpers"], preload=["helpers.*"])
        original = helpers.load_data
        helpers.load_data = lambda *args, **kwargs: "fake"
        print(guard.restore(), helpers.load_data is original)
        """)
    assert output.strip() == "['helpers.load_data'] True", output

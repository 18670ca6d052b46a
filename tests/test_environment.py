"""pyproject.toml and environment.yml pin the same stack, so pip and conda users get one course."""
import importlib.util
import re
import tomllib

from course.paths import ROOT


def pins(lines):
    return dict(re.match(r"^\s*-?\s*([A-Za-z0-9_.-]+)==(\S+)\s*$", line).groups()
                for line in lines if "==" in line)


def test_environment_yml_has_the_pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    expected = pins(project["dependencies"])
    conda = pins((ROOT / "environment.yml").read_text().splitlines())
    assert "torch" in expected, "the stack is pinned, torch included"
    assert conda == expected, f"environment.yml differs from pyproject.toml: {set(conda.items()) ^ set(expected.items())}"


def test_setup_leaves_out_the_optional_iri_checker():
    """`make setup` uninstalls rfc3987-syntax (see the Makefile): jsonschema would import it in every
    process that imports nbformat (graders, papermill, nbgrader, this test run), 3.7 s each."""
    assert importlib.util.find_spec("rfc3987_syntax") is None, "run: .venv/bin/pip uninstall rfc3987-syntax"

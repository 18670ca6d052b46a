"""helpers/README.md is the package's reading map: it names every module, and only modules that exist."""
import re

from course.paths import ROOT

HELPERS = ROOT / "helpers"


def test_the_reading_map_names_every_module():
    named = set(re.findall(r"`([a-z_]+\.py)`", (HELPERS / "README.md").read_text()))
    modules = {path.name for path in HELPERS.glob("*.py")}
    assert not modules - named, f"helpers/README.md does not place {sorted(modules - named)}"
    assert not named - modules, f"helpers/README.md names modules that do not exist: {sorted(named - modules)}"

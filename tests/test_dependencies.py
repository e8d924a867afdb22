"""The dependencies' floors (pyproject.toml) leave out the versions with known security
holes, and constraints.txt, which install.sh installs with, pins the whole dependency tree
within them."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REQUIREMENTS = [
    Requirement(text)
    for text in PROJECT["project"]["dependencies"] + PROJECT["project"]["optional-dependencies"]["test"]
]


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            found[canonicalize_name(name)] = version
    return found


def requirement(name: str, texts: list[str]) -> Requirement:
    return next(r for r in map(Requirement, texts) if canonicalize_name(r.name) == name)


# The last version with the hole, per requirement (pyproject.toml's comments say which).
VULNERABLE = [
    ("lxml", "6.0.4"),  # an XXE in iterparse, fixed in 6.1.0
    ("pymysql", "1.1.0"),  # CVE-2024-36039
    ("pytest", "9.0.2"),  # CVE-2025-71176
]


@pytest.mark.parametrize(("name", "version"), VULNERABLE)
def test_the_floors_leave_out_versions_with_known_holes(name: str, version: str) -> None:
    texts = [str(r) for r in REQUIREMENTS]
    assert not requirement(name, texts).specifier.contains(version)


def test_the_build_needs_a_setuptools_with_the_path_traversal_fixed() -> None:
    build = requirement("setuptools", PROJECT["build-system"]["requires"])
    assert not build.specifier.contains("78.1.0") and build.specifier.contains("78.1.1")


def test_every_requirement_is_pinned_within_its_range() -> None:
    pinned = pins()
    for wanted in REQUIREMENTS:
        version = pinned.get(canonicalize_name(wanted.name))
        assert version is not None, f"{wanted.name} is not in constraints.txt"
        assert wanted.specifier.contains(version), f"{wanted.name}=={version} is outside {wanted}"


def test_the_whole_installed_tree_is_pinned() -> None:
    """Every distribution the requirements pull in, as installed here, has a pin."""
    tree: set[str] = set()
    pending = list(REQUIREMENTS)
    while pending:
        wanted = pending.pop()
        name = canonicalize_name(wanted.name)
        if name in tree:
            continue
        tree.add(name)
        for text in importlib.metadata.distribution(wanted.name).requires or []:
            needed = Requirement(text)
            extras = wanted.extras or {""}
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                pending.append(needed)
    assert sorted(tree - set(pins())) == []


def test_install_sh_installs_with_the_constraints() -> None:
    assert "-c constraints.txt" in (ROOT / "install.sh").read_text()


def test_ci_runs_the_readmes_set_up_commands() -> None:
    """README's first block: the demo command and the test command, each as .ci/run runs it."""
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("\n    ./install.sh"):readme.index("\n\n", readme.index("\n    ./install.sh"))]
    commands = [line.split("#", 1)[0].strip() for line in block.strip("\n").splitlines()]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands == ["./install.sh && .venv/bin/xdspub demo", "./install.sh --test && .venv/bin/python -m pytest"]
    assert "./install.sh && .venv/bin/xdspub demo >/dev/null" in ci
    assert "{ ./install.sh --test && .venv/bin/python -m pytest; }" in ci

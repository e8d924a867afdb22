"""The layers' contract: only publisher/plans knows Spark, and every docs/ section that code
cites exists (docs/README.md)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("publisher.reduce", "publisher.render", "publisher.source", "publisher.delivery")


def test_the_rules_readers_renderer_and_sinks_load_no_spark() -> None:
    modules = [
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for layer in LAYERS
        for path in (ROOT / layer.replace(".", "/")).rglob("*.py")
    ]
    modules = [m.removesuffix(".__init__") for m in modules]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert len(modules) > 30
    assert result.stdout.strip() == "[]"


def test_no_module_outside_plans_imports_spark() -> None:
    found = []
    for path in (ROOT / "publisher").rglob("*.py"):
        relative = path.relative_to(ROOT / "publisher").as_posix()
        if relative.startswith("plans/"):
            continue
        if re.search(r"^\s*(from|import) pyspark", path.read_text(), re.M):
            found.append(relative)
    assert found == []


_HEADING = re.compile(r"^#+\s+(.+?)\s*$", re.M)
# (docs/file.md, Heading) or (docs/file.md, Heading; more) or docs/file.md#anchor
_CITATION = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+)|, ([A-Z][^)\n;]*?)(?=[);]))?")


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading).strip().lower().replace(" ", "-")


def test_every_docs_section_code_cites_exists() -> None:
    headings = {
        path.name: set(_HEADING.findall(path.read_text())) for path in (ROOT / "docs").glob("*.md")
    }
    missing = []
    sources = [p for folder in ("publisher", "grammar", "sql", "bench") for p in (ROOT / folder).rglob("*")
               if p.suffix in (".py", ".sql")]
    for path in sources:
        # A citation may wrap: a line break, its indentation and comment marker are a space.
        text = re.sub(r"\n[ \t]*(?:#|--)?[ \t]*", " ", path.read_text())
        for name, anchor, heading in _CITATION.findall(text):
            where = f"{path.relative_to(ROOT)}: docs/{name}"
            if name not in headings:
                missing.append(where)
            elif heading and heading not in headings[name]:
                missing.append(f"{where}, {heading}")
            elif anchor and anchor not in {_anchor(h) for h in headings[name]}:
                missing.append(f"{where}#{anchor}")
    assert missing == []


_LAYOUT_LINE = re.compile(r"^    ((?:publisher/)?[\w.]+(?:/|\.py))\s", re.M)


def _layout() -> list[str]:
    """The README's layout (How a cycle runs): its folders and modules in order."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## How a cycle runs"):]
    section = section[: section.index("\n## ", 1)]
    return _LAYOUT_LINE.findall(section)


def _unit(module: str) -> str | None:
    """The layout entry a module belongs to: its folder, or itself when it stands alone."""
    parts = module.split(".")
    if parts[0] == "grammar":
        return "grammar/"
    if parts[0] != "publisher":
        return None
    if len(parts) == 1:
        return "publisher/__init__.py"
    if (ROOT / "publisher" / parts[1]).is_dir():
        return f"publisher/{parts[1]}/"
    return f"publisher/{parts[1]}.py"


def _imports() -> dict[str, set[str]]:
    """Each module of publisher/ and grammar/ and the modules of theirs it imports, at
    any depth of its code (an import deferred into a function counts)."""
    modules = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for folder in ("publisher", "grammar") for path in (ROOT / folder).rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        graph[module] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # "from package import module" imports the module
                names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                         else node.module for alias in node.names]
            else:
                continue
            graph[module] |= {name for name in names if name in modules and name != module}
    return graph


def test_each_layer_imports_only_those_the_readme_lists_before_it() -> None:
    order = _layout()
    rank = {name: place for place, name in enumerate(order)}
    upward, unlisted = [], set()
    for module, imported in _imports().items():
        unit = _unit(module)
        for target in [_unit(name) for name in imported]:
            if unit not in rank or target not in rank:
                unlisted |= {unit, target} - rank.keys()
            elif rank[target] > rank[unit]:
                upward.append(f"{module} -> {target}")
    assert len(order) > 15
    assert sorted(unlisted) == []
    assert upward == []


def test_no_module_imports_itself_through_others() -> None:
    graph = _imports()
    circles, done = [], set()

    def visit(module: str, path: list[str]) -> None:
        for name in sorted(graph[module]):
            if name in path:
                circles.append(" -> ".join([*path[path.index(name):], name]))
            elif name not in done:
                visit(name, [*path, name])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert circles == []

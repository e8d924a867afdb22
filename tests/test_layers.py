"""The layers' contract: only publisher/plans knows Spark, and every docs/ section that code
cites exists (docs/README.md)."""

from __future__ import annotations

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

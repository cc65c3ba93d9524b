"""Every path and dotted name that the README, docs/*.md or a source file cites exists.

A doc that names `annotator/services/sweep.py` after the file moved sends a reader nowhere; this test
fails on such a citation. What counts as a citation (`cited_paths`, `cited_names`):
- a path, backticked or bare in a comment or docstring, whose first part is a top-level folder of the
  repository (`bench/chaos.py`) or a folder of `annotator/` (`analysis/aggregation.py`, read as
  `annotator/analysis/...`), or that starts with `../shared/`; globs and placeholders are not paths;
- a path whose first part is a layer (`services/claim_queries.py`), written under a step as the docs'
  tables and each step's modules do: in a step's own module it is that step's (`annotator/<step>/services/...`),
  anywhere else it must exist in the layer of some step;
- a backticked dotted name that starts with one of the packages (`annotator.analysis.aggregation.with_intervals`):
  its longest prefix that is a module file must define the rest (read with `ast`, not imported).
Bare file names (`captions.json`) are examples of a person's files, not citations.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotator", "api", "workers", "config")
TOP_LEVEL = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")} | {".ci"}
ANNOTATOR_FOLDERS = {p.name for p in (ROOT / "annotator").iterdir() if p.is_dir() and p.name != "__pycache__"}
# The layers inside a step (docs/architecture.md): a path starting with one is relative to a step's folder.
LAYERS = {"models", "services", "selectors", "views"}
BACKTICKED = re.compile(r"`([^`\s]+)`")
FILE_SUFFIXES = {"py", "md", "json", "jsonl", "csv", "txt", "html", "js", "css", "yml", "toml"}
# A path written without backticks, in a comment or a docstring: a repository folder, then a file with a suffix.
FOLDERS = "annotator|api|workers|config|bench|tests|templates|static|fixtures|docs"
BARE_PATH = re.compile(rf"(?<![\w/.-])((?:{FOLDERS})/[\w./-]*\w\.[a-z]+)\b")
# What the benches write when they run: not in the repository, and named as where to look afterwards.
OUTPUTS = ("bench/out/",)
DOTTED = re.compile(rf"^(?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


def documents() -> list[tuple[str, str]]:
    """(where, text) for the README, every docs/*.md and every source file of the packages and bench."""
    found = [("README.md", (ROOT / "README.md").read_text())]
    found += [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted((ROOT / "docs").glob("*.md"))]
    for package in (*PACKAGES, "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            found.append((str(path.relative_to(ROOT)), path.read_text()))
    return found


def cited_paths(text: str) -> list[str]:
    paths = []
    for token in BACKTICKED.findall(text) + BARE_PATH.findall(text):
        token = token.rstrip(".,:;)").split("::")[0].split(":")[0] if "::" in token else token.rstrip(".,:;)")
        if any(mark in token for mark in "*<>{}$") or "/" not in token or "://" in token or token.startswith(OUTPUTS):
            continue
        if token.startswith("../shared/") or token.split("/")[0] in TOP_LEVEL | ANNOTATOR_FOLDERS | LAYERS:
            paths.append(token)
    return paths


def path_exists(token: str, where: str = "") -> bool:
    """`where` is the citing file: a layer-relative path in `annotator/<step>/...` is read inside that step."""
    token = token.rstrip("/")
    if token.startswith("../shared/"):
        shared = ROOT.parent / "shared"
        return not shared.exists() or (ROOT.parent / token[3:]).exists()
    first = token.split("/")[0]
    if first in TOP_LEVEL and (ROOT / token).exists():
        return True
    if first in ANNOTATOR_FOLDERS and (ROOT / "annotator" / token).exists():
        return True
    if first not in LAYERS:
        return False
    parts = Path(where).parts
    if len(parts) > 2 and parts[0] == "annotator" and (ROOT / "annotator" / parts[1] / first).is_dir():
        return (ROOT / "annotator" / parts[1] / token).exists()
    return any((ROOT / "annotator" / step / token).exists() for step in ANNOTATOR_FOLDERS)


def _defined_names(body) -> dict[str, list]:
    """The names a module or class body defines, each with the body of what it defines (a class's members)."""
    names: dict[str, list] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = []
        elif isinstance(node, ast.ClassDef):
            names[node.name] = node.body
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update({n.id: [] for n in ast.walk(target) if isinstance(n, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: [] for a in node.names})
        elif isinstance(node, (ast.If, ast.Try)):
            names.update(_defined_names(node.body))
    return names


def name_exists(dotted: str) -> bool:
    """The longest prefix that is a module or package file, then names defined in it (read, not imported)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        source = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if not source.exists():
            continue
        body = ast.parse(source.read_text()).body
        for attribute in parts[cut:]:
            names = _defined_names(body)
            if attribute not in names:
                return (base / attribute).with_suffix(".py").exists() if base.is_dir() else False
            body = names[attribute]
        return True
    return False


def cited_names(text: str) -> list[str]:
    names = [t.rstrip(".,:;").removesuffix("()") for t in BACKTICKED.findall(text)]
    return [n for n in names if DOTTED.match(n) and n.rsplit(".", 1)[-1] not in FILE_SUFFIXES]


@pytest.mark.parametrize(("where", "text"), documents(), ids=lambda v: v if "\n" not in v else "")
def test_cited_paths_and_names_exist(where, text):
    """Sources are read whole, so a comment's path counts as much as a docstring's."""
    missing = [p for p in cited_paths(text) if not path_exists(p, where)]
    missing += [n for n in cited_names(text) if not name_exists(n.removesuffix("()"))]
    assert not missing, f"{where} cites what does not exist: {missing}"


def test_a_planted_stale_path_is_caught():
    """The check itself fails on a path and a dotted name that do not exist."""
    text = "See `annotator/services/sweep.py` and `annotator.analysis.aggregation.no_such_function`."
    assert not path_exists(cited_paths(text)[0])
    assert not name_exists(cited_names(text)[0])
    assert path_exists("annotator/operations/services/sweep.py")
    assert name_exists("annotator.analysis.aggregation.with_intervals")


def test_a_planted_stale_step_relative_path_is_caught():
    """A path written under a step (`services/...`) is cited, and fails when no step's layer holds it."""
    text = "| `operations/` | the sweep (`services/sweep_gone.py`), the page (`views/no_such_page.py`) |"
    assert cited_paths(text) == ["operations/", "services/sweep_gone.py", "views/no_such_page.py"]
    assert not path_exists("services/sweep_gone.py")
    assert not path_exists("views/no_such_page.py")
    assert path_exists("services/sweep.py")
    assert path_exists("selectors/access.py")
    assert path_exists("models/__init__.py")
    assert path_exists("services/sweep.py", "annotator/operations/services/__init__.py")
    assert not path_exists("services/sweep.py", "annotator/quality/services/__init__.py")

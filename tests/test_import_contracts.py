"""The import contracts in pyproject.toml (`lint-imports`) hold, and each one catches a violation planted in a
temporary copy of the code: annotator importing api or workers, torch outside workers.ranking, a layer
importing upwards, Django in annotator.analysis, and circles between sibling modules or packages."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotator", "api", "workers", "config")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """The Python sources of the project and its pyproject.toml, copied once (no data, no caches)."""
    copy = tmp_path_factory.mktemp("contracts") / "tree"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "migrations", "*.json", "*.jpg", "*.png")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, copy / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


@pytest.fixture
def tree(pristine, tmp_path) -> Path:
    copy = tmp_path / "tree"
    shutil.copytree(pristine, copy)
    return copy


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def plant(tree: Path, module: str, source: str) -> None:
    path = tree / (module.replace(".", "/") + ".py")
    if path.exists():
        path.write_text(path.read_text() + "\n" + source + "\n")
    else:
        path.write_text(source + "\n")


def test_the_code_keeps_every_contract(pristine):
    result = lint_imports(pristine)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("planted", "contract"),
    [
        (
            {"annotator.services.exports.planted": "import api.views"},
            "annotator never imports api or workers BROKEN",
        ),
        (
            {"annotator.selectors.planted": "from workers.tasks import quality"},
            "annotator never imports api or workers BROKEN",
        ),
        (
            {"workers.tasks.planted": "import torch"},
            "only workers.ranking imports torch or transformers BROKEN",
        ),
        (
            {"annotator.services.ranking.planted": "from transformers import AutoModel"},
            "only workers.ranking imports torch or transformers BROKEN",
        ),
        (
            {"annotator.selectors.planted": "from annotator.services.quality.decisions import assignment_approve"},
            "annotator's layers: callers -> views -> services -> selectors -> models BROKEN",
        ),
        (
            {"annotator.models.planted": "from annotator.selectors.gold import GOLD_ROLES"},
            "annotator's layers: callers -> views -> services -> selectors -> models BROKEN",
        ),
        (
            {"annotator.analysis.planted": "from django.db import connection"},
            "annotator.analysis is pure: no Django, no ORM, no other layer BROKEN",
        ),
        (
            # The circle this refactor broke: trust importing the module that imports it.
            {"annotator.services.quality.trust": "from annotator.services.quality import scoring"},
            "no import circles among the siblings of any annotator package BROKEN",
        ),
        (
            # A circle between two packages of services, through modules deep inside them.
            {"annotator.services.exports.jobs": "from annotator.services.research import evaluation"},
            "no import circles among the siblings of any annotator package BROKEN",
        ),
    ],
)
def test_a_planted_violation_breaks_its_contract(tree, planted, contract):
    for module, source in planted.items():
        plant(tree, module, source)
    result = lint_imports(tree)
    assert result.returncode != 0
    assert contract in result.stdout, result.stdout

"""The import contracts in pyproject.toml (`lint-imports`) hold, and each one catches a violation planted in a
temporary copy of the code: annotator importing api or workers, torch outside workers.ranking, a pipeline step
importing a later one (from its models, services, selectors or views alike: the pipeline allows one named module,
no wildcard), a layer inside a step importing upwards, one step's pages importing another's, Django in
annotator.analysis, and circles between sibling modules or packages. An allowance the code no longer needs fails."""

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


PIPELINE = "the pipeline: a step imports only the steps before it"
STEP_LAYERS = "inside every step: urls -> views -> services -> selectors -> models"
PAGES = "a step's pages never import another step's pages (only core's role gate)"
ACYCLIC = "no import circles among the siblings of any annotator package"


@pytest.mark.parametrize(
    ("planted", "contract"),
    [
        (
            {"annotator.labels.services.exports.planted": "import api.views"},
            "annotator never imports api or workers BROKEN",
        ),
        (
            {"annotator.quality.selectors.planted": "from workers.tasks import quality"},
            "annotator never imports api or workers BROKEN",
        ),
        (
            {"workers.tasks.planted": "import torch"},
            "only workers.ranking imports torch or transformers BROKEN",
        ),
        (
            {"annotator.ranking.services.planted": "from transformers import AutoModel"},
            "only workers.ranking imports torch or transformers BROKEN",
        ),
        (
            # A step's write reaching into a later step: campaigns come before the crowd's answers.
            {"annotator.campaigns.services.planted": "from annotator.crowd.services.answers import answer_save"},
            f"{PIPELINE} BROKEN",
        ),
        (
            # A model of an early step importing a later step's model.
            {"annotator.datasets.models.planted": "from annotator.labels.models.labels import Label"},
            f"{PIPELINE} BROKEN",
        ),
        (
            # core knows no step: the jobs' kinds register themselves instead.
            {"annotator.core.planted": "from annotator.ranking.services.runs import ranking_run_retry"},
            f"{PIPELINE} BROKEN",
        ),
        (
            {"annotator.campaigns.selectors.planted": "from annotator.quality.selectors.gold import GOLD_ROLES"},
            f"{PIPELINE} BROKEN",
        ),
        (
            # A read never joins a later step's tables: the datasets' access rules know no campaign.
            {"annotator.datasets.selectors.planted": "from annotator.campaigns.models.campaign import Campaign"},
            f"{PIPELINE} BROKEN",
        ),
        (
            # core's access holds the roles only; each step scopes its own objects.
            {"annotator.core.selectors.planted": "from annotator.labels.models.labelsets import LabelSet"},
            f"{PIPELINE} BROKEN",
        ),
        (
            # The one allowance is one module: another read of the campaigns step may not count crowd rows.
            {"annotator.campaigns.selectors.planted": "from annotator.crowd.models.crowd import Assignment"},
            f"{PIPELINE} BROKEN",
        ),
        (
            # A page never calls a later step: the campaign page shows the sweep's late scores through a tag.
            {"annotator.campaigns.views.planted": "from annotator.operations.services.sweep import stale_times"},
            f"{PIPELINE} BROKEN",
        ),
        (
            {"annotator.campaigns.views.planted": "from annotator.crowd.scales import campaign_scale"},
            f"{PIPELINE} BROKEN",
        ),
        (
            # Sign-up makes a worker, so it is the crowd's page, not core's.
            {"annotator.core.views.planted": "from annotator.crowd.services.workers import worker_signup"},
            f"{PIPELINE} BROKEN",
        ),
        (
            {"annotator.labels.views.planted": "from annotator.research.models.research import Evaluation"},
            f"{PIPELINE} BROKEN",
        ),
        (
            # A read of a later step's table is also a circle between the two steps.
            {"annotator.quality.selectors.planted": "from annotator.labels.models.labels import Label"},
            f"{ACYCLIC} BROKEN",
        ),
        (
            {"annotator.quality.selectors.planted": "from annotator.quality.services.trust import trust_policy"},
            f"{STEP_LAYERS} BROKEN",
        ),
        (
            {"annotator.crowd.models.planted": "from annotator.crowd.selectors.work import hit_item_tokens"},
            f"{STEP_LAYERS} BROKEN",
        ),
        (
            {"annotator.research.views.planted": "from annotator.labels.views import labelsets"},
            f"{PAGES} BROKEN",
        ),
        (
            {"annotator.analysis.planted": "from django.db import connection"},
            "annotator.analysis is pure: no Django, no ORM, no other layer BROKEN",
        ),
        (
            # The circle this refactor broke: trust importing the module that imports it.
            {"annotator.quality.services.trust": "from annotator.quality.services import scoring"},
            f"{ACYCLIC} BROKEN",
        ),
    ],
)
def test_a_planted_violation_breaks_its_contract(tree, planted, contract):
    for module, source in planted.items():
        plant(tree, module, source)
    result = lint_imports(tree)
    assert result.returncode != 0
    assert contract in result.stdout, result.stdout


def test_an_allowance_that_no_longer_matches_fails(tree):
    """The pipeline's one allowance (campaigns.selectors.crowd_work reading crowd models) is named module by module;
    once the code no longer needs it, lint-imports says so instead of keeping a stale exception."""
    (tree / "annotator/campaigns/selectors/crowd_work.py").write_text('"""Nothing read here any more."""\n')
    result = lint_imports(tree)
    assert result.returncode != 0
    said = " ".join((result.stdout + result.stderr).split())  # the report wraps long lines
    assert (
        "No matches for ignored import annotator.campaigns.selectors.crowd_work -> annotator.crowd.models.crowd" in said
    )

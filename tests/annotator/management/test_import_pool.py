"""`manage.py import_pool`: a pool from a folder, scored and added from the command line."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotator.models import EnlargementStatus, GalleryAddition
from tests import factories
from tests.annotator.finegrained.pool_support import PoolWorld

pytestmark = pytest.mark.django_db(transaction=True)  # the scoring task is sent after commit


def test_import_pool_enlarges_and_adds(tmp_path):
    world = PoolWorld(tmp_path, images=10, pool_size=12, owner=factories.UserFactory())
    out = StringIO()
    call_command(
        "import_pool",
        "--dataset",
        world.dataset.name,
        "--name",
        "aux",
        "--images",
        str(world.pool_dir),
        "--enlarge",
        "--keep",
        "2",
        "--add",
        stdout=out,
    )
    summary = json.loads(out.getvalue())
    planted = {**world.pool_truth["duplicates"]["exact"], **world.pool_truth["duplicates"]["near"]}
    reported = {d["file"].rsplit(".", 1)[0] for d in summary["duplicates"]}
    assert set(planted) <= reported
    # A tiny scene may repeat a test picture nearly pixel for pixel; everything else is imported.
    assert summary["imported"] + len(reported - set(planted)) + summary["repeated_in_pool"] == 12
    assert summary["enlargement"]["status"] == EnlargementStatus.ADDED
    assert GalleryAddition.objects.count() == summary["enlargement"]["counts"]["added"] > 0
    with pytest.raises(CommandError, match="no dataset"):
        call_command("import_pool", "--dataset", "nope", "--name", "x", "--images", str(world.pool_dir))

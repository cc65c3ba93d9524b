"""CxC Table 5 of one of Vericap's own annotators: `manage.py cxc_annotator_scores` scores a CxC-style label
set's rated pairs with a machine annotator (here tfidf_pivot on synthetic scenes whose ratings follow the
scenes' truth), writes the files `evaluate --cxc` reads, and prints Table 5 of them."""

import csv
import json
import random
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Caption, Image
from tests import factories
from tests.annotator.cxc.support import SyntheticWorld

pytestmark = pytest.mark.django_db


def test_an_annotator_scores_the_rated_pairs_and_table_5_follows(tmp_path):
    world = SyntheticWorld(tmp_path / "world", images=24, owner=factories.UserFactory())
    captions = list(Caption.objects.filter(dataset=world.dataset).values_list("pk", "source_id", "image_id"))
    image_source = dict(Image.objects.filter(dataset=world.dataset).values_list("pk", "source_id"))
    rng = random.Random(2)
    lines = []
    for pk, source, own in captions:
        for other_pk, other_source, _ in rng.sample(captions, 3):
            if other_pk == pk:
                continue
            score = round(world.caption_similarity(pk, other_pk), 2)
            lines.append({"caption": source, "other_caption": other_source, "positive": score >= 3, "score": score})
        lines.append({"image": image_source[own], "caption": source, "positive": True, "score": 4.6})
    text = "\n".join(json.dumps(line) for line in lines)
    labelset_import(dataset=world.dataset, name="cxc-synthetic", files=[("rated.jsonl", text)], fmt="jsonl")
    out, err = StringIO(), StringIO()
    call_command(
        "cxc_annotator_scores",
        "--label-set",
        "cxc-synthetic",
        "--annotator",
        "tfidf_pivot",
        "--out",
        str(tmp_path / "scores"),
        "--table5",
        "--resamples",
        "50",
        stdout=out,
        stderr=err,
    )
    with (tmp_path / "scores" / "sts_scores.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["caption1", "caption2", "score"] and len(rows) > 50
    assert (tmp_path / "scores" / "sits_scores.csv").exists()
    table = json.loads(out.getvalue())
    assert table["tasks"]["sts"]["spearman"] > 0.2  # tf-idf of the captions follows the scenes they share
    assert table["tasks"]["sts"]["pairs_missing_score"] == 0
    # The files are what `evaluate --cxc` reads: the same Table 5 from them.
    again = StringIO()
    call_command(
        "evaluate",
        "--cxc",
        "--label-set",
        "cxc-synthetic",
        "--scores",
        str(tmp_path / "scores" / "sts_scores.csv"),
        "--resamples",
        "50",
        stdout=again,
    )
    assert json.loads(again.getvalue())["tasks"]["sts"] == table["tasks"]["sts"]
    with pytest.raises(CommandError, match="reads no caption"):
        call_command(
            "cxc_annotator_scores", "--label-set", "cxc-synthetic", "--annotator", "visual", "--out", str(tmp_path)
        )

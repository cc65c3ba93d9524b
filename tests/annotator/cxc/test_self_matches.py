"""Caption-to-caption and image-to-image retrieval never counts the query as its own match (CxC's protocol).

On the released STS and SIS test sets, a model's ranking that puts the query first scores exactly as the
same ranking without it, on every path: the evaluation service (the page and the leaderboard's quick
numbers), the scorecard (the stored evaluation and the leaderboard), `manage.py evaluate` and the API; and
each says how many queries it dropped.
"""

import json
import random
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from annotator.analysis.scorecard import Settings, scorecard
from annotator.analysis.self_matches import self_matches_drop
from annotator.labels.selectors.labelsets import dataset_source_ids, labelset_label_maps
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Role
from annotator.research.selectors.scorecards import labelset_grades
from annotator.research.services.labelset_evaluation import labelset_evaluate
from annotator.research.services.scorecards import evaluation_request, evaluation_run
from tests.annotator.cxc.released_support import FILES, coco_test_split, released_bytes
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db

DIRECTION = {"cxc_sts": "t2t", "cxc_sis": "i2i"}


def _rankings(label_set, direction: str, *, seed: int = 7) -> dict:
    """For every query of the set: its positives and 20 random others of the gallery, shuffled; never the
    query itself."""
    rng = random.Random(seed)
    side = "caption" if direction == "t2t" else "image"
    gallery = sorted(dataset_source_ids(dataset_id=label_set.dataset_id)[side].values())
    rankings = {}
    for query, positives in labelset_label_maps(label_set=label_set)[direction].items():
        others = [item for item in rng.sample(gallery, 21) if item != query and item not in positives][:20]
        ranked = [item for item in positives if item != query] + others
        rng.shuffle(ranked)
        rankings[query] = ranked
    return {direction: rankings}


def _query_first(rankings: dict) -> dict:
    return {d: {query: [query, *ranked] for query, ranked in section.items()} for d, section in rankings.items()}


@pytest.fixture(params=["cxc_sts", "cxc_sis"])
def released(request):
    fmt = request.param
    dataset = coco_test_split()
    label_set = labelset_import(
        dataset=dataset, name=fmt.replace("_", "-"), files=[(FILES[fmt], released_bytes(fmt))], fmt=fmt, public=True
    )
    direction = DIRECTION[fmt]
    clean = _rankings(label_set, direction)
    return label_set, direction, clean, _query_first(clean)


def test_a_ranking_with_the_query_first_scores_as_the_same_ranking_without_it(released):
    label_set, direction, clean, with_query = released
    queries = len(clean[direction])
    assert queries > 4000
    expected = labelset_evaluate(label_set=label_set, rankings=clean)
    got = labelset_evaluate(label_set=label_set, rankings=with_query)
    assert got["scores"] == expected["scores"]
    assert expected["scores"][direction]["r1"] > 0.05  # a real score, not the self-match's zero
    assert got["counts"][direction]["self_matches_dropped"] == queries
    assert expected["counts"][direction]["self_matches_dropped"] == 0
    assert any(f"{queries:,} queries' rankings held the query itself" in w for w in got["warnings"])
    assert not any("held the query itself" in w for w in expected["warnings"])


def test_the_scorecard_drops_the_query_and_counts_it(released):
    label_set, direction, clean, with_query = released
    grades = labelset_grades(label_set=label_set)
    settings = Settings(resamples=20, seed=1)
    expected = scorecard(clean, grades, settings=settings)
    got = scorecard(with_query, grades, settings=settings)
    assert got["metrics"] == expected["metrics"]
    labels = got["protocols"][direction]["labels"]
    assert labels["self_matches_dropped"] == labels["queries"] > 4000  # every scored query's ranking held it
    assert any("held the query itself" in note for note in got["notes"])


def test_the_command_and_the_api_score_the_query_first_ranking_as_the_clean_one(released, tmp_path):
    label_set, direction, clean, with_query = released
    outputs = []
    for rankings in (clean, with_query):
        path = tmp_path / "rankings.json"
        path.write_text(json.dumps(rankings))
        out, err = StringIO(), StringIO()
        call_command("evaluate", "--label-set", str(label_set.pk), "--rankings", str(path), stdout=out, stderr=err)
        outputs.append((json.loads(out.getvalue()), err.getvalue()))
    assert outputs[0][0] == outputs[1][0]
    assert "held the query itself" in outputs[1][1] and "held the query itself" not in outputs[0][1]

    client = APIClient()
    client.force_authenticate(user_with_role(Role.RESEARCHER))
    answers = [
        client.post(
            f"/api/v1/labelsets/{label_set.pk}/evaluate/",
            {"rankings_file": SimpleUploadedFile("rankings.json", json.dumps(rankings).encode())},
            format="multipart",
        )
        for rankings in (clean, with_query)
    ]
    assert [answer.status_code for answer in answers] == [200, 200]
    assert answers[0].json()["scores"] == answers[1].json()["scores"]
    assert answers[1].json()["counts"][direction]["self_matches_dropped"] == len(clean[direction])


def test_dropping_leaves_image_text_rankings_alone_and_counts_only_lists_that_held_the_query():
    rankings = {"i2t": {"1": ["1", "2"]}, "t2t": {"5": ["5", "6"], "7": ["8", "9"]}, "i2i": {"3": ["4", "3"]}}
    cleaned, dropped = self_matches_drop(rankings)
    assert cleaned == {"i2t": {"1": ["1", "2"]}, "t2t": {"5": ["6"], "7": ["8", "9"]}, "i2i": {"3": ["4"]}}
    assert dropped == {"t2t": 1, "i2i": 1}


def test_the_leaderboard_says_how_many_rankings_held_their_query(released, client):
    label_set, direction, clean, with_query = released
    researcher = user_with_role(Role.RESEARCHER)
    evaluation, _ = evaluation_request(
        user=researcher, name="query-first", label_set=label_set, rankings=with_query, resamples=10
    )
    evaluation = evaluation_run(evaluation_id=evaluation.pk)
    scored = evaluation.results["protocols"][direction]["labels"]["queries"]
    client.force_login(researcher)
    page = client.get(f"/research/leaderboard/labelset/{label_set.pk}/?direction={direction}")
    assert page.status_code == 200
    assert f"query dropped from its own ranking in {scored} queries" in page.content.decode()

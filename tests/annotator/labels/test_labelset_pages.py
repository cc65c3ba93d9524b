"""The label-set pages: what a researcher and a requester see and can do, and who is refused."""

import io
import json

import pytest

from annotator import models
from annotator.labels.services.labelsets.builds import (
    labelset_from_campaign,
    labelset_from_original,
)
from tests import factories
from tests.research_helpers import research_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client):
    user = factories.user_with_role(models.Role.RESEARCHER, username="ada")
    client.force_login(user)
    return user


@pytest.fixture
def campaign(researcher):
    campaign = research_campaign(name="Shared campaign")
    campaign.shared_with.add(researcher)
    return campaign


def _upload(name, data):
    handle = io.BytesIO(json.dumps(data).encode())
    handle.name = name
    return handle


def test_list_page_shows_readable_sets_and_the_forms(client, campaign):
    mine = labelset_from_campaign(campaign=campaign, name="crowd")
    hidden = labelset_from_original(dataset=factories.CaptionFactory().dataset, name="hidden")
    html = client.get("/research/labelsets/").content.decode()
    assert mine.label in html and hidden.label not in html
    assert "Import a file" in html and "Combine sets" in html and "Compare the ticked sets" in html


def test_import_split_files_from_the_page_then_see_counts_per_direction(client, campaign):
    response = client.post(
        "/research/labelsets/import",
        {
            "dataset": campaign.dataset_id,
            "name": "eccv",
            "files": [
                _upload("eccv_image_to_caption.json", {"1": [11, 21, 22], "2": [12]}),
                _upload("eccv_caption_to_image.json", {"22": [1, 3]}),
            ],
        },
    )
    assert response.status_code == 302
    label_set = models.LabelSet.objects.get(name="eccv")
    page = client.get(response["Location"]).content.decode()
    assert "eccv@1" in page and "Judged queries and positives" in page
    # i2t: 2 queries, 4 positives; t2i: 1 query, 2 positives; and a bar per positives count.
    assert '<td>i2t</td><td class="num">2</td><td class="num">2</td><td class="num">4</td>' in page
    assert '<td>t2i</td><td class="num">1</td><td class="num">1</td><td class="num">2</td>' in page
    assert 'class="bars"' in page
    assert label_set.created_by.username == "ada"


def test_a_bad_file_is_a_readable_400_page(client, campaign):
    response = client.post(
        "/research/labelsets/import",
        {
            "dataset": campaign.dataset_id,
            "name": "x",
            "format": "eccv_json",
            "files": [_upload("x.json", {"i2t": {"9": [9]}})],
        },
    )
    assert response.status_code == 400
    assert "None of the file&#x27;s ids" in response.content.decode()


def test_compare_page_shows_table_3_and_table_2(client, campaign, researcher):
    crowd = labelset_from_campaign(campaign=campaign, name="crowd")
    original = labelset_from_original(dataset=campaign.dataset, name="coco", user=researcher)
    html = client.get(f"/research/labelsets/compare/?sets={crowd.pk}&sets={original.pk}").content.decode()
    assert "Positives per query (ECCV Caption Table 3)" in html
    assert "Precision and recall against each other (ECCV Caption Table 2)" in html
    assert "crowd@1" in html and "coco@1" in html


def test_bias_page_of_a_crowd_set(client, campaign):
    crowd = labelset_from_campaign(campaign=campaign, name="crowd")
    html = client.get(f"/research/labelsets/{crowd.pk}/bias/").content.decode()
    assert "Machine-annotator bias of crowd@1" in html and "<td>tfidf</td>" in html
    assert "fewer than two" in html  # one annotator: no subsets to compare


def test_upload_rankings_then_the_run_page_scores_it_and_only_a_requester_can_send_it_to_the_crowd(client, campaign):
    crowd = labelset_from_campaign(campaign=campaign, name="crowd")
    response = client.post(
        f"/research/labelsets/{crowd.pk}/rankings",
        {"model_name": "mine", "top_k": "5", "rankings": _upload("r.json", {"i2t": {"1": ["11", "12", "31"]}})},
    )
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "mine on crowd@1" in page and "judged@10" in page
    assert "A requester makes campaigns" in page
    run = models.RankingRun.objects.get(annotator__name="mine")
    refused = client.post(f"/research/labelsets/{crowd.pk}/runs/{run.pk}/campaign", {"k": "3"})
    assert refused.status_code == 403


def test_export_link_downloads_csv(client, campaign):
    crowd = labelset_from_campaign(campaign=campaign, name="crowd")
    response = client.get(f"/research/labelsets/{crowd.pk}/export?format=csv")
    rows = b"".join(response.streaming_content).decode().splitlines()
    assert rows[0].startswith("kind,image,caption") and len(rows) == 1 + 7


@pytest.mark.parametrize("role, status", [(models.Role.WORKER, 403), (models.Role.REQUESTER, 404)])
def test_other_roles_and_other_people(client, campaign, role, status):
    crowd = labelset_from_campaign(campaign=campaign, name="crowd")
    client.force_login(factories.user_with_role(role, username=f"someone-{role}"))
    assert client.get(f"/research/labelsets/{crowd.pk}/").status_code == status


def test_anonymous_goes_to_the_login_page(client):
    client.logout()
    response = client.get("/research/labelsets/")
    assert response.status_code == 302 and "/login" in response["Location"]

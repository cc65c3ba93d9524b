"""The researcher's pages and the API token page: what a person sees and can do."""

import io
import json

import pytest
from rest_framework.authtoken.models import Token

from annotator import models
from tests import factories
from tests.research_helpers import EXPECTED, eccv_positives, research_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client):
    user = factories.user_with_role(models.Role.RESEARCHER, username="ada")
    client.force_login(user)
    return user


def test_research_home_lists_only_shared_campaigns_with_counts(client, researcher):
    shared = research_campaign(name="Shared <b>one</b>")
    shared.shared_with.add(researcher)
    research_campaign(name="Not shared")
    page = client.get("/research/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Shared &lt;b&gt;one&lt;/b&gt;" in html and "Not shared" not in html
    assert '<td class="num">7</td>' in html and '<td class="num">5</td>' in html


def test_campaign_page_export_and_download(client, researcher, django_capture_on_commit_callbacks, background_tasks):
    campaign = research_campaign()
    campaign.shared_with.add(researcher)
    page = client.get(f"/research/campaigns/{campaign.pk}/")
    assert page.status_code == 200 and "Start export" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/research/campaigns/{campaign.pk}/export", {"format": "eccv_json", "variant": "strict"}
        )
    assert response.status_code == 302
    job = models.ExportJob.objects.get(campaign=campaign)
    assert background_tasks == [("workers.tasks.exports.export_run", job.pk)]  # not in the request
    assert job.status == "succeeded"
    page = client.get(f"/research/campaigns/{campaign.pk}/").content.decode()
    assert f"/research/exports/{job.pk}/download" in page
    download = client.get(f"/research/exports/{job.pk}/download")
    assert eccv_positives(json.loads(b"".join(download.streaming_content))) == EXPECTED[("strict", False)]


def test_campaign_page_refuses_bad_export_with_a_message(client, researcher):
    campaign = research_campaign()
    campaign.shared_with.add(researcher)
    response = client.post(f"/research/campaigns/{campaign.pk}/export", {"format": "cxc_csv"})
    assert response.status_code == 400 and "similarity" in response.content.decode()


def test_evaluation_form_shows_verified_and_original_scores(client, researcher):
    campaign = research_campaign()
    campaign.shared_with.add(researcher)
    upload = io.BytesIO(json.dumps({"i2t": {"1": ["11", "12", "21", "99", "31"]}, "t2i": {"22": [2, 3, 1]}}).encode())
    upload.name = "rankings.json"
    response = client.post(
        f"/research/campaigns/{campaign.pk}/evaluate", {"name": "<script>m</script>", "rankings": upload}
    )
    assert response.status_code == 302
    html = client.get(f"/research/campaigns/{campaign.pk}/").content.decode()
    assert "&lt;script&gt;m&lt;/script&gt;" in html and "<script>m" not in html
    assert "0.417" in html  # i2t mAP@R (1 + 2/3) / 4
    assert "0.250" in html  # t2i mAP@R


def test_evaluation_form_without_a_file_is_a_400(client, researcher):
    campaign = research_campaign()
    campaign.shared_with.add(researcher)
    response = client.post(f"/research/campaigns/{campaign.pk}/evaluate", {"name": "m"})
    assert response.status_code == 400 and "rankings JSON file" in response.content.decode()


@pytest.mark.parametrize("path", ["/research/campaigns/{pk}/", "/research/exports/{export}/download"])
def test_pages_of_campaigns_not_shared_are_404(client, researcher, path):
    campaign = research_campaign()
    job = factories.ExportJobFactory(campaign=campaign, status="succeeded")
    assert client.get(path.format(pk=campaign.pk, export=job.pk)).status_code == 404


def test_workers_and_anonymous_cannot_open_research_pages(client):
    assert client.get("/research/").status_code == 302  # to the log-in page
    client.force_login(factories.user_with_role(models.Role.WORKER))
    assert client.get("/research/").status_code == 403


def test_token_page_makes_replaces_and_revokes_a_token(client):
    user = factories.user_with_role(models.Role.WORKER, username="tok")
    client.force_login(user)
    assert "You have no API token" in client.get("/account/token/").content.decode()
    client.post("/account/token/new")
    first = Token.objects.get(user=user).key
    assert first in client.get("/account/token/").content.decode()
    client.post("/account/token/new")
    second = Token.objects.get(user=user).key
    assert second != first
    api = client.__class__()
    assert api.get("/api/v1/assignments/", HTTP_AUTHORIZATION=f"Token {first}").status_code == 401
    assert api.get("/api/v1/assignments/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 200
    client.post("/account/token/revoke")
    assert not Token.objects.filter(user=user).exists()
    assert api.get("/api/v1/assignments/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 401


def test_token_actions_need_post_and_login(client):
    assert client.get("/account/token/").status_code == 302
    user = factories.user_with_role(models.Role.RESEARCHER)
    client.force_login(user)
    assert client.get("/account/token/new").status_code == 405

"""Paper cuts of the research pages, each as a person met it on `make demo` (issue 35)."""

import io
import json

import pytest

from annotator import models
from tests import factories
from tests.research_helpers import LABELLED_PAIRS, research_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client):
    user = factories.user_with_role(models.Role.RESEARCHER, username="grace")
    client.force_login(user)
    return user


def test_the_research_list_counts_labelled_pairs_once_not_once_per_aggregation_method(client, researcher):
    """It said "Labels 28, Positive 20" for 7 labelled pairs, 5 positive: the four methods' labels summed."""
    campaign = research_campaign()
    campaign.shared_with.add(researcher)
    for method in ("posterior", "dawid_skene", "gold_weighted"):
        for label in models.Label.objects.filter(pair__campaign=campaign, method="majority"):
            factories.LabelFactory(pair=label.pair, method=method, choice=label.choice, confidence=0.7)
    html = client.get("/research/").content.decode()
    positives = sum(1 for *_, choice in LABELLED_PAIRS if choice in ("yes", "partially_yes"))
    assert f'<td class="num">{len(LABELLED_PAIRS)}</td>' in html and f'<td class="num">{positives}</td>' in html
    assert f'<td class="num">{4 * len(LABELLED_PAIRS)}</td>' not in html
    assert "Labelled pairs" in html and "<td>posterior</td>" in html  # the method the counts are of


def test_rankings_whose_ids_match_nothing_are_warned_about_on_the_research_page(client, researcher):
    """They scored all zeros without a word; the label-set path warned."""
    campaign = research_campaign()
    campaign.shared_with.add(researcher)
    upload = io.BytesIO(json.dumps({"i2t": {"img-1": ["cap-11"]}, "t2i": {"cap-22": ["img-3"]}}).encode())
    upload.name = "rankings.json"
    response = client.post(f"/research/campaigns/{campaign.pk}/evaluate", {"name": "wrong ids", "rankings": upload})
    assert response.status_code == 302
    html = client.get(response["Location"]).content.decode()
    assert "none of the rankings&#x27; query ids is one of the" in html and "source ids" in html


def test_the_cxc_export_of_a_four_choice_campaign_is_a_form_error_on_its_page(client, researcher):
    """It led to a bare 400 page; now the page comes back with the error at the form, and the choice is not
    offered on a four-choice campaign at all."""
    campaign = research_campaign()
    campaign.shared_with.add(researcher)
    page = client.get(f"/research/campaigns/{campaign.pk}/").content.decode()
    assert 'value="cxc_csv"' not in page and 'value="eccv_json"' in page
    response = client.post(f"/research/campaigns/{campaign.pk}/export", {"format": "cxc_csv"})
    html = response.content.decode()
    assert response.status_code == 400 and 'id="export-error"' in html and "similarity" in html
    assert "Start export" in html  # the campaign's page with its form, not an error page
    similarity = research_campaign(scale=models.Scale.SIMILARITY)
    similarity.shared_with.add(researcher)
    assert 'value="cxc_csv"' in client.get(f"/research/campaigns/{similarity.pk}/").content.decode()

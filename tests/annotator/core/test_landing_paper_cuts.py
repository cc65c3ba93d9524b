"""Paper cuts of the landing pages, each as a person met it on `make demo` (issue 35): a researcher lands on
a near-empty home page, the card and the menu name the research area differently, and the "Rank with" form
is offered while a dataset is still importing."""

import pytest
from django.urls import reverse

from annotator import models
from tests import factories
from tests.ranking_support import ranking_dataset

pytestmark = pytest.mark.django_db


def test_a_researcher_lands_on_labels_and_evaluation(client):
    client.force_login(factories.user_with_role(models.Role.RESEARCHER))
    response = client.get(reverse("home"))
    assert response.status_code == 302 and response["Location"] == reverse("research-home")
    page = client.get(response["Location"]).content.decode()
    assert "<h1>Labels &amp; evaluation</h1>" in page


def test_the_card_the_menu_and_the_page_name_the_research_area_alike(client):
    client.force_login(factories.user_with_role(models.Role.REQUESTER))
    home = client.get(reverse("home")).content.decode()
    card = home.split('<ul class="role-links">')[1]
    menu = home.split('<nav aria-label="Main">')[1].split("</nav>")[0]
    link = f'<a href="{reverse("research-home")}">Labels &amp; evaluation</a>'
    assert link in card and link in menu
    assert "Labels and evaluation" not in home and "Verified labels</a>" not in home


def test_the_rank_with_form_waits_for_the_import(client):
    requester = factories.user_with_role(models.Role.REQUESTER)
    client.force_login(requester)
    dataset, _images, _captions = ranking_dataset()
    dataset.owner = requester
    dataset.status = models.DatasetStatus.IMPORTING
    dataset.save(update_fields=["owner", "status"])
    page = client.get(reverse("dataset-ranking", args=[dataset.pk])).content.decode()
    assert "Rank with" not in page and "Ranking opens once the dataset is ready (importing)" in page
    dataset.status = models.DatasetStatus.READY
    dataset.save(update_fields=["status"])
    assert "Rank with" in client.get(reverse("dataset-ranking", args=[dataset.pk])).content.decode()

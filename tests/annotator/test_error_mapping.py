"""One mapping from an error to what a person is told (annotator.core.errors.error_answer): the same service
error has the same status on a page and through the API, and a database that is away is a 503 with
Retry-After on both."""

import html

import pytest
from django.db import connection

from annotator import models
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_same_service_error_has_the_same_status_and_message_on_a_page_and_in_the_api(client):
    """Launching a campaign that is still a draft: the service's 409, on the page, for a script and in the API."""
    owner = factories.user_with_role(models.Role.REQUESTER)
    campaign = factories.CampaignFactory(owner=owner)  # a draft without HITs
    client.force_login(owner)

    page = client.post(f"/campaigns/{campaign.pk}/launch/", {"confirm": "yes"})
    script = client.post(f"/campaigns/{campaign.pk}/launch/", {"confirm": "yes"}, HTTP_ACCEPT="application/json")
    api = client.post(f"/api/v1/campaigns/{campaign.pk}/launch/", content_type="application/json")

    assert page.status_code == script.status_code == api.status_code == 409
    message = api.json()["error"]
    assert "draft" in message
    assert html.escape(message) in page.content.decode()
    assert script.json()["error"] == message
    assert page.templates[0].name == "409.html"
    campaign.refresh_from_db()
    assert campaign.status == models.CampaignStatus.DRAFT


def test_another_requesters_campaign_is_a_404_on_a_page_and_in_the_api(client):
    campaign = factories.CampaignFactory()
    client.force_login(factories.user_with_role(models.Role.REQUESTER))
    page = client.post(f"/campaigns/{campaign.pk}/launch/")
    api = client.post(f"/api/v1/campaigns/{campaign.pk}/launch/", content_type="application/json")
    assert page.status_code == api.status_code == 404
    assert page.templates[0].name == "404.html"


def test_a_role_that_may_not_is_a_403_on_a_page_and_in_the_api(client):
    campaign = factories.CampaignFactory()
    client.force_login(factories.user_with_role(models.Role.WORKER))
    page = client.post(f"/campaigns/{campaign.pk}/launch/")
    api = client.post(f"/api/v1/campaigns/{campaign.pk}/launch/", content_type="application/json")
    assert page.status_code == api.status_code == 403
    assert page.templates[0].name == "403.html"


def test_a_bad_value_from_a_service_is_a_400_page_with_the_services_message(client):
    """A service's ApplicationError (400) reaches the person as the 400 page, with no catch in the view."""
    owner = factories.user_with_role(models.Role.REQUESTER)
    dataset = factories.DatasetFactory(owner=owner)
    client.force_login(owner)
    response = client.post(f"/datasets/{dataset.pk}/rank/", {"annotator": "kind:nonsense"})
    assert response.status_code == 400
    assert response.templates[0].name == "400.html"
    assert "Choose an annotator from the list." in response.content.decode()


@pytest.fixture
def database_away():
    """PostgreSQL really unreachable for the next request: the connection points at a port nobody listens
    on, so the driver's connect is refused (no fake exception); restored afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("takes the PostgreSQL server away from this process")
    saved = connection.settings_dict["PORT"]

    def away():
        connection.close()
        connection.settings_dict["PORT"] = "1"

    yield away
    connection.close()
    connection.settings_dict["PORT"] = saved


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_database_down_on_a_page_is_a_503_with_retry_after(client, settings, database_away):
    settings.OUTAGE_RETRY_AFTER_SECONDS = 9
    client.force_login(factories.user_with_role(models.Role.REQUESTER))
    client.raise_request_exception = False
    database_away()

    page = client.get("/campaigns/")
    api = client.get("/api/v1/campaigns/", HTTP_AUTHORIZATION="")

    assert page.status_code == 503 and page["Retry-After"] == "9"
    assert "Back in a moment" in page.content.decode()
    assert api.status_code == 503 and api["Retry-After"] == "9"
    assert api.json()["retry_after"] == 9

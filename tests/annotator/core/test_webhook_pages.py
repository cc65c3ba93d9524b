"""The webhooks page and API: a requester adds an endpoint, sees its secret and deliveries, sends a given-up
delivery again; nobody else sees or touches them; user text is escaped."""

import pytest
from django.utils.html import escape
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from standardwebhooks.webhooks import Webhook

from annotator.core.services.webhooks.delivery import webhook_emit, webhook_endpoint_create
from annotator.models import DeliveryStatus, Role, WebhookDelivery, WebhookEndpoint
from tests.annotator.core.test_webhook_targets import INTERNAL_URLS
from tests.annotator.core.test_webhooks import _Receiver
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def requester():
    return user_with_role(Role.REQUESTER, username="hook-owner")


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def test_a_requester_adds_an_endpoint_on_the_page_and_receives_signed_messages(
    client, requester, django_capture_on_commit_callbacks
):
    client.force_login(requester)
    with _Receiver([200]) as receiver:
        response = client.post("/webhooks/add", {"url": receiver.url, "events": ["import.done"]})
        assert response.status_code == 302
        endpoint = WebhookEndpoint.objects.get(owner=requester)
        assert endpoint.events == ["import.done"]
        page = client.get("/webhooks/").content.decode()
        assert endpoint.secret in page and receiver.url in page
        with django_capture_on_commit_callbacks(execute=True):
            webhook_emit(owner=requester, event="import.done", data={"dataset": 3})
    headers, body = receiver.received[0]
    Webhook(endpoint.secret).verify(body, {k.lower(): v for k, v in headers.items()})
    page = client.get("/webhooks/").content.decode()
    assert "Delivered" in page and "import.done" in page


def test_a_bad_url_is_a_clear_400_and_user_text_is_escaped(client, requester):
    client.force_login(requester)
    response = client.post("/webhooks/add", {"url": "javascript:alert(1)"})
    assert response.status_code == 400 and b"Give an http(s) URL" in response.content
    webhook_endpoint_create(owner=requester, url="https://example.org/<script>x</script>")
    page = client.get("/webhooks/").content.decode()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


@pytest.mark.parametrize(("url", "reason"), INTERNAL_URLS, ids=[url for url, _ in INTERNAL_URLS])
def test_every_internal_spelling_is_refused_at_save_on_the_page_and_the_api(client, requester, url, reason):
    """The /webhooks/add form and POST /api/v1/webhooks/ both answer 400 naming why; nothing is saved."""
    client.force_login(requester)
    page = client.post("/webhooks/add", {"url": url})
    assert page.status_code == 400
    assert escape(reason) in page.content.decode()
    api = _api(requester).post("/api/v1/webhooks/", {"url": url}, format="json")
    assert api.status_code == 400 and reason in api.json()["error"]
    assert not WebhookEndpoint.objects.filter(owner=requester).exists()


def test_the_delivery_log_shows_categories_not_socket_errors(client, requester):
    endpoint = webhook_endpoint_create(owner=requester, url="https://example.org/h")
    WebhookDelivery.objects.create(
        endpoint=endpoint, message_id="msg_r", event="export.ready", last_status_code=302, last_error="redirect_refused"
    )
    WebhookDelivery.objects.create(endpoint=endpoint, message_id="msg_t", event="export.ready", last_error="timeout")
    client.force_login(requester)
    page = client.get("/webhooks/").content.decode()
    assert "HTTP 302 Redirect refused (not followed)" in page and "Timed out" in page
    body = _api(requester).get(f"/api/v1/webhooks/{endpoint.pk}/deliveries/").json()
    assert sorted(d["last_error"] for d in body["results"]) == ["redirect_refused", "timeout"]


def test_a_given_up_delivery_is_sent_again_from_the_page(client, requester, django_capture_on_commit_callbacks):
    client.force_login(requester)
    with _Receiver([200]) as receiver:
        endpoint = webhook_endpoint_create(owner=requester, url=receiver.url)
        delivery = WebhookDelivery.objects.create(
            endpoint=endpoint, message_id="msg_page", event="export.ready", status=DeliveryStatus.FAILED, attempts=7
        )
        assert "Send again" in client.get("/webhooks/").content.decode()
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/webhooks/deliveries/{delivery.pk}/retry")
        assert response.status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 1
    assert len(receiver.received) == 1
    response = client.post(f"/webhooks/deliveries/{delivery.pk}/retry")  # delivered: nothing to send again
    assert response.status_code == 409 and b"given up" in response.content


def test_others_see_and_touch_nothing(client, requester):
    endpoint = webhook_endpoint_create(owner=requester, url="https://example.org/mine")
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, message_id="msg_x", event="export.ready", status=DeliveryStatus.FAILED
    )
    other = user_with_role(Role.REQUESTER, username="hook-other")
    client.force_login(other)
    assert endpoint.secret not in client.get("/webhooks/").content.decode()
    assert client.post(f"/webhooks/{endpoint.pk}/remove").status_code == 404
    assert client.post(f"/webhooks/deliveries/{delivery.pk}/retry").status_code == 404
    for role in (Role.WORKER, Role.RESEARCHER):
        client.force_login(user_with_role(role))
        assert client.get("/webhooks/").status_code == 403
    api = _api(other)
    assert api.get(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 404
    assert api.delete(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 404
    assert api.get("/api/v1/webhook-deliveries/").json()["count"] == 0
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()


def test_the_api_creates_lists_and_deletes_endpoints(requester):
    api = _api(requester)
    response = api.post("/api/v1/webhooks/", {"url": "https://example.org/h", "events": ["campaign.finished"]})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["secret"].startswith("whsec_") and body["events"] == ["campaign.finished"]
    bad = api.post("/api/v1/webhooks/", {"url": "https://example.org/h", "events": ["nope"]}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]
    assert [e["url"] for e in api.get("/api/v1/webhooks/").json()["results"]] == ["https://example.org/h"]
    assert api.get(f"/api/v1/webhooks/{body['id']}/deliveries/").json()["results"] == []
    assert api.delete(f"/api/v1/webhooks/{body['id']}/").status_code == 204
    assert not WebhookEndpoint.objects.filter(owner=requester).exists()

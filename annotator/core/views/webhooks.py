"""Webhooks on a requester's page: add or remove an endpoint, see its secret and every delivery, send a
given-up delivery again."""

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from annotator.core.models.accounts import Role
from annotator.core.models.webhooks import WebhookDelivery, WebhookEndpoint, WebhookEvent
from annotator.core.services.webhooks.delivery import (
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_redeliver,
)
from annotator.core.views.access import role_required

DELIVERIES_SHOWN = 50


def _own_endpoint(request, endpoint_id: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, owner=request.user).first()
    if endpoint is None:
        raise Http404("No such webhook endpoint.")
    return endpoint


@role_required(Role.REQUESTER)
@require_http_methods(["GET"])
def webhooks_page(request):
    endpoints = WebhookEndpoint.objects.filter(owner=request.user).order_by("id")
    deliveries = (
        WebhookDelivery.objects.filter(endpoint__owner=request.user)
        .select_related("endpoint")
        .order_by("-created_at", "-id")[:DELIVERIES_SHOWN]
    )
    context = {"endpoints": endpoints, "deliveries": deliveries, "events": WebhookEvent.choices}
    return render(request, "webhooks/page.html", context)


@role_required(Role.REQUESTER)
@require_POST
def webhook_add(request):
    endpoint = webhook_endpoint_create(
        owner=request.user, url=request.POST.get("url", ""), events=request.POST.getlist("events")
    )
    messages.success(request, f"Webhook endpoint {endpoint.url} added; verify messages with its secret.")
    return redirect("webhooks")


@role_required(Role.REQUESTER)
@require_POST
def webhook_remove(request, endpoint_id: int):
    endpoint = _own_endpoint(request, endpoint_id)
    webhook_endpoint_delete(endpoint=endpoint)
    messages.success(request, f"Webhook endpoint {endpoint.url} removed with its delivery log.")
    return redirect("webhooks")


@role_required(Role.REQUESTER)
@require_POST
def webhook_delivery_retry(request, delivery_id: int):
    delivery = WebhookDelivery.objects.filter(pk=delivery_id, endpoint__owner=request.user).first()
    if delivery is None:
        raise Http404("No such delivery.")
    webhook_redeliver(delivery=delivery)
    messages.success(request, f"Delivery {delivery.message_id} will be sent again.")
    return redirect("webhooks")


urlpatterns = [
    path("webhooks/", webhooks_page, name="webhooks"),
    path("webhooks/add", webhook_add, name="webhook-add"),
    path("webhooks/<int:endpoint_id>/remove", webhook_remove, name="webhook-remove"),
    path("webhooks/deliveries/<int:delivery_id>/retry", webhook_delivery_retry, name="webhook-delivery-retry"),
]

"""/api/v1/webhooks/: a requester's webhook endpoints, their delivery log, and sending a given-up delivery again.

Each requester sees only their own endpoints and deliveries; anything else is a 404. The signing secret is
returned with the endpoint (its owner needs it to verify messages) and never to anyone else.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from annotator.core.services.webhooks.delivery import (
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_redeliver,
)
from annotator.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from api.schema import errors
from api.views import ScopedViewSet, _validated


class WebhookEndpointSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "events", "secret", "active", "created_at"]
        read_only_fields = fields


class WebhookEndpointCreateSerializer(serializers.Serializer):
    url = serializers.CharField(
        max_length=500,
        help_text="An http(s) URL that accepts POSTs and leads to public addresses only (400 naming why otherwise).",
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WebhookEvent.choices),
        required=False,
        default=list,
        max_length=len(WebhookEvent.values),
        help_text="The events to send; empty or absent: every event.",
    )


class WebhookDeliverySerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "endpoint",
            "message_id",
            "event",
            "payload",
            "status",
            "attempts",
            "next_attempt_at",
            "last_status_code",
            "last_error",
            "log",
            "created_at",
            "delivered_at",
        ]
        read_only_fields = fields


class WebhookEndpointViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, ScopedViewSet):
    """A requester's webhook endpoints (Standard Webhooks signatures, with the endpoint's `secret`)."""

    model = WebhookEndpoint
    serializer_class = WebhookEndpointSerializer

    def scoped_queryset(self):
        return WebhookEndpoint.objects.filter(owner=self.request.user).order_by("id")

    @extend_schema(request=WebhookEndpointCreateSerializer, responses={201: WebhookEndpointSerializer})
    def create(self, request):
        """Register a URL for some events (none: all) with a fresh signing secret."""
        data = _validated(WebhookEndpointCreateSerializer, request.data)
        endpoint = webhook_endpoint_create(owner=request.user, url=data["url"], events=data["events"])
        return Response(self.get_serializer(endpoint).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        webhook_endpoint_delete(endpoint=instance)

    @extend_schema(responses={200: WebhookDeliverySerializer(many=True)})
    @action(detail=True, methods=["get"])
    def deliveries(self, request, pk=None):
        """The endpoint's delivery log, newest first: each message's status and every attempt's outcome."""
        endpoint = self.get_object()
        page = self.paginate_queryset(endpoint.deliveries.order_by("-created_at", "-id"))
        return self.get_paginated_response(WebhookDeliverySerializer(page, many=True).data)


class WebhookDeliveryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Deliveries to the caller's endpoints; a given-up one can be sent again."""

    model = WebhookDelivery
    serializer_class = WebhookDeliverySerializer

    def scoped_queryset(self):
        return WebhookDelivery.objects.filter(endpoint__owner=self.request.user).order_by("-created_at", "-id")

    @extend_schema(request=None, responses={202: WebhookDeliverySerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def redeliver(self, request, pk=None):
        """Send a given-up delivery again (409 while it is still pending or once delivered)."""
        delivery = webhook_redeliver(delivery=self.get_object())
        return Response(WebhookDeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)

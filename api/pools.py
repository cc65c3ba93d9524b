"""Image pools, gallery enlargements and coarse captions (requesters): thin callers of annotator services."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.core.errors import ApplicationError
from annotator.datasets.selectors.access import can_manage_dataset, datasets_visible_to
from annotator.finegrained.selectors.access import can_manage_enlargement, enlargements_visible_to, pools_visible_to
from annotator.models import GalleryEnlargement, ImagePool
from api.permissions import REQUESTER
from api.schema import errors
from api.serializers import MAX_ID
from api.views import ScopedViewSet, _validated


class PoolSerializer(serializers.ModelSerializer):
    class Meta:
        model = ImagePool
        fields = ["id", "dataset", "name", "status", "images_total", "images_done", "report", "created_at"]
        read_only_fields = fields


class PoolUploadSerializer(serializers.Serializer):
    dataset = serializers.IntegerField(min_value=1)
    name = serializers.CharField(max_length=200)
    images = serializers.FileField(help_text="A zip of images (no captions).")


class EnlargementSerializer(serializers.ModelSerializer):
    class Meta:
        model = GalleryEnlargement
        fields = [
            "id",
            "pool",
            "dataset",
            "status",
            "image_annotator",
            "caption_annotator",
            "k_image",
            "k_caption",
            "keep",
            "proposal",
            "error",
            "verification",
            "created_at",
            "added_at",
        ]
        read_only_fields = fields


class EnlargeSerializer(serializers.Serializer):
    image_annotator = serializers.CharField(max_length=100, default="visual", allow_blank=True)
    caption_annotator = serializers.CharField(max_length=100, default="", allow_blank=True)
    k_image = serializers.IntegerField(min_value=0, max_value=1000, default=20)
    k_caption = serializers.IntegerField(min_value=0, max_value=1000, default=20)
    keep = serializers.IntegerField(min_value=1, max_value=1000, default=9)


def _managed_dataset(user, dataset_id: int):
    """The dataset if `user` may manage it: 404 when they may not see it, 403 when they only see it."""
    dataset = datasets_visible_to(user).filter(pk=dataset_id).first()
    if dataset is None:
        raise ApplicationError("No such dataset.", status=404)
    if not can_manage_dataset(user, dataset):
        raise ApplicationError("Only the requester who owns this dataset can change its pools.", status=403)
    return dataset


class ImagePoolViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Outside image pools of the caller's datasets; upload one (a zip), then enlarge the gallery from it."""

    model = ImagePool
    serializer_class = PoolSerializer
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    def scoped_queryset(self):
        return pools_visible_to(self.request.user).order_by("id")

    @extend_schema(
        request={"multipart/form-data": PoolUploadSerializer},
        responses={202: PoolSerializer, **errors(400, 403, 404, 409, 413, 415)},
    )
    def create(self, request):
        """Queue the import of a zip of images as a pool of a dataset you own. 202 at once; GET the pool
        for its progress and `report` (imported, duplicates of test images, offenders)."""
        from annotator.finegrained.services.pools.imports import pool_upload

        data = _validated(PoolUploadSerializer, request.data)
        dataset = _managed_dataset(request.user, data["dataset"])
        pool = pool_upload(dataset=dataset, name=data["name"], images=data["images"], user=request.user)
        return Response(PoolSerializer(pool).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=EnlargeSerializer, responses={202: EnlargementSerializer, **errors(400, 403, 404, 409)})
    @action(detail=True, methods=["post"])
    def enlarge(self, request, pk=None):
        """Queue the scoring of this pool against its dataset's test images; the proposal comes back on the
        enlargement (`status` proposed) and is added only by its `add` action."""
        from annotator.finegrained.services.pools.enlargement import enlargement_request

        pool = self.get_object()
        _managed_dataset(request.user, pool.dataset_id)
        data = _validated(EnlargeSerializer, request.data)
        enlargement = enlargement_request(pool=pool, user=request.user, **data)
        return Response(EnlargementSerializer(enlargement).data, status=status.HTTP_202_ACCEPTED)


class EnlargementViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Gallery enlargements: the proposal (counts and, per target, its pool images), the add step and the
    verification campaign."""

    model = GalleryEnlargement
    serializer_class = EnlargementSerializer

    def scoped_queryset(self):
        return enlargements_visible_to(self.request.user).order_by("id")

    def _managed(self):
        enlargement = self.get_object()
        if not can_manage_enlargement(self.request.user, enlargement):
            raise ApplicationError("Only the requester who owns this dataset can change it.", status=403)
        return enlargement

    @extend_schema(request=None, responses={200: EnlargementSerializer, **errors(403, 404, 409)})
    @action(detail=True, methods=["post"])
    def add(self, request, pk=None):
        """Add the proposed pool images to the dataset's gallery (idempotent)."""
        from annotator.finegrained.services.pools.enlargement import enlargement_add

        return Response(EnlargementSerializer(enlargement_add(enlargement=self._managed())).data)

    @extend_schema(
        request=None,
        responses={
            201: inline_serializer(
                "VerificationCampaign", {"campaign": serializers.IntegerField(), "name": serializers.CharField()}
            ),
            **errors(403, 404, 409),
        },
    )
    @action(detail=True, methods=["post"])
    def verify(self, request, pk=None):
        """Create the draft campaign that checks every (caption, added image) pair; build and launch it as
        any other campaign."""
        from annotator.finegrained.services.pools.verification import (
            enlargement_verification_create,
        )

        campaign = enlargement_verification_create(enlargement=self._managed(), owner=request.user)
        return Response({"campaign": campaign.pk, "name": campaign.name}, status=status.HTTP_201_CREATED)


class CoarseCaptionsView(APIView):
    """The dataset's coarse captions (its own image not ranked first) with the images they confuse."""

    permission_classes = ScopedViewSet.permission_classes
    roles = REQUESTER
    action_roles: dict = {}

    @extend_schema(
        parameters=[OpenApiParameter("dataset_id", int, OpenApiParameter.PATH)],
        responses={
            200: inline_serializer(
                "CoarseCaptionPage",
                {
                    "count": serializers.IntegerField(),
                    "results": serializers.ListField(child=serializers.DictField()),
                },
            ),
            **errors(400, 403, 404),
        },
    )
    def get(self, request, dataset_id: int):
        from annotator.finegrained.selectors.coarse import coarse_captions

        if not 0 < dataset_id <= MAX_ID:
            raise ApplicationError(f"No such dataset: {dataset_id} is not an id.", status=404)
        dataset = datasets_visible_to(request.user).filter(pk=dataset_id).first()
        if dataset is None:
            raise ApplicationError("No such dataset.", status=404)
        rule = request.query_params.get("rule", "majority")
        try:
            within = int(request.query_params.get("within", "1"))
            limit = int(request.query_params.get("limit", "100"))
            offset = int(request.query_params.get("offset", "0"))
        except ValueError as exc:
            raise ApplicationError("within, limit and offset are whole numbers.") from exc
        if not 1 <= limit <= 1000 or offset < 0:
            raise ApplicationError("limit is 1 to 1000 and offset 0 or more.")
        found = coarse_captions(dataset, rule=rule, within=within)
        return Response(
            {"count": len(found), "results": [c.as_dict() for c in found[offset : offset + limit]]},
        )

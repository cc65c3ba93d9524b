"""/api/v1/benchmarks/: the renovated benchmark (enlarged gallery, refined captions, verified labels) as a
label set and as files, and its old-versus-new comparison. Reading is for requesters and researchers who
may read the set; exporting one is for the requester who manages the dataset."""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from annotator.core.errors import ApplicationError
from annotator.datasets.selectors.access import datasets_managed_by
from annotator.finegrained.services.refinement.benchmark import (
    benchmark_csv_chunks,
    benchmark_export,
    benchmark_json_chunks,
)
from annotator.finegrained.services.refinement.compare import benchmark_compare
from annotator.labels.selectors.access import label_sets_visible_to
from annotator.models import LabelSet, RunStatus
from annotator.ranking.selectors.access import runs_visible_to
from api.labelsets import LabelSetSerializer
from api.permissions import READERS, REQUESTER
from api.schema import errors
from api.serializers import id_field
from api.views import ScopedViewSet, _validated


class BenchmarkExportSerializer(serializers.Serializer):
    dataset = id_field()
    name = serializers.CharField(max_length=100, default="renovated")
    verified = serializers.ListField(
        child=id_field(),
        required=False,
        max_length=16,
        help_text="Label sets whose judged pairs join the benchmark; default: each gallery enlargement's "
        "verification campaign.",
    )


class BenchmarkFileSerializer(serializers.Serializer):
    file_format = serializers.ChoiceField(choices=["json", "csv"], default="json")


class BenchmarkViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Renovated benchmarks: list, look up, export one, download it (JSON or CSV), compare models."""

    model = LabelSet
    serializer_class = LabelSetSerializer
    roles = READERS
    action_roles = {"create": REQUESTER}

    def scoped_queryset(self):
        return label_sets_visible_to(self.request.user).filter(report__renovated_benchmark=True).order_by("id")

    @extend_schema(request=BenchmarkExportSerializer, responses={201: LabelSetSerializer, **errors(404, 409)})
    def create(self, request):
        """Export the dataset's renovated benchmark as the next version of label set `name`."""
        data = _validated(BenchmarkExportSerializer, request.data)
        dataset = datasets_managed_by(request.user).filter(pk=data["dataset"]).first()
        if dataset is None:
            raise ApplicationError(f"No dataset {data['dataset']} is yours to export.", status=404)
        verified = None
        if "verified" in data:
            readable = label_sets_visible_to(request.user).filter(pk__in=data["verified"])
            verified = list(readable)
            if len(verified) != len(set(data["verified"])):
                raise ApplicationError("Some verified label sets are not visible to you.", status=404)
        label_set = benchmark_export(dataset=dataset, user=request.user, name=data["name"], verified=verified)
        return Response(self.get_serializer(label_set).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[BenchmarkFileSerializer],
        responses={(200, "application/json"): OpenApiTypes.OBJECT, (200, "text/csv"): OpenApiTypes.STR},
    )
    @action(detail=True, methods=["get"])
    def file(self, request, pk=None):
        """The benchmark as one JSON document (images, captions with their refined text and version, pairs)
        or as CSV (one row per judged pair), streamed."""
        label_set = self.get_object()
        fmt = _validated(BenchmarkFileSerializer, request.query_params)["file_format"]
        if fmt == "json":
            response = StreamingHttpResponse(
                benchmark_json_chunks(label_set=label_set), content_type="application/json"
            )
        else:
            response = StreamingHttpResponse(benchmark_csv_chunks(label_set=label_set), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="benchmark-{label_set.pk}-v{label_set.version}.{fmt}"'
        return response

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def compare(self, request, pk=None):
        """Each finished ranking run on the dataset: R@1/5/10, R-Precision and mAP@R on the old benchmark and
        on this one, and the change (MSCOCO-FG Tables 4-6)."""
        label_set = self.get_object()
        runs = (
            runs_visible_to(request.user)
            .filter(dataset_id=label_set.dataset_id, status=RunStatus.SUCCEEDED)
            .select_related("annotator")
            .order_by("annotator__name", "pk")
        )
        return Response(benchmark_compare(new=label_set, runs=list(runs)))

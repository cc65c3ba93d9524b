"""/api/v1/labelsets/: label sets for requesters and researchers (serializers and the viewset).

Every action is open to requesters and researchers for the sets they may read (public ones, their own,
those of campaigns they may read, those on datasets they own); sending unjudged pairs to the crowd
makes a campaign, so it is a requester's. Sets outside the caller's scope are 404s.
"""

from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from annotator.core.errors import ApplicationError
from annotator.labels.selectors.access import label_sets_visible_to
from annotator.labels.selectors.labels import campaign_get_readable
from annotator.labels.selectors.labelsets import (
    labelset_dataset_usable,
    labelset_get_readable,
    labelset_operands,
)
from annotator.labels.services.labelsets.builds import (
    labelset_derive,
    labelset_from_campaign,
    labelset_from_original,
)
from annotator.labels.services.labelsets.exports import (
    FORMATS,
    export_file_name,
    labelset_export_chunks,
)
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.labels.services.labelsets.readers import rankings_read
from annotator.models import (
    AggregationMethod,
    ExportVariant,
    LabelSet,
    LabelSetFormat,
    LabelSetKind,
    LabelSetOperation,
    QueryRule,
    RankingRun,
)
from annotator.research.selectors.labelset_analyses import (
    labelset_bias,
    labelset_compare,
    labelset_judged_at_k,
)
from annotator.research.services.labelset_evaluation import labelset_evaluate
from annotator.research.services.uploaded_rankings import (
    labelset_merge_campaign,
    labelset_unjudged_campaign,
    ranking_run_upload,
)
from api.permissions import READERS, REQUESTER
from api.schema import errors
from api.serializers import CampaignSerializer, RankingRunSerializer, id_field
from api.views import ScopedViewSet, _validated

MAX_UNJUDGED_SHOWN = 100
EXPORT_CONTENT_TYPES = {
    "eccv_json": "application/json",
    "eccv_split": "application/json",
    "csv": "text/csv",
    "jsonl": "application/x-ndjson",
}

# --- output ----------------------------------------------------------------------------------------------


class LabelSetSerializer(serializers.ModelSerializer):
    label = serializers.CharField(read_only=True)
    url = serializers.SerializerMethodField()
    dataset_name = serializers.CharField(source="dataset.name", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, allow_null=True, default=None)
    operands = serializers.SerializerMethodField()

    class Meta:
        model = LabelSet
        fields = [
            "id",
            "url",
            "label",
            "name",
            "version",
            "parent",
            "dataset",
            "dataset_name",
            "kind",
            "description",
            "public",
            "created_by",
            "created_at",
            "campaign",
            "method",
            "variant",
            "source_format",
            "source_files",
            "threshold",
            "operation",
            "query_rule",
            "operands",
            "annotators",
            "stats",
            "report",
        ]
        read_only_fields = fields

    def get_url(self, label_set) -> str:
        url = reverse("api-labelset-detail", args=[label_set.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request else url

    def get_operands(self, label_set) -> list[int]:
        if label_set.kind != LabelSetKind.DERIVED:
            return []
        return [operand.pk for operand in labelset_operands(label_set=label_set)]


# --- input -----------------------------------------------------------------------------------------------


class LabelSetFilterSerializer(serializers.Serializer):
    dataset = id_field(required=False)
    name = serializers.CharField(max_length=100, required=False)
    kind = serializers.ChoiceField(choices=LabelSetKind.choices, required=False)


class DeriveSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    operation = serializers.ChoiceField(choices=LabelSetOperation.choices)
    operands = serializers.ListField(child=id_field(), min_length=2, max_length=8)
    query_rule = serializers.ChoiceField(
        choices=QueryRule.choices,
        required=False,
        help_text="Default: all (union), common (intersection), first (difference).",
    )
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    public = serializers.BooleanField(default=False)


class ImportSerializer(serializers.Serializer):
    dataset = id_field()
    name = serializers.CharField(max_length=100)
    format = serializers.ChoiceField(
        choices=LabelSetFormat.choices, required=False, help_text="Detected from the file names when absent."
    )
    files = serializers.ListField(
        child=serializers.FileField(),
        min_length=1,
        max_length=2,
        help_text="One file; for eccv_split the two released files (or one of them), named as released.",
    )
    threshold = serializers.FloatField(min_value=0, max_value=5, required=False, help_text="CxC files: positive at >=.")
    annotators = serializers.CharField(
        max_length=1000,
        required=False,
        allow_blank=True,
        default="",
        help_text="Comma-separated names of the models that proposed the file's candidates.",
    )
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    public = serializers.BooleanField(default=False)


class FromCampaignSerializer(serializers.Serializer):
    campaign = id_field()
    method = serializers.ChoiceField(choices=AggregationMethod.choices, required=False)
    variant = serializers.ChoiceField(choices=ExportVariant.choices, default=ExportVariant.LENIENT)
    name = serializers.CharField(max_length=100, required=False)
    public = serializers.BooleanField(default=False)


class FromOriginalSerializer(serializers.Serializer):
    dataset = id_field()
    name = serializers.CharField(max_length=100, default="original")
    public = serializers.BooleanField(default=False)


class ExportQuerySerializer(serializers.Serializer):
    # Not `format`: DRF reads ?format= to choose a renderer.
    file_format = serializers.ChoiceField(choices=FORMATS, default="eccv_json")
    direction = serializers.ChoiceField(choices=["i2t", "t2i"], required=False, help_text="eccv_split only.")


class CompareQuerySerializer(serializers.Serializer):
    sets = serializers.CharField(max_length=200, help_text="Comma-separated label set ids (1 to 8).")
    queries_of = id_field(required=False, help_text="Count positives over this set's queries (default: the first).")
    baseline = id_field(
        required=False, help_text="Ratios relative to this set (default: an original set, else the first)."
    )

    def validate_sets(self, value) -> list[int]:
        parts = [part.strip() for part in value.split(",") if part.strip()]
        if not parts or not all(part.isdigit() and 0 < int(part) < 2**63 for part in parts):
            raise serializers.ValidationError("Give label set ids separated by commas, e.g. 3,4,5.")
        ids = list(dict.fromkeys(int(part) for part in parts))
        if len(ids) > 8:
            raise serializers.ValidationError("Compare at most 8 sets.")
        return ids


class BiasQuerySerializer(serializers.Serializer):
    k = serializers.IntegerField(min_value=1, max_value=100, default=5)


class RankingsSerializer(serializers.Serializer):
    rankings_file = serializers.FileField(
        required=False, help_text='A JSON file {"i2t": {image id: [caption ids, best first]}, "t2i": {...}}.'
    )
    rankings = serializers.JSONField(required=False, help_text="The same object inline (JSON requests).")

    def validate(self, attrs):
        if ("rankings_file" in attrs) == ("rankings" in attrs):
            raise serializers.ValidationError("Send the rankings either as rankings_file or as rankings, once.")
        return attrs


class EvaluateSerializer(RankingsSerializer):
    model_name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")


class JudgedSerializer(RankingsSerializer):
    k = serializers.IntegerField(min_value=1, max_value=100, default=10)


class UploadRankingsSerializer(RankingsSerializer):
    model_name = serializers.CharField(max_length=100)
    top_k = serializers.IntegerField(min_value=1, max_value=1000, default=100)
    k = serializers.IntegerField(min_value=1, max_value=100, default=10, help_text="Depth of the judged@k report.")


class UnjudgedCampaignSerializer(serializers.Serializer):
    run = id_field()
    k = serializers.IntegerField(min_value=1, max_value=100, default=10)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    redundancy = serializers.IntegerField(min_value=1, max_value=9, required=False)
    reward_cents = serializers.IntegerField(min_value=0, max_value=100_000, required=False)


class MergeCampaignSerializer(serializers.Serializer):
    campaign = id_field()
    method = serializers.ChoiceField(choices=AggregationMethod.choices, required=False)
    variant = serializers.ChoiceField(choices=ExportVariant.choices, default=ExportVariant.LENIENT)


_SCORES = inline_serializer(
    "LabelSetEvaluation",
    {
        "label_set": serializers.DictField(),
        "model": serializers.CharField(),
        "scores": serializers.DictField(help_text="{direction: {r1, r5, r10, r_precision, map_at_r}}"),
        "counts": serializers.DictField(),
        "warnings": serializers.ListField(child=serializers.CharField()),
    },
)


def _rankings(data: dict) -> dict:
    if "rankings_file" in data:
        return rankings_read(raw=data["rankings_file"].read())
    if not isinstance(data["rankings"], dict):
        raise ApplicationError('"rankings" must be a JSON object {"i2t": {...}, "t2i": {...}}.')
    return rankings_read(raw=data["rankings"], what="rankings")


def _judged_summary(judged: dict) -> dict:
    """judged@k without the full list of unjudged pairs (the first ones as examples)."""
    return {
        direction: {**{key: value for key, value in outcome.items() if key != "unjudged"}}
        | {"unjudged_examples": outcome["unjudged"][:MAX_UNJUDGED_SHOWN]}
        for direction, outcome in judged.items()
    }


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("dataset", int, description="Only sets on this dataset."),
            OpenApiParameter("name", str, description="Only versions of this name."),
            OpenApiParameter("kind", str, enum=list(LabelSetKind.values)),
        ]
    )
)
class LabelSetViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Label sets: list, look up, import, make from a campaign or the original pairs, derive, export,
    compare, evaluate a model, judged@k, the machine-annotator bias, bring your own ranking."""

    model = LabelSet
    serializer_class = LabelSetSerializer
    roles = READERS
    action_roles = {"unjudged_campaign": REQUESTER}
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def scoped_queryset(self):
        sets = label_sets_visible_to(self.request.user).order_by("id")
        if self.action == "list":
            filters = _validated(LabelSetFilterSerializer, self.request.query_params)
            if "dataset" in filters:
                sets = sets.filter(dataset_id=filters["dataset"])
            if "name" in filters:
                sets = sets.filter(name=filters["name"])
            if "kind" in filters:
                sets = sets.filter(kind=filters["kind"])
        return sets

    def _created(self, label_set) -> Response:
        return Response(self.get_serializer(label_set).data, status=status.HTTP_201_CREATED)

    def _readable(self, label_set_id) -> LabelSet:
        return labelset_get_readable(user=self.request.user, label_set_id=label_set_id)

    @extend_schema(request=DeriveSerializer, responses={201: LabelSetSerializer, **errors(404)})
    def create(self, request):
        """A derived set: the union, intersection or difference of 2 to 8 sets of one dataset."""
        data = _validated(DeriveSerializer, request.data)
        operands = [self._readable(pk) for pk in data["operands"]]
        label_set = labelset_derive(
            operands=operands,
            operation=data["operation"],
            name=data["name"],
            query_rule=data.get("query_rule"),
            user=request.user,
            description=data["description"],
            public=data["public"],
        )
        return self._created(label_set)

    @extend_schema(
        request={"multipart/form-data": ImportSerializer}, responses={201: LabelSetSerializer, **errors(404)}
    )
    @action(detail=False, methods=["post"], url_path="import", parser_classes=[MultiPartParser, FormParser])
    def import_file(self, request):
        """Import a released label file as a new set (or the next version of a set of that name).

        ECCV Caption in its two released files (`eccv_image_to_caption.json`, `eccv_caption_to_image.json`,
        format `eccv_split`) or merged (`eccv_json`), CxC SITS/STS/SIS CSV (`threshold` overrides 3 / 3 /
        2.5), or JSONL. The set's `report` lists unknown ids and the query coverage; a file whose ids
        match nothing in the dataset is a 400.
        """
        data = _validated(ImportSerializer, request.data)
        dataset = labelset_dataset_usable(user=request.user, dataset_id=data["dataset"])
        label_set = labelset_import(
            dataset=dataset,
            name=data["name"],
            files=[(upload.name, upload.read()) for upload in data["files"]],
            fmt=data.get("format"),
            threshold=data.get("threshold"),
            user=request.user,
            description=data["description"],
            annotators=data["annotators"].split(","),
            public=data["public"],
        )
        return self._created(label_set)

    @extend_schema(request=FromCampaignSerializer, responses={201: LabelSetSerializer, **errors(404, 409)})
    @action(detail=False, methods=["post"], url_path="from-campaign")
    def from_campaign(self, request):
        """A crowd-verified set: a campaign's labels of one aggregation method, lenient or strict."""
        data = _validated(FromCampaignSerializer, request.data)
        campaign = campaign_get_readable(user=request.user, campaign_id=data["campaign"])
        label_set = labelset_from_campaign(
            campaign=campaign,
            user=request.user,
            method=data.get("method"),
            variant=data["variant"],
            name=data.get("name"),
            public=data["public"],
        )
        return self._created(label_set)

    @extend_schema(request=FromOriginalSerializer, responses={201: LabelSetSerializer, **errors(404, 409)})
    @action(detail=False, methods=["post"], url_path="from-original")
    def from_original(self, request):
        """The dataset's original pairs as a set (every image and every caption a judged query)."""
        data = _validated(FromOriginalSerializer, request.data)
        dataset = labelset_dataset_usable(user=request.user, dataset_id=data["dataset"])
        return self._created(
            labelset_from_original(dataset=dataset, user=request.user, name=data["name"], public=data["public"])
        )

    @extend_schema(
        parameters=[ExportQuerySerializer],
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
        },
    )
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        """The set as ECCV JSON (merged, or one released file with `direction`), CSV or JSONL, streamed."""
        label_set = self.get_object()
        query = _validated(ExportQuerySerializer, request.query_params)
        fmt = query["file_format"]
        chunks = labelset_export_chunks(label_set=label_set, fmt=fmt, direction=query.get("direction"))
        response = StreamingHttpResponse(chunks, content_type=EXPORT_CONTENT_TYPES[fmt])
        name = export_file_name(label_set=label_set, fmt=fmt, direction=query.get("direction"))
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response

    @extend_schema(parameters=[CompareQuerySerializer], responses={200: OpenApiTypes.OBJECT, **errors(404)})
    @action(detail=False, methods=["get"])
    def compare(self, request):
        """ECCV Caption Tables 2 and 3 for 1 to 8 sets of one dataset: positives per query with ratios,
        precision and recall of every set against every other, overlaps."""
        query = _validated(CompareQuerySerializer, request.query_params)
        sets = [self._readable(pk) for pk in query["sets"]]
        queries_of = self._readable(query["queries_of"]) if "queries_of" in query else None
        baseline = self._readable(query["baseline"]) if "baseline" in query else None
        return Response(labelset_compare(label_sets=sets, queries_of=queries_of, baseline=baseline))

    @extend_schema(parameters=[BiasQuerySerializer], responses={200: OpenApiTypes.OBJECT, **errors(409)})
    @action(detail=True, methods=["get"])
    def bias(self, request, pk=None):
        """Machine-annotator bias of a crowd-verified set (ECCV Caption App. E.3); 409 for other kinds."""
        query = _validated(BiasQuerySerializer, request.query_params)
        return Response(labelset_bias(label_set=self.get_object(), k=query["k"]))

    @extend_schema(request=EvaluateSerializer, responses=_SCORES)
    @action(detail=True, methods=["post"])
    def evaluate(self, request, pk=None):
        """R@1/5/10, R-Precision and mAP@R of a model's rankings over exactly this set's queries, with
        warnings (few queries covered, no id matched, the model built the set). Nothing is stored."""
        data = _validated(EvaluateSerializer, request.data)
        return Response(
            labelset_evaluate(label_set=self.get_object(), rankings=_rankings(data), model_name=data["model_name"])
        )

    @extend_schema(request=JudgedSerializer, responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["post"])
    def judged(self, request, pk=None):
        """judged@k of a model's rankings: how much of its top k this set has labelled (with examples of
        the unlabelled pairs)."""
        data = _validated(JudgedSerializer, request.data)
        judged = labelset_judged_at_k(label_set=self.get_object(), rankings=_rankings(data), k=data["k"])
        return Response(_judged_summary(judged))

    @extend_schema(
        request=UploadRankingsSerializer,
        responses={
            201: inline_serializer(
                "LabelSetRankingUpload",
                {
                    "run": RankingRunSerializer(),
                    "evaluation": serializers.DictField(),
                    "judged": serializers.DictField(),
                },
            )
        },
    )
    @action(detail=True, methods=["post"])
    def rankings(self, request, pk=None):
        """Bring your own ranking: store a model's rankings as a ranking run on the set's dataset, and
        answer its scores on this set and its judged@k. The run can then go to the crowd
        (`unjudged-campaign/`, requesters)."""
        label_set = self.get_object()
        data = _validated(UploadRankingsSerializer, request.data)
        rankings = _rankings(data)
        run = ranking_run_upload(
            dataset=label_set.dataset,
            name=data["model_name"],
            rankings=rankings,
            user=request.user,
            top_k=data["top_k"],
        )
        body = {
            "run": RankingRunSerializer(run).data,
            "evaluation": labelset_evaluate(label_set=label_set, rankings=rankings, model_name=data["model_name"]),
            "judged": _judged_summary(labelset_judged_at_k(label_set=label_set, rankings=rankings, k=data["k"])),
        }
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=UnjudgedCampaignSerializer,
        responses={201: CampaignSerializer, **errors(404, 409)},
    )
    @action(detail=True, methods=["post"], url_path="unjudged-campaign")
    def unjudged_campaign(self, request, pk=None):
        """A draft campaign over the pairs of a run's top k that this set has not judged (requesters)."""
        from annotator.datasets.selectors.datasets import dataset_get_visible

        label_set = self.get_object()
        data = _validated(UnjudgedCampaignSerializer, request.data)
        dataset_get_visible(user=request.user, dataset_id=label_set.dataset_id)
        run = RankingRun.objects.filter(pk=data.pop("run"), dataset_id=label_set.dataset_id).first()
        if run is None:
            raise ApplicationError("No such ranking run on this set's dataset.", status=404)
        campaign = labelset_unjudged_campaign(label_set=label_set, run=run, owner=request.user, **data)
        return Response(CampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MergeCampaignSerializer, responses={201: LabelSetSerializer, **errors(404, 409)})
    @action(detail=True, methods=["post"], url_path="merge-campaign")
    def merge_campaign(self, request, pk=None):
        """The next version of this set with a campaign's verified labels of its queries merged in."""
        label_set = self.get_object()
        data = _validated(MergeCampaignSerializer, request.data)
        campaign = campaign_get_readable(user=request.user, campaign_id=data["campaign"])
        merged = labelset_merge_campaign(
            label_set=label_set,
            campaign=campaign,
            user=request.user,
            method=data.get("method"),
            variant=data["variant"],
        )
        return self._created(merged)

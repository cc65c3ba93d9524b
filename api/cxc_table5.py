"""POST /api/v1/labelsets/<id>/cxc-table5/: Crisscrossed Captions' Table 5 of a model's similarity scores.

The scores of the set's rated pairs are uploaded (one CSV per task: `sts_scores`, `sis_scores`,
`sits_scores`, each with the pair's two CxC id columns and `score`) or computed by one of Vericap's machine
annotators (`annotator`: a kind such as `minilm_pivot` or `tfidf_pivot`; a `gpu` worker embeds the rated
items in the background, so the answer is the queued evaluation). Either way they are stored as an
evaluation of the label set, scored with CxC's bootstrap Spearman's r; poll /api/v1/evaluations/<id>/ until
`status` is `succeeded` (or `failed`, with `error`) and read `results.cxc` (while an annotator computes,
`results.progress` says when it was queued and started). The set's leaderboard shows it as the
`cxc_spearman` column.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.core.errors import ApplicationError
from annotator.labels.selectors.labelsets import labelset_get_readable
from annotator.research.services.cxc_table5 import (
    MAX_SAMPLES,
    cxc_annotator_evaluation_request,
    cxc_annotator_kind_check,
    cxc_evaluation_request,
    cxc_scores_read,
)
from api import serializers as s
from api.permissions import READERS, RolePermission
from api.schema import errors

SCORE_FIELDS = ("sts_scores", "sis_scores", "sits_scores")


class CxcTable5RequestSerializer(serializers.Serializer):
    name = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        help_text="The model's name on the leaderboard (required with uploaded scores; with `annotator`: its kind).",
    )
    sts_scores = serializers.FileField(required=False, help_text="CSV caption1,caption2,score")
    sis_scores = serializers.FileField(required=False, help_text="CSV image1,image2,score")
    sits_scores = serializers.FileField(required=False, help_text="CSV caption,image,score")
    annotator = serializers.CharField(
        required=False,
        help_text="Instead of uploaded scores: the machine-annotator kind that computes them (minilm_pivot, "
        "tfidf_pivot, visual, an installed plugin's kind).",
    )
    samples = serializers.IntegerField(
        min_value=1, max_value=MAX_SAMPLES, required=False, help_text="Bootstrap samples (CxC: 1,000)."
    )
    seed = serializers.IntegerField(min_value=0, default=0, help_text="The bootstrap's seed.")

    def validate_annotator(self, value):
        try:
            return cxc_annotator_kind_check(value)
        except ApplicationError as error:
            raise serializers.ValidationError(error.message) from None

    def validate(self, attrs):
        uploaded = any(field in attrs for field in SCORE_FIELDS)
        if "annotator" in attrs and uploaded:
            raise serializers.ValidationError("Upload the scores or name an annotator to compute them, not both.")
        if "annotator" not in attrs and not uploaded:
            raise serializers.ValidationError(
                "Upload at least one of sts_scores, sis_scores, sits_scores, or name an annotator."
            )
        return attrs


class CxcTable5View(APIView):
    permission_classes = [IsAuthenticated, RolePermission]
    roles = READERS
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request=CxcTable5RequestSerializer,
        responses={
            201: s.EvaluationSerializer,
            200: s.EvaluationSerializer,
            **errors(404),
        },
        description=__doc__,
    )
    def post(self, request, label_set_id: int):
        label_set = labelset_get_readable(user=request.user, label_set_id=label_set_id)
        serializer = CxcTable5RequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if "annotator" in data:
            evaluation, created = cxc_annotator_evaluation_request(
                label_set=label_set,
                user=request.user,
                kind=data["annotator"],
                name=data["name"],
                samples=data.get("samples"),
                seed=data["seed"],
            )
        else:
            scores = cxc_scores_read(
                [(data[field].name or field, data[field].read()) for field in SCORE_FIELDS if field in data]
            )
            evaluation, created = cxc_evaluation_request(
                label_set=label_set,
                user=request.user,
                name=data["name"],
                scores=scores,
                samples=data.get("samples"),
                seed=data["seed"],
            )
        return Response(
            s.EvaluationSerializer(evaluation).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )

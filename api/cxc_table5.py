"""POST /api/v1/labelsets/<id>/cxc-table5/: Crisscrossed Captions' Table 5 of a model's similarity scores.

The scores of the set's rated pairs (one CSV per task: `sts_scores`, `sis_scores`, `sits_scores`, each with
the pair's two CxC id columns and `score`) are stored as an evaluation of the label set, scored by a worker
with CxC's bootstrap Spearman's r; poll /api/v1/evaluations/<id>/ and read `results.cxc`. The set's
leaderboard shows it as the `cxc_spearman` column.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.labels.selectors.labelsets import labelset_get_readable
from annotator.research.services.cxc_table5 import (
    MAX_SAMPLES,
    cxc_evaluation_request,
    cxc_scores_read,
)
from api import serializers as s
from api.permissions import READERS, RolePermission
from api.schema import errors

SCORE_FIELDS = ("sts_scores", "sis_scores", "sits_scores")


class CxcTable5RequestSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="The model's name on the leaderboard.")
    sts_scores = serializers.FileField(required=False, help_text="CSV caption1,caption2,score")
    sis_scores = serializers.FileField(required=False, help_text="CSV image1,image2,score")
    sits_scores = serializers.FileField(required=False, help_text="CSV caption,image,score")
    samples = serializers.IntegerField(
        min_value=1, max_value=MAX_SAMPLES, required=False, help_text="Bootstrap samples (CxC: 1,000)."
    )
    seed = serializers.IntegerField(min_value=0, default=0, help_text="The bootstrap's seed.")

    def validate(self, attrs):
        if not any(field in attrs for field in SCORE_FIELDS):
            raise serializers.ValidationError("Upload at least one of sts_scores, sis_scores, sits_scores.")
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

"""GET /api/v1/leaderboard/: the models evaluated on one campaign's labels, with intervals and Kendall's tau."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.labels.selectors.labels import campaign_get_readable, label_method_resolve
from annotator.labels.selectors.labelsets import labelset_get_readable
from annotator.research.selectors.leaderboard import leaderboard, leaderboard_json
from api import serializers as s
from api.permissions import READERS, RolePermission
from api.schema import errors


class LeaderboardView(APIView):
    """The board of a label set, or of a campaign's labels (method, variant), in one direction: rows
    sorted by `sort`, each metric's value with its 95% bootstrap interval, the bias flag, the tau matrix
    between the metrics' model orders, and the stability of the order across the dataset's other label
    sets."""

    permission_classes = [IsAuthenticated, RolePermission]
    roles = READERS

    @extend_schema(parameters=[s.LeaderboardQuerySerializer], responses={200: OpenApiTypes.OBJECT, **errors(404, 409)})
    def get(self, request):
        query = s.LeaderboardQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        if "label_set" in data:
            target = {"label_set": labelset_get_readable(user=request.user, label_set_id=data["label_set"])}
        else:
            campaign = campaign_get_readable(user=request.user, campaign_id=data["campaign"])
            method = label_method_resolve(campaign=campaign, method=data.get("method"))
            target = {"campaign": campaign, "method": method, "variant": data["variant"]}
        result = leaderboard(
            user=request.user,
            direction=data["direction"],
            sort=data.get("sort"),
            descending=None if "order" not in data else data["order"] == "desc",
            **target,
        )
        return Response(leaderboard_json(result))

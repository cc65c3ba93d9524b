"""Viewsets of /api/v1/: thin callers of services and selectors, each scoped to its caller.

Roles (Profile.role, staff act as requesters): requesters manage their own datasets, runs and campaigns
and review work on them; researchers read the labels and metrics of campaigns shared with them (owners
may too); workers see only their own assignments. Out-of-scope objects are 404s.
"""

import json

from django.http import FileResponse, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from annotator.campaigns.selectors.access import campaigns_managed_by, campaigns_visible_to
from annotator.campaigns.services.presets import preset_options
from annotator.campaigns.services.sharing import campaign_share
from annotator.core.errors import ApplicationError
from annotator.core.selectors.access import is_worker
from annotator.crowd.selectors.access import workers_known_to
from annotator.labels.selectors.access import exports_visible_to
from annotator.labels.selectors.labels import campaign_get_readable, label_counts, label_list
from annotator.labels.selectors.labelsets import labelset_get_readable
from annotator.labels.services.exports.jobs import export_create, export_file_name
from annotator.labels.services.labelsets.readers import rankings_read
from annotator.models import (
    Assignment,
    Campaign,
    Dataset,
    Evaluation,
    ExportJob,
    ExportStatus,
    ExternalDecision,
    Label,
    MachineAnnotator,
    RankingRun,
    Role,
    Worker,
)
from annotator.quality.selectors.standing import workers_with_standing
from annotator.ranking.selectors.access import can_manage_run, runs_visible_to
from annotator.research.selectors.access import evaluations_visible_to
from annotator.research.services.scorecards import evaluation_request
from api import serializers as s
from api.pagination import Pagination
from api.permissions import EVERYONE, READERS, REQUESTER, RolePermission
from api.schema import errors

LOCATION = OpenApiParameter(
    "Location", str, OpenApiParameter.HEADER, response=[201, 202], description="The URL of what was created."
)


def _validated(serializer_class, data, **kwargs) -> dict:
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class ScopedViewSet(viewsets.GenericViewSet):
    permission_classes = [IsAuthenticated, RolePermission]
    pagination_class = Pagination
    roles = REQUESTER
    action_roles: dict = {}
    model = None  # for the OpenAPI generator, which has no caller to scope to

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return self.model.objects.none()
        return self.scoped_queryset()

    def scoped_queryset(self):
        raise NotImplementedError

    def get_object(self):
        lookup = str(self.kwargs.get(self.lookup_url_kwarg or self.lookup_field, ""))
        if not (lookup.isascii() and lookup.isdigit()) or not 0 < int(lookup) <= s.MAX_ID:
            raise ApplicationError(f"No such object: {lookup[:40]!r} is not an id.", status=404)
        return super().get_object()


# --- datasets, annotators, ranking runs (requesters) -----------------------------------------------------


class DatasetViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """A requester's datasets (their own and unowned ones) and their import progress; import by upload."""

    model = Dataset

    serializer_class = s.DatasetSerializer
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    def scoped_queryset(self):
        from annotator.datasets.selectors.datasets import dataset_list_visible

        return dataset_list_visible(user=self.request.user).order_by("id")

    @extend_schema(
        request={"multipart/form-data": s.DatasetImportSerializer},
        responses={202: s.DatasetSerializer, **errors(409)},
        parameters=[LOCATION],
    )
    def create(self, request):
        """Queue an import into (or an addition to) the dataset `name`: a captions file and a zip of images.

        202 at once: the files are stored and a worker imports them. GET the dataset's `url` for its
        `status` (importing, then ready or failed), its progress, and `report` (every offender under
        `report.errors` when the import is refused). A missing file, a wrong suffix or a non-zip is a 400.
        """
        from annotator.datasets.services.uploads import dataset_upload

        data = _validated(s.DatasetImportSerializer, request.data)
        dataset = dataset_upload(
            name=data["name"],
            captions=data["captions"],
            images=data["images"],
            split_file=data.get("split_file"),
            split=data["split"] or None,
            owner=request.user,
        )
        body = s.DatasetSerializer(dataset, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(request=None, responses={202: s.DatasetSerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None):
        """Queue a failed import, or one that stopped making progress, again with the same uploaded files."""
        from annotator.datasets.services.uploads import dataset_import_retry

        dataset = dataset_import_retry(dataset=self.get_object())
        return Response(
            s.DatasetSerializer(dataset, context={"request": request}).data, status=status.HTTP_202_ACCEPTED
        )


class MachineAnnotatorViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Machine annotators (shared by all requesters): list, look up, register."""

    model = MachineAnnotator

    serializer_class = s.MachineAnnotatorSerializer

    def scoped_queryset(self):
        return MachineAnnotator.objects.order_by("id")

    @extend_schema(
        request=s.MachineAnnotatorCreateSerializer, responses={201: s.MachineAnnotatorSerializer, **errors(409)}
    )
    def create(self, request):
        from annotator.ranking.services.annotators import annotator_register

        data = _validated(s.MachineAnnotatorCreateSerializer, request.data)
        annotator = annotator_register(**data)
        return Response(s.MachineAnnotatorSerializer(annotator).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: s.AnnotatorKindSerializer(many=True)})
    @action(detail=False, methods=["get"], pagination_class=None)
    def kinds(self, request):
        """The kinds a ranking run can execute: the built-in ones, then each installed plugin's."""
        from annotator.ranking.services.kinds import CHECKPOINT_KINDS, kind_choices, plugin_kinds

        plugins = plugin_kinds()
        rows = [
            {"kind": kind, "label": label, "plugin": kind in plugins, "needs_checkpoint": kind in CHECKPOINT_KINDS}
            for kind, label in kind_choices()
        ]
        return Response(s.AnnotatorKindSerializer(rows, many=True).data)


class RankingRunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Ranking runs over the caller's datasets (annotator.ranking.selectors.access.runs_visible_to: a researcher's are
    those of shared campaigns' datasets): list and watch progress; requesters start and cancel."""

    model = RankingRun
    action_roles = {"list": READERS, "retrieve": READERS}

    serializer_class = s.RankingRunSerializer

    def scoped_queryset(self):
        return runs_visible_to(self.request.user).order_by("id")

    @extend_schema(
        request=s.RankingRunCreateSerializer,
        responses={202: s.RankingRunSerializer, **errors(404, 409)},
        parameters=[LOCATION],
    )
    def create(self, request):
        """Queue a ranking run (or answer the same run while one is queued or running).

        202 at once with the run `queued` and its `url` (also in Location); a worker ranks, or on the
        embedded default a thread of the server. GET the `url` for `status` and progress. A dataset that
        is not ready is a 409; an unknown dataset or annotator a 404.
        """
        from annotator.ranking.services.runs import ranking_run_start

        data = _validated(s.RankingRunCreateSerializer, request.data)
        dataset = _visible_dataset(request.user, data["dataset"])
        annotator = MachineAnnotator.objects.filter(pk=data["annotator"]).first()
        if annotator is None:
            raise ApplicationError(f"There is no machine annotator {data['annotator']}.", status=404)
        run = ranking_run_start(
            dataset=dataset, annotator=annotator, top_k=data["top_k"], created_by=request.user, in_background=True
        )
        body = s.RankingRunSerializer(run, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(
        request=s.RerankCreateSerializer,
        responses={202: s.RankingRunSerializer, **errors(404, 409)},
        parameters=[LOCATION],
    )
    @action(detail=True, methods=["post"])
    def rerank(self, request, pk=None):
        """Queue a re-ranking run: a cross_encoder or vlm_judge annotator re-scores this succeeded run's top K per
        query (i2t and t2i); the new run's `reranks` is this run. 202 with the new run and its `url` (Location). An
        annotator of another kind, or a K above the run's, is a 400; a run that has not succeeded a 409."""
        from annotator.ranking.services.reranking import rerank_run_start

        run = self.get_object()
        if not can_manage_run(request.user, run):
            raise ApplicationError("Only the requester who owns this dataset can re-rank its runs.", status=403)
        data = _validated(s.RerankCreateSerializer, request.data)
        annotator = MachineAnnotator.objects.filter(pk=data["annotator"]).first()
        if annotator is None:
            raise ApplicationError(f"There is no machine annotator {data['annotator']}.", status=404)
        rerank = rerank_run_start(
            source=run,
            annotator=annotator,
            top_k=data.get("top_k", run.top_k),
            created_by=request.user,
            in_background=True,
        )
        body = s.RankingRunSerializer(rerank, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(request=None, responses={200: s.RankingRunSerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        from annotator.ranking.services.runs import ranking_run_cancel

        run = self.get_object()
        if not can_manage_run(request.user, run):
            raise ApplicationError("Only the requester who owns this dataset can cancel its runs.", status=403)
        run = ranking_run_cancel(run=run)
        return Response(s.RankingRunSerializer(run).data)


# --- campaigns -------------------------------------------------------------------------------------------


class CampaignViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Requesters manage their own campaigns; researchers read the campaigns shared with them."""

    model = Campaign

    serializer_class = s.CampaignSerializer
    action_roles = {"list": READERS, "retrieve": READERS, "labels_summary": READERS}

    def scoped_queryset(self):
        user = self.request.user
        if self.action in ("list", "retrieve", "labels_summary"):
            campaigns = campaigns_visible_to(user)
        else:
            campaigns = campaigns_managed_by(user)
        return campaigns.prefetch_related("shared_with", "runs").order_by("id")

    @extend_schema(request=s.CampaignCreateSerializer, responses={201: s.CampaignSerializer, **errors(404)})
    def create(self, request):
        """A draft campaign over succeeded ranking runs of one of your datasets."""
        from annotator.campaigns.services.lifecycle import campaign_create

        data = dict(_validated(s.CampaignCreateSerializer, request.data))
        dataset = _visible_dataset(request.user, data.pop("dataset"))
        run_ids = data.pop("runs")
        runs = list(RankingRun.objects.filter(pk__in=run_ids, dataset=dataset))
        missing = sorted(set(run_ids) - {run.pk for run in runs})
        if missing:
            raise ApplicationError(f"Dataset {dataset.name} has no ranking runs {missing}.", extra={"runs": missing})
        preset = data.pop("preset", None)
        data = preset_options(preset=preset, options=data, given=set(data))
        campaign = campaign_create(owner=request.user, dataset=dataset, runs=runs, **data)
        return Response(s.CampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)

    def _transition(self, service_name: str):
        from annotator.campaigns.services import lifecycle as services

        campaign = getattr(services, service_name)(campaign=self.get_object())
        return Response(s.CampaignSerializer(campaign).data)

    @extend_schema(request=None, responses={202: s.CampaignSerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def build(self, request, pk=None):
        """Queue the build: pool the runs, choose gold, pack HITs (draft or built -> building -> built).

        202 at once with the campaign `building`; a worker builds it. GET the campaign for its `status`:
        `built`, or `draft` again with the reason in `build_error`. A campaign building already is a 409;
        a built one whose options and runs have not changed is returned as it is.
        """
        from annotator.campaigns.services.build import campaign_build_request

        campaign = campaign_build_request(campaign=self.get_object())
        return Response(s.CampaignSerializer(campaign).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=s.JudgeCreateSerializer,
        responses={202: s.RankingRunSerializer, **errors(404)},
        parameters=[LOCATION],
    )
    @action(detail=True, methods=["post"])
    def judge(self, request, pk=None):
        """Queue a judge run: a vlm_judge annotator scores every image-caption pair of this campaign (gold
        included); the Quality page then calibrates it on the gold answers. 202 with the run (`judges`)."""
        from annotator.quality.services.judging import judge_campaign_start

        campaign = self.get_object()
        data = _validated(s.JudgeCreateSerializer, request.data)
        annotator = MachineAnnotator.objects.filter(pk=data["annotator"]).first()
        if annotator is None:
            raise ApplicationError(f"There is no machine annotator {data['annotator']}.", status=404)
        run = judge_campaign_start(campaign=campaign, annotator=annotator, created_by=request.user, in_background=True)
        body = s.RankingRunSerializer(run, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    @extend_schema(request=None, responses={200: s.CampaignSerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def launch(self, request, pk=None):
        """built -> live: workers can take its HITs."""
        return self._transition("campaign_launch")

    @extend_schema(request=None, responses={200: s.CampaignSerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        """live -> paused: no new HITs are handed out."""
        return self._transition("campaign_pause")

    @extend_schema(request=None, responses={200: s.CampaignSerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """paused -> live."""
        return self._transition("campaign_resume")

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def statistics(self, request, pk=None):
        """Proposals, unique pairs, overlap between annotators, HITs, cost, duration and progress."""
        from annotator.campaigns.selectors.campaigns import campaign_statistics

        return Response(campaign_statistics(campaign=self.get_object()))

    @extend_schema(request=s.BonusCreateSerializer, responses={201: s.BonusSerializer, 200: s.BonusSerializer})
    @action(detail=True, methods=["post"])
    def bonuses(self, request, pk=None):
        """Give the worker of an approved assignment a bonus (amount in cents and a reason they see); on MTurk
        it is paid with SendBonus. A repeated idempotency_key for the same assignment returns the first bonus."""
        from annotator.crowd.services.bonuses import bonus_give
        from annotator.models import Assignment, Bonus

        campaign = self.get_object()
        data = _validated(s.BonusCreateSerializer, request.data)
        assignment = Assignment.objects.filter(pk=data["assignment"], hit__campaign=campaign).first()
        if assignment is None:
            raise ApplicationError(f"This campaign has no assignment {data['assignment']}.", status=404)
        known = Bonus.objects.filter(assignment=assignment, idempotency_key=data["idempotency_key"].strip()).exists()
        bonus = bonus_give(
            campaign=campaign,
            assignment=assignment,
            actor=request.user,
            **{k: data[k] for k in ("amount_cents", "reason", "idempotency_key")},
        )
        code = status.HTTP_200_OK if known else status.HTTP_201_CREATED
        return Response(s.BonusSerializer(bonus).data, status=code)

    @extend_schema(request=s.WorkerMessageCreateSerializer, responses={201: s.WorkerMessageSerializer})
    @action(detail=True, methods=["post"])
    def messages(self, request, pk=None):
        """Write to a worker who did work on this campaign (by pseudonym); on MTurk it goes by NotifyWorkers."""
        from annotator.crowd.services.bonuses import worker_message_send
        from annotator.models import Worker

        campaign = self.get_object()
        data = _validated(s.WorkerMessageCreateSerializer, request.data)
        worker = Worker.objects.filter(pseudonym=data["worker"]).first()
        if worker is None:
            raise ApplicationError(f"No worker is called {data['worker']}.", status=404)
        message = worker_message_send(
            campaign=campaign, worker=worker, subject=data["subject"], body=data["body"], actor=request.user
        )
        return Response(s.WorkerMessageSerializer(message).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=s.ShareSerializer, responses=s.CampaignSerializer)
    @action(detail=True, methods=["post"])
    def share(self, request, pk=None):
        """Set the researchers this campaign is shared with (replaces the list)."""
        data = _validated(s.ShareSerializer, request.data)
        campaign = campaign_share(campaign=self.get_object(), usernames=data["usernames"])
        return Response(s.CampaignSerializer(campaign).data)

    @extend_schema(request=s.CampaignPolicySerializer, responses=s.CampaignSerializer)
    @action(detail=True, methods=["patch"])
    def policy(self, request, pk=None):
        """Change the quality policy (gold tolerance, decisions, label model, machine prior, adaptive
        redundancy and its settle thresholds); it applies from now on."""
        from annotator.campaigns.services.policy import campaign_policy_update

        campaign = self.get_object()  # owners only: other callers get a 404
        data = _validated(s.CampaignPolicySerializer, request.data, partial=True)
        campaign = campaign_policy_update(campaign=campaign, actor=request.user, **data)
        return Response(s.CampaignSerializer(campaign).data)

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def agreement(self, request, pk=None):
        """Krippendorff's alpha (ordinal over the four answers, interval over 0-5) overall and per annotator
        and rank, and per-worker statistics (accuracy, speed, first-pass approval)."""
        from annotator.quality.selectors.agreement import (
            campaign_agreement,
            campaign_worker_statistics,
        )

        campaign = self.get_object()
        return Response(
            {**campaign_agreement(campaign=campaign), "workers": campaign_worker_statistics(campaign=campaign)}
        )

    @extend_schema(request=None, responses={(200, "text/csv"): OpenApiTypes.STR})
    @action(detail=True, methods=["get"], url_path="workers-csv")
    def workers_csv(self, request, pk=None):
        """The per-worker statistics as CSV."""
        from django.http import HttpResponse

        from annotator.quality.selectors.agreement import worker_statistics_csv

        campaign = self.get_object()
        response = HttpResponse(worker_statistics_csv(campaign=campaign), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="campaign-{campaign.pk}-workers.csv"'
        return response

    @extend_schema(request=None, responses=s.LabelCountSerializer(many=True))
    # One row per aggregation method, a handful at most: a plain list, not a page.
    @action(detail=True, methods=["get"], url_path="label-counts", pagination_class=None)
    def labels_summary(self, request, pk=None):
        """Labels per aggregation method: how many, how many positive (lenient and strict)."""
        return Response(s.LabelCountSerializer(label_counts(campaign=self.get_object()), many=True).data)


# --- review: assignments and workers ---------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("campaign", int, description="Only this campaign."),
            OpenApiParameter("status", str, enum=[c for c, _ in Assignment._meta.get_field("status").choices]),
            OpenApiParameter("worker", int, description="Only this worker (id)."),
            OpenApiParameter("flagged", bool, description="Only flagged (true) or unflagged (false) ones."),
        ]
    )
)
class AssignmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Requesters: assignments on their campaigns, with review actions. Workers: their own assignments."""

    model = Assignment

    roles = EVERYONE
    action_roles = {
        "list": REQUESTER | {Role.WORKER},
        "retrieve": REQUESTER | {Role.WORKER},
        "approve": REQUESTER,
        "reject": REQUESTER,
        "retry_mturk_decision": REQUESTER,
    }

    def get_serializer_class(self):
        return s.OwnAssignmentSerializer if is_worker(self.request.user) else s.AssignmentSerializer

    def scoped_queryset(self):
        user = self.request.user
        assignments = Assignment.objects.select_related("hit", "hit__campaign", "worker").order_by("-id")
        if is_worker(user):
            return assignments.filter(worker__user=user)
        assignments = assignments.select_related("external_decision")
        assignments = assignments.filter(hit__campaign__in=campaigns_managed_by(user).values("pk"))
        if self.action == "list":
            filters = _validated(s.AssignmentFilterSerializer, self.request.query_params)
            if "campaign" in filters:
                assignments = assignments.filter(hit__campaign_id=filters["campaign"])
            if "status" in filters:
                assignments = assignments.filter(status=filters["status"])
            if "worker" in filters:
                assignments = assignments.filter(worker_id=filters["worker"])
            if filters.get("flagged") is True:
                assignments = assignments.exclude(flags=[])
            elif filters.get("flagged") is False:
                assignments = assignments.filter(flags=[])
        return assignments

    @extend_schema(request=s.ReasonSerializer, responses={200: s.AssignmentSerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        from annotator.quality.services.decisions import assignment_approve

        data = _validated(s.ReasonSerializer, request.data)
        assignment = assignment_approve(assignment=self.get_object(), actor=request.user, reason=data["reason"])
        return Response(s.AssignmentSerializer(assignment).data)

    @extend_schema(request=s.RequiredReasonSerializer, responses={200: s.AssignmentSerializer, **errors(409)})
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        from annotator.quality.services.decisions import assignment_reject

        data = _validated(s.RequiredReasonSerializer, request.data)
        assignment = assignment_reject(assignment=self.get_object(), actor=request.user, reason=data["reason"])
        return Response(s.AssignmentSerializer(assignment).data)

    @extend_schema(request=None, responses={200: s.AssignmentSerializer, **errors(409)})
    @action(detail=True, methods=["post"], url_path="retry-mturk-decision")
    def retry_mturk_decision(self, request, pk=None):
        """Send the assignment's decision to MTurk again after MTurk did not accept it (409 otherwise)."""
        from annotator.quality.services.external_decisions import external_decision_retry

        assignment = self.get_object()
        decision = ExternalDecision.objects.filter(assignment=assignment).first()
        if decision is None:
            raise ApplicationError("This assignment has no decision for MTurk.", status=409)
        external_decision_retry(decision=decision)
        assignment = self.get_queryset().get(pk=assignment.pk)
        return Response(s.AssignmentSerializer(assignment).data)


class WorkerViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Workers who worked on the requester's campaigns (staff: every worker), each with the caller's own
    record and decisions; block and unblock them on the caller's campaigns. Staff alone may block a worker
    on the whole platform (platform-block, platform-unblock)."""

    model = Worker

    serializer_class = s.WorkerSerializer

    def scoped_queryset(self):
        user = self.request.user
        return workers_with_standing(workers=workers_known_to(user), requester=user)

    def _decided(self, worker: Worker) -> Response:
        return Response(s.WorkerSerializer(self.get_queryset().get(pk=worker.pk)).data)

    @extend_schema(request=s.RequiredReasonSerializer, responses=s.WorkerSerializer)
    @action(detail=True, methods=["post"])
    def block(self, request, pk=None):
        from annotator.quality.services.trust import worker_block

        data = _validated(s.RequiredReasonSerializer, request.data)
        worker = self.get_object()
        worker_block(worker=worker, requester=request.user, actor=request.user, reason=data["reason"])
        return self._decided(worker)

    @extend_schema(request=s.RequiredReasonSerializer, responses=s.WorkerSerializer)
    @action(detail=True, methods=["post"])
    def unblock(self, request, pk=None):
        from annotator.quality.services.trust import worker_unblock

        data = _validated(s.RequiredReasonSerializer, request.data)
        worker = self.get_object()
        worker_unblock(worker=worker, requester=request.user, actor=request.user, reason=data["reason"])
        return self._decided(worker)

    @extend_schema(request=s.RequiredReasonSerializer, responses=s.WorkerSerializer)
    @action(detail=True, methods=["post"], url_path="platform-block")
    def platform_block(self, request, pk=None):
        from annotator.quality.services.trust import worker_platform_block

        data = _validated(s.RequiredReasonSerializer, request.data)
        worker = worker_platform_block(worker=self.get_object(), actor=request.user, reason=data["reason"])
        return self._decided(worker)

    @extend_schema(request=s.RequiredReasonSerializer, responses=s.WorkerSerializer)
    @action(detail=True, methods=["post"], url_path="platform-unblock")
    def platform_unblock(self, request, pk=None):
        from annotator.quality.services.trust import worker_platform_unblock

        data = _validated(s.RequiredReasonSerializer, request.data)
        worker = worker_platform_unblock(worker=self.get_object(), actor=request.user, reason=data["reason"])
        return self._decided(worker)


# --- research: labels, exports, evaluations --------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("campaign", int, description="Only this campaign."),
            OpenApiParameter("method", str, description="Aggregation method (majority, dawid_skene, ...)."),
            OpenApiParameter("positive", bool, description="Only positive (true) or negative (false) labels."),
            OpenApiParameter("strict", bool, description='With positive: "100% YES" only.'),
        ]
    )
)
class LabelViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Verified labels of the campaigns the caller may read, filtered and paginated."""

    model = Label

    serializer_class = s.LabelSerializer
    roles = READERS

    def scoped_queryset(self):
        campaigns = campaigns_visible_to(self.request.user)
        if self.action != "list":
            return label_list(campaigns=campaigns)
        filters = _validated(s.LabelFilterSerializer, self.request.query_params)
        return label_list(
            campaigns=campaigns,
            campaign_id=filters.get("campaign"),
            method=filters.get("method"),
            positive=filters.get("positive"),
            strict=filters.get("strict", False),
        )


class ExportJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Export jobs: start one, poll its status, download the file once it succeeded."""

    model = ExportJob

    serializer_class = s.ExportJobSerializer
    roles = READERS

    def scoped_queryset(self):
        return exports_visible_to(self.request.user).order_by("-id")

    @extend_schema(request=s.ExportCreateSerializer, responses={202: s.ExportJobSerializer, **errors(404)})
    def create(self, request):
        data = _validated(s.ExportCreateSerializer, request.data)
        campaign = campaign_get_readable(user=request.user, campaign_id=data.pop("campaign"))
        job = export_create(campaign=campaign, user=request.user, **data)
        job.refresh_from_db()  # with eager Celery it has already run
        return Response(self.get_serializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **errors(409)})
    @action(detail=True, methods=["get"], url_name="download")
    def download(self, request, pk=None):
        """The exported file, streamed from storage."""
        job = self.get_object()
        if job.status != ExportStatus.SUCCEEDED or not job.file:
            raise ApplicationError(f"Export {job.pk} is {job.status}; download it once it has succeeded.", status=409)
        return FileResponse(job.file.open("rb"), as_attachment=True, filename=export_file_name(job))


class EvaluationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Evaluate a model's rankings against a campaign's verified labels (and its original pairs) or against a
    label set (crowd-verified, original, imported such as ECCV Caption or Crisscrossed Captions, or derived)."""

    model = Evaluation

    serializer_class = s.EvaluationSerializer
    roles = READERS
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def scoped_queryset(self):
        return evaluations_visible_to(self.request.user).order_by("-id")

    @extend_schema(
        request=s.EvaluationCreateSerializer,
        responses={201: s.EvaluationSerializer, 200: s.EvaluationSerializer, **errors(404, 409)},
    )
    def create(self, request):
        """Evaluate uploaded rankings or a stored ranking run against a campaign's labels or a label set.

        201 with a new evaluation (its scorecard is computed by a worker: poll `status`), or 200 with the
        stored one when the same rankings were evaluated against the same labels and settings before."""
        data = _validated(s.EvaluationCreateSerializer, request.data)
        if "campaign" in data:
            target = {"campaign": campaign_get_readable(user=request.user, campaign_id=data["campaign"])}
            dataset_id = target["campaign"].dataset_id
        else:
            target = {"label_set": labelset_get_readable(user=request.user, label_set_id=data["label_set"])}
            dataset_id = target["label_set"].dataset_id
        rankings, run = None, None
        if "rankings_file" in data:
            rankings = rankings_read(raw=data["rankings_file"].read())
        elif "rankings" in data:
            rankings = rankings_read(raw=_json_text(data["rankings"]))
        else:
            run = runs_visible_to(request.user).filter(pk=data["ranking_run"], dataset_id=dataset_id).first()
            if run is None:
                raise ApplicationError(f"Ranking run {data['ranking_run']} is not a run of the labels' dataset.")
        evaluation, created = evaluation_request(
            user=request.user,
            name=data["name"],
            rankings=rankings,
            ranking_run=run,
            method=data.get("method"),
            variant=data["variant"],
            seed=data["seed"],
            resamples=data.get("resamples"),
            **target,
        )
        evaluation.refresh_from_db()  # with eager Celery it has already been scored
        return Response(
            self.get_serializer(evaluation).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )

    @extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
    @action(detail=True, methods=["get"], url_path="csv", url_name="csv")
    def csv(self, request, pk=None):
        """Every metric of the evaluation, a row per direction, value, low and high per metric."""
        from annotator.research.selectors.leaderboard import evaluations_csv

        response = HttpResponse(evaluations_csv([self.get_object()]), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="evaluation-{pk}.csv"'
        return response


def _visible_dataset(user, dataset_id: int) -> Dataset:
    from annotator.datasets.selectors.datasets import dataset_get_visible

    return dataset_get_visible(user=user, dataset_id=dataset_id)


def _json_text(value) -> str:
    return json.dumps(value)

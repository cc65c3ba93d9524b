"""Serializers: input ones validate shapes, output ones render. Neither holds business logic (services do)."""

from django.urls import reverse
from rest_framework import serializers

from annotator.models import (
    AggregationMethod,
    Assignment,
    Bonus,
    Campaign,
    Dataset,
    Evaluation,
    ExportFormat,
    ExportJob,
    ExportStatus,
    ExportVariant,
    ExternalDecision,
    Label,
    MachineAnnotator,
    RankingRun,
    Worker,
    WorkerMessage,
)

MAX_ID = 2**63 - 1  # the database's bigint; larger ids are refused as input, never a 500


def id_field(**kwargs) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=MAX_ID, **kwargs)


# --- output ----------------------------------------------------------------------------------------------


class DatasetSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = Dataset
        fields = [
            "id",
            "url",
            "name",
            "status",
            "images_total",
            "images_done",
            "captions_total",
            "captions_done",
            "report",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_url(self, dataset) -> str:
        url = reverse("api-dataset-detail", args=[dataset.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request else url


class MachineAnnotatorSerializer(serializers.ModelSerializer):
    class Meta:
        model = MachineAnnotator
        fields = ["id", "name", "kind", "checkpoint_path", "weights_hash", "config", "created_at"]
        read_only_fields = fields


class RankingRunSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    progress_fraction = serializers.SerializerMethodField()

    class Meta:
        model = RankingRun
        fields = [
            "id",
            "url",
            "annotator",
            "dataset",
            "status",
            "top_k",
            "reranks",
            "judges",
            "stage",
            "chunks_total",
            "chunks_done",
            "progress_fraction",
            "device",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_url(self, run) -> str:
        url = reverse("api-run-detail", args=[run.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request else url

    def get_progress_fraction(self, run) -> float:
        return round(run.chunks_done / run.chunks_total, 4) if run.chunks_total else 0.0


def _campaign_option_fields() -> list[str]:
    from annotator.campaigns.services.options import OPTION_FIELDS

    return list(OPTION_FIELDS)


def _preset_names() -> list[str]:
    from annotator.campaigns.services.presets import PRESETS

    return sorted(PRESETS)


def _campaign_option_help() -> dict[str, dict]:
    """The form's help text of each option, as the schema's field descriptions."""
    from annotator.campaigns.services.options import OPTION_HELP

    return {name: {"help_text": text} for name, text in OPTION_HELP.items()}


class CampaignSerializer(serializers.ModelSerializer):
    shared_with = serializers.SlugRelatedField(many=True, read_only=True, slug_field="username")
    owner = serializers.SlugRelatedField(read_only=True, slug_field="username")
    spend = serializers.SerializerMethodField(
        help_text="Spend so far in cents: approved, pending (submitted, not decided), fees, total, the budget "
        "and what is left of it, and whether one more assignment would pass it."
    )
    qualification_pool = serializers.SerializerMethodField(
        help_text="The qualification pool: its size, positives and negatives, how often its items were shown, "
        "and `warning` (empty when none) when it is one-sided, unbalanced or too small for the tests."
    )

    class Meta:
        model = Campaign
        # Every option a create accepts comes back (OPTION_FIELDS), with the state the services keep.
        fields = [
            "id",
            "owner",
            "shared_with",
            "dataset",
            "runs",
            "status",
            *_campaign_option_fields(),
            "spend",
            "qualification_pool",
            "created_at",
            "built_at",
            "launched_at",
            "build_report",
            "build_error",
        ]
        read_only_fields = fields
        extra_kwargs = _campaign_option_help()

    def get_spend(self, campaign) -> dict:
        from annotator.campaigns.selectors.crowd_work import campaign_spend

        return campaign_spend(campaign=campaign)

    def get_qualification_pool(self, campaign) -> dict:
        from annotator.campaigns.selectors.gold_exposure import qualification_pool_summary

        return qualification_pool_summary(campaign=campaign)


class LabelCountSerializer(serializers.Serializer):
    method = serializers.CharField()
    labels = serializers.IntegerField()
    positives = serializers.IntegerField()
    strict_positives = serializers.IntegerField()


class LabelSerializer(serializers.ModelSerializer):
    campaign = serializers.IntegerField(source="pair.campaign_id", read_only=True)
    kind = serializers.CharField(source="pair.kind", read_only=True)
    image = serializers.CharField(source="pair.image.source_id", read_only=True, allow_null=True, default=None)
    caption = serializers.CharField(source="pair.caption.source_id", read_only=True, allow_null=True, default=None)
    other_image = serializers.CharField(
        source="pair.other_image.source_id", read_only=True, allow_null=True, default=None
    )
    other_caption = serializers.CharField(
        source="pair.other_caption.source_id", read_only=True, allow_null=True, default=None
    )
    is_original = serializers.BooleanField(source="pair.is_original", read_only=True)
    stage = serializers.CharField(source="pair.direction", read_only=True)

    class Meta:
        model = Label
        fields = [
            "id",
            "pair",
            "campaign",
            "kind",
            "image",
            "caption",
            "other_image",
            "other_caption",
            "is_original",
            "stage",
            "method",
            "choice",
            "score",
            "is_positive",
            "is_positive_strict",
            "confidence",
            "answer_count",
            "probability",
            "probability_low",
            "probability_high",
            "score_low",
            "score_high",
            "updated_at",
        ]
        read_only_fields = fields


class ExportJobSerializer(serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "campaign",
            "format",
            "variant",
            "method",
            "merge_original",
            "status",
            "rows",
            "size_bytes",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "download_url",
        ]
        read_only_fields = fields

    def get_download_url(self, job) -> str | None:
        if job.status != ExportStatus.SUCCEEDED:
            return None
        url = reverse("api-export-download", args=[job.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request else url


class EvaluationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Evaluation
        fields = [
            "id",
            "campaign",
            "label_set",
            "name",
            "method",
            "variant",
            "status",
            "error",
            "biased",
            "ranking_run",
            "rankings_sha256",
            "key",
            "settings",
            "results",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields


class ExternalDecisionSerializer(serializers.ModelSerializer):
    """The approval or rejection sent to MTurk for an MTurk assignment, and whether MTurk has it."""

    class Meta:
        model = ExternalDecision
        fields = ["decision", "status", "attempts", "last_error", "updated_at", "sent_at"]
        read_only_fields = fields


class AssignmentSerializer(serializers.ModelSerializer):
    """For requesters reviewing work on their campaigns."""

    campaign = serializers.IntegerField(source="hit.campaign_id", read_only=True)
    worker = serializers.CharField(source="worker.pseudonym", read_only=True)
    worker_id = serializers.IntegerField(read_only=True)
    # Null for a local worker's assignment and before any decision.
    mturk_decision = ExternalDecisionSerializer(source="external_decision", read_only=True, allow_null=True)

    class Meta:
        model = Assignment
        fields = [
            "id",
            "hit",
            "campaign",
            "worker",
            "worker_id",
            "status",
            "reserved_at",
            "expires_at",
            "submitted_at",
            "decided_at",
            "gold_correct",
            "gold_total",
            "flags",
            "auto_approve_at",
            "mturk_decision",
        ]
        read_only_fields = fields


class OwnAssignmentSerializer(serializers.ModelSerializer):
    """For a worker looking at their own assignments: no gold scores, nothing about other workers."""

    campaign = serializers.IntegerField(source="hit.campaign_id", read_only=True)
    campaign_name = serializers.CharField(source="hit.campaign.name", read_only=True)

    class Meta:
        model = Assignment
        fields = [
            "id",
            "campaign",
            "campaign_name",
            "status",
            "reserved_at",
            "expires_at",
            "submitted_at",
            "decided_at",
        ]
        read_only_fields = fields


class WorkerSerializer(serializers.ModelSerializer):
    """A worker as the calling requester sees them: the gold record earned on the caller's campaigns and the
    caller's own block and soft block (another requester's decisions never show). `platform_blocked`: staff
    blocked the worker everywhere. Reads the standing_* annotations of WorkerViewSet's queryset."""

    gold_correct = serializers.IntegerField(source="standing_gold_correct", read_only=True)
    gold_total = serializers.IntegerField(source="standing_gold_total", read_only=True)
    blocked = serializers.BooleanField(source="standing_blocked", read_only=True)
    soft_blocked = serializers.BooleanField(source="standing_soft_blocked", read_only=True)
    blocked_reason = serializers.CharField(source="standing_blocked_reason", read_only=True)
    platform_blocked = serializers.BooleanField(source="blocked", read_only=True)

    class Meta:
        model = Worker
        fields = [
            "id",
            "pseudonym",
            "gold_correct",
            "gold_total",
            "blocked",
            "soft_blocked",
            "blocked_reason",
            "platform_blocked",
            "created_at",
        ]
        read_only_fields = fields


# --- input -----------------------------------------------------------------------------------------------


class LabelFilterSerializer(serializers.Serializer):
    campaign = id_field(required=False)
    method = serializers.ChoiceField(choices=AggregationMethod.choices, required=False)
    positive = serializers.BooleanField(required=False, allow_null=True, default=None)
    strict = serializers.BooleanField(required=False, default=False)


class ExportCreateSerializer(serializers.Serializer):
    campaign = id_field()
    format = serializers.ChoiceField(choices=ExportFormat.choices)
    variant = serializers.ChoiceField(choices=ExportVariant.choices, default=ExportVariant.LENIENT)
    method = serializers.ChoiceField(choices=AggregationMethod.choices, required=False)
    merge_original = serializers.BooleanField(default=False)


class EvaluationCreateSerializer(serializers.Serializer):
    campaign = id_field(required=False, help_text="Evaluate against this campaign's labels (method, variant) ...")
    label_set = id_field(required=False, help_text="... or against this label set (exactly its judged queries).")
    name = serializers.CharField(max_length=200)
    variant = serializers.ChoiceField(choices=ExportVariant.choices, default=ExportVariant.LENIENT)
    method = serializers.ChoiceField(choices=AggregationMethod.choices, required=False)
    rankings_file = serializers.FileField(
        required=False, help_text='A JSON file {"i2t": {image id: [caption ids, best first]}, "t2i": {...}}.'
    )
    rankings = serializers.JSONField(required=False, help_text="The same object inline (JSON requests).")
    ranking_run = id_field(required=False, help_text="Or a finished ranking run of the dataset (a machine annotator).")
    seed = serializers.IntegerField(default=0, min_value=0, max_value=2**31 - 1, help_text="The bootstrap's seed.")
    resamples = serializers.IntegerField(
        required=False, min_value=0, max_value=10_000, help_text="Bootstrap resamples (default 1000; 0: no intervals)."
    )

    def validate(self, attrs):
        if ("campaign" in attrs) == ("label_set" in attrs):
            raise serializers.ValidationError("Name the labels once: a campaign or a label_set.")
        given = sum(key in attrs for key in ("rankings_file", "rankings", "ranking_run"))
        if given != 1:
            raise serializers.ValidationError(
                "Send the rankings once: as rankings_file, as rankings, or name a ranking_run."
            )
        return attrs


class LeaderboardQuerySerializer(serializers.Serializer):
    campaign = id_field(required=False, help_text="The board of this campaign's labels (method, variant) ...")
    label_set = id_field(required=False, help_text="... or of this label set.")
    method = serializers.ChoiceField(choices=AggregationMethod.choices, required=False)
    variant = serializers.ChoiceField(choices=ExportVariant.choices, default=ExportVariant.LENIENT)
    direction = serializers.ChoiceField(choices=["i2t", "t2i", "t2t", "i2i"], default="i2t")
    sort = serializers.CharField(required=False, max_length=64, help_text="A metric key, e.g. map_at_r or coco5k_r1.")
    order = serializers.ChoiceField(choices=["asc", "desc"], required=False)

    def validate(self, attrs):
        if ("campaign" in attrs) == ("label_set" in attrs):
            raise serializers.ValidationError("Name the labels once: a campaign or a label_set.")
        return attrs


class MachineAnnotatorCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.CharField(
        max_length=32,
        help_text="A kind from GET /api/v1/annotators/kinds/: built in (clip, open_clip, hf_dual, minilm_pivot, "
        "tfidf_pivot, visual; cross_encoder and vlm_judge, which score a run's top K or a campaign's pairs) "
        "or an installed plugin's.",
    )
    checkpoint_path = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="clip, hf_dual, cross_encoder, vlm_judge: a Hugging Face checkpoint directory; open_clip: the "
        "checkpoint file (its model name in config.model, e.g. ViT-B-32).",
    )
    config = serializers.DictField(required=False, default=dict)


class AnnotatorKindSerializer(serializers.Serializer):
    kind = serializers.CharField()
    label = serializers.CharField()
    plugin = serializers.BooleanField(
        help_text="Declared by an installed package (entry point group vericap.annotators)."
    )
    needs_checkpoint = serializers.BooleanField()


class RankingRunCreateSerializer(serializers.Serializer):
    dataset = id_field()
    annotator = id_field()
    top_k = serializers.IntegerField(min_value=1, max_value=1000, default=25)


class RerankCreateSerializer(serializers.Serializer):
    annotator = id_field(
        help_text="A cross_encoder annotator (ViLT's or BLIP's matching head) or a vlm_judge annotator (a local "
        "vision-language model, scored by P(yes) to the HIT's question)."
    )
    top_k = serializers.IntegerField(
        min_value=1, max_value=1000, required=False, help_text="Candidates re-scored per query (default: the run's K)."
    )


class JudgeCreateSerializer(serializers.Serializer):
    annotator = id_field(help_text="A vlm_judge annotator (a local vision-language model).")


class AssignmentFilterSerializer(serializers.Serializer):
    campaign = id_field(required=False)
    status = serializers.ChoiceField(choices=Assignment._meta.get_field("status").choices, required=False)
    worker = id_field(required=False)
    flagged = serializers.BooleanField(required=False, allow_null=True, default=None)


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="")


class RequiredReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=1000)


class BonusCreateSerializer(serializers.Serializer):
    assignment = id_field(help_text="An approved assignment of this campaign.")
    amount_cents = serializers.IntegerField(min_value=1, max_value=10_000)
    reason = serializers.CharField(max_length=1000, help_text="The worker sees it.")
    idempotency_key = serializers.CharField(
        max_length=64, help_text="The same key for a repeated request gives the same bonus, paid once."
    )


class BonusSerializer(serializers.ModelSerializer):
    worker = serializers.CharField(source="worker.pseudonym", read_only=True)

    class Meta:
        model = Bonus
        fields = [
            "id",
            "assignment",
            "worker",
            "amount_cents",
            "reason",
            "idempotency_key",
            "status",
            "attempts",
            "last_error",
            "created_at",
            "sent_at",
        ]
        read_only_fields = fields


class WorkerMessageCreateSerializer(serializers.Serializer):
    worker = serializers.CharField(max_length=32, help_text="The worker's pseudonym.")
    subject = serializers.CharField(max_length=200)
    body = serializers.CharField(max_length=4000)


class WorkerMessageSerializer(serializers.ModelSerializer):
    worker = serializers.CharField(source="worker.pseudonym", read_only=True)

    class Meta:
        model = WorkerMessage
        fields = ["id", "worker", "subject", "body", "status", "last_error", "created_at", "sent_at"]
        read_only_fields = fields


class ShareSerializer(serializers.Serializer):
    usernames = serializers.ListField(child=serializers.CharField(max_length=150), allow_empty=True, max_length=100)


def _policy_fields() -> list[str]:
    from annotator.campaigns.services.policy import POLICY_FIELDS

    return list(POLICY_FIELDS)


class CampaignCreateSerializer(serializers.ModelSerializer):
    """A draft campaign: the dataset, the succeeded runs to pool, and any options (the rest keep defaults)."""

    dataset = id_field()
    runs = serializers.ListField(child=id_field(), allow_empty=False, max_length=50)
    preset = serializers.ChoiceField(
        choices=_preset_names(),
        required=False,
        help_text="cxc: Crisscrossed Captions' protocol (similarity scale, 5 ratings, mean label, CxC's threshold "
        "per task, no follow-ups, no qualification test unless qualification_items is given); options given win.",
    )

    class Meta:
        model = Campaign
        fields = ["dataset", "runs", "preset", *_campaign_option_fields()]
        extra_kwargs = {
            name: {**_campaign_option_help().get(name, {}), **({"required": False} if name != "name" else {})}
            for name in _campaign_option_fields()
        }


class CampaignPolicySerializer(serializers.ModelSerializer):
    """The quality policy of a campaign; any subset of the fields (PATCH)."""

    class Meta:
        model = Campaign
        fields = _policy_fields()
        extra_kwargs = {name: {"required": False} for name in _policy_fields()}


class DatasetImportSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    captions = serializers.FileField(help_text="COCO caption JSON (.json), or .jsonl / .csv of (image path, caption).")
    images = serializers.FileField(help_text="A zip of the images.")
    split = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    split_file = serializers.FileField(required=False, help_text="A Karpathy split file; keeps the images of `split`.")

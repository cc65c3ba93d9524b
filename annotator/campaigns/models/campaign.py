from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.ranking.models.ranking import RankingRun


class CampaignDirection(models.TextChoices):
    I2T = "i2t", "Image to caption"
    T2I = "t2i", "Caption to image"
    BOTH = "both", "Both, as two stages (image to caption first)"
    T2T = "t2t", "Caption to caption (STS)"
    I2I = "i2i", "Image to image (SIS)"


class Scale(models.TextChoices):
    FOUR_CHOICE = "four_choice", "Four choices with rationale (ECCV Caption)"
    SIMILARITY = "similarity", "Continuous 0-5 similarity (Crisscrossed Captions)"


class Sampling(models.TextChoices):
    POOL = "pool", "Every annotator's top k, pooled (ECCV Caption)"
    CXC = "cxc", "Other-modality sampling (Crisscrossed Captions)"


class CampaignStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    BUILDING = "building", "Building"  # a worker is pooling and packing its HITs (campaign_build_run)
    BUILT = "built", "Built"
    LIVE = "live", "Live"
    PAUSED = "paused", "Paused"
    FINISHED = "finished", "Finished"


CAMPAIGN_TRANSITIONS = {
    CampaignStatus.DRAFT: {CampaignStatus.BUILDING},
    # A failed build goes back to draft with its message in build_error.
    CampaignStatus.BUILDING: {CampaignStatus.BUILT, CampaignStatus.DRAFT},
    CampaignStatus.BUILT: {CampaignStatus.LIVE, CampaignStatus.BUILDING},
    CampaignStatus.LIVE: {CampaignStatus.PAUSED, CampaignStatus.FINISHED},
    CampaignStatus.PAUSED: {CampaignStatus.LIVE, CampaignStatus.FINISHED},
    CampaignStatus.FINISHED: set(),
}


class GoldFailAction(models.TextChoices):
    REVIEW = "review", "Send to the review queue"
    REJECT = "reject", "Reject automatically"


# Crisscrossed Captions' positives: mean rating >= 3 for STS and SITS, >= 2.5 for SIS.
CXC_POSITIVE_AT = {"t2t": 3.0, "i2i": 2.5, "i2t": 3.0, "t2i": 3.0, "both": 3.0}

# The label models a campaign may choose (AggregationMethod values; `mean` is the similarity scale's).
# The qualification pool's share of matching pairs: a requester may choose within these bounds, so every
# test holds both kinds and answering the same to everything cannot pass (annotator.analysis.gold).
QUALIFICATION_SHARE_MIN = 0.3
QUALIFICATION_SHARE_MAX = 0.7
QUALIFICATION_SHARE_DEFAULT = 0.5
LABEL_MODELS = ["posterior", "dawid_skene", "glad", "mace", "wawa", "majority", "gold_weighted", "mean"]


class Campaign(models.Model):
    """A verification job: which pairs, how they are packed, what a HIT pays, how quality is kept."""

    name = models.CharField(max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="campaigns")
    shared_with = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="shared_campaigns")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="campaigns")
    runs = models.ManyToManyField(RankingRun, blank=True, related_name="campaigns")
    status = models.CharField(max_length=16, choices=CampaignStatus.choices, default=CampaignStatus.DRAFT)
    direction = models.CharField(max_length=4, choices=CampaignDirection.choices, default=CampaignDirection.I2T)
    scale = models.CharField(max_length=16, choices=Scale.choices, default=Scale.FOUR_CHOICE)
    rationale_followups = models.BooleanField(default=True)
    # The second stage (caption-to-image) of a `both` campaign: the ECCV protocol asks it without follow-ups.
    stage2_rationale_followups = models.BooleanField(default=False)
    # Query sampling: a count or a fraction of the queries, drawn with the seed.
    sample_count = models.PositiveIntegerField(null=True, blank=True)
    sample_fraction = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    seed = models.IntegerField(default=0)
    # Explicit queries per stage, {"i2t": [image source ids], "t2i": [caption source ids], ...}: the stage takes
    # exactly these (ECCV Caption's own queries, re-run), instead of a sample. Empty: sample as above.
    query_list = models.JSONField(default=dict, blank=True)
    pool_depth = models.PositiveIntegerField(default=5)
    # How caption-caption and image-image candidates are chosen (annotator/analysis/cxc_sampling.py): pooled
    # from same-modality rankings, or CxC's other modality with co-captions and a share of random pairs.
    sampling = models.CharField(max_length=8, choices=Sampling.choices, default=Sampling.POOL)
    cocaption_share = models.FloatField(default=0.5, validators=[MinValueValidator(0.0), MaxValueValidator(0.9)])
    random_pair_share = models.FloatField(default=0.1, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    # A similarity-scale pair is positive when its mean rating reaches this; empty: CxC's own (3 for STS and
    # SITS, 2.5 for SIS).
    similarity_positive_at = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(5.0)]
    )
    gold_exclusion_depth = models.PositiveIntegerField(default=25)
    candidates_per_hit = models.PositiveIntegerField(default=16, validators=[MinValueValidator(1)])
    gold_positives_per_hit = models.PositiveIntegerField(default=1)
    gold_negatives_per_hit = models.PositiveIntegerField(default=1)
    gold_reuse_limit = models.PositiveIntegerField(default=3)  # how many HITs one gold pair may appear in
    redundancy = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1), MaxValueValidator(9)])
    reward_cents = models.PositiveIntegerField(default=50)
    platform_fee_percent = models.FloatField(default=20.0, validators=[MinValueValidator(0.0)])
    # The most the requester will spend (rewards, bonuses and fees, in cents); empty: no cap. The campaign
    # pauses once approved and pending work would pass it (annotator/campaigns/services/budget.py).
    budget_cents = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    lease_minutes = models.PositiveIntegerField(default=30, validators=[MinValueValidator(1)])
    max_hits_per_worker = models.PositiveIntegerField(null=True, blank=True)
    # Qualification before the first HIT.
    qualification_items = models.PositiveIntegerField(default=6)
    qualification_pass_mark = models.FloatField(default=0.8)
    qualification_cooldown_minutes = models.PositiveIntegerField(default=60)
    # Pairs set aside at build time for the qualification test only: never in a HIT, so taking the test
    # teaches a worker nothing about the HITs' gold. Retakes draw items the worker has not seen.
    qualification_pool_size = models.PositiveIntegerField(default=40)
    # The share of matching pairs (originals) in the pool and in every test, whatever the annotators rank
    # (annotator.campaigns.services.qualification_pool); the rest are sure non-matching pairs.
    qualification_positive_share = models.FloatField(
        default=QUALIFICATION_SHARE_DEFAULT,
        validators=[MinValueValidator(QUALIFICATION_SHARE_MIN), MaxValueValidator(QUALIFICATION_SHARE_MAX)],
    )
    # A HIT gold pair seen by this many workers is retired: the HITs nobody has opened yet get a fresh one.
    gold_max_exposure = models.PositiveIntegerField(default=6, validators=[MinValueValidator(1)])
    # Quality policy.
    strict_gold = models.BooleanField(default=False)
    similarity_gold_threshold = models.FloatField(default=3.0)
    gold_fail_action = models.CharField(max_length=8, choices=GoldFailAction.choices, default=GoldFailAction.REVIEW)
    auto_approve_hours = models.FloatField(default=72.0)
    min_seconds_per_item = models.FloatField(default=1.0)
    confidence_threshold = models.FloatField(default=0.7)
    extra_assignment_cap = models.PositiveIntegerField(default=0)  # extra answers a low-confidence pair may get
    # Gold misses per HIT forgiven when the worker's gold record or the crowd's posterior vouches for the
    # work (0 = ECCV Caption: any miss goes to review). With two gold items and careful workers right about
    # nine times in ten, one HIT in five misses one; 1 keeps them out of the review queue.
    tolerated_gold_misses = models.PositiveIntegerField(default=1)
    # Labels (annotator/analysis/posterior.py): the model whose labels decide adaptive redundancy, flags and
    # default exports, and whether the machine annotators' evidence is the pairs' prior.
    label_model = models.CharField(max_length=16, choices=[(m, m) for m in LABEL_MODELS], default="posterior")
    machine_prior = models.BooleanField(default=True)
    # Adaptive redundancy (annotator/quality/services/followups.py): a pair stops collecting answers once its
    # posterior is settled and gets follow-up HITs while it is not, up to max_answers_per_pair.
    adaptive_redundancy = models.BooleanField(default=True)
    settle_probability = models.FloatField(default=0.95, validators=[MinValueValidator(0.5), MaxValueValidator(0.9999)])
    settle_min_answers = models.PositiveIntegerField(default=2, validators=[MinValueValidator(1)])
    max_answers_per_pair = models.PositiveIntegerField(default=7, validators=[MinValueValidator(1)])
    # The posterior checked on gold (annotator.quality.selectors.posterior.campaign_gold_check): how much its 90%
    # intervals are widened, and its stopping bar raised, because they held too little on gold. Set by
    # campaign_calibration_refresh at every aggregation; 1.0 while the gold check finds nothing wrong.
    posterior_inflation = models.FloatField(default=1.0, validators=[MinValueValidator(1.0)])
    # Adaptive gold (docs/quality.md): this share of the HITs a build (or a follow-up round) packs is
    # gold-light: one gold item and, in the other's place, one more candidate (the same size); a claim gives
    # them first to workers with a clean gold record (QUALITY_GOLD_LIGHT_AFTER), full gold to everyone else.
    gold_light_share = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    created_at = models.DateTimeField(auto_now_add=True)
    built_at = models.DateTimeField(null=True, blank=True)
    launched_at = models.DateTimeField(null=True, blank=True)
    build_report = models.JSONField(default=dict, blank=True)  # proposals, unique pairs, overlap, HITs
    build_error = models.TextField(blank=True)  # why the last queued build failed; cleared by the next one
    build_requested_at = models.DateTimeField(null=True, blank=True)  # when the current/last build was queued

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=CampaignStatus.values), name="campaign_status_valid"),
            models.CheckConstraint(condition=Q(scale__in=Scale.values), name="campaign_scale_valid"),
            models.CheckConstraint(condition=Q(sampling__in=Sampling.values), name="campaign_sampling_valid"),
            models.CheckConstraint(
                condition=Q(similarity_positive_at__isnull=True)
                | Q(similarity_positive_at__gte=0, similarity_positive_at__lte=5),
                name="campaign_similarity_positive_at_range",
            ),
            models.CheckConstraint(condition=Q(redundancy__gte=1, redundancy__lte=9), name="campaign_redundancy_range"),
            models.CheckConstraint(condition=Q(label_model__in=LABEL_MODELS), name="campaign_label_model_valid"),
            models.CheckConstraint(
                condition=Q(settle_probability__gte=0.5, settle_probability__lt=1), name="campaign_settle_range"
            ),
            models.CheckConstraint(
                condition=Q(sample_fraction__isnull=True) | Q(sample_fraction__gte=0, sample_fraction__lte=1),
                name="campaign_sample_fraction_range",
            ),
            models.CheckConstraint(
                condition=Q(budget_cents__isnull=True) | Q(budget_cents__gte=1), name="campaign_budget_positive"
            ),
            models.CheckConstraint(
                condition=Q(
                    qualification_positive_share__gte=QUALIFICATION_SHARE_MIN,
                    qualification_positive_share__lte=QUALIFICATION_SHARE_MAX,
                ),
                name="campaign_qualification_share_range",
            ),
            models.CheckConstraint(condition=Q(posterior_inflation__gte=1), name="campaign_posterior_inflation_min"),
        ]

    def __str__(self):
        return self.name

    @property
    def hit_size(self) -> int:
        return self.candidates_per_hit + self.gold_positives_per_hit + self.gold_negatives_per_hit

    @property
    def positive_at(self) -> float:
        """Where a mean similarity rating becomes positive: the campaign's own, else CxC's for its task."""
        if self.similarity_positive_at is not None:
            return float(self.similarity_positive_at)
        return CXC_POSITIVE_AT.get(self.direction, 3.0)


class PairKind(models.TextChoices):
    IMAGE_CAPTION = "image_caption", "Image and caption"
    CAPTION_CAPTION = "caption_caption", "Two captions (STS)"
    IMAGE_IMAGE = "image_image", "Two images (SIS)"


class Pair(models.Model):
    """One unique pair inside a campaign, with its provenance in PairSource.

    image_caption uses (image, caption); caption_caption uses (caption, other_caption);
    image_image uses (image, other_image).
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="pairs")
    kind = models.CharField(max_length=16, choices=PairKind.choices, default=PairKind.IMAGE_CAPTION)
    image = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    caption = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    other_image = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    other_caption = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    is_original = models.BooleanField(default=False)  # an original pair of the dataset
    direction = models.CharField(max_length=3, blank=True)  # the stage that proposed it (i2t, t2i, ...)
    # How the pair was chosen, in Crisscrossed Captions' words where it has one (i2i_csim, c2c_isim,
    # c2c_cocaption, ...); empty for pairs pooled from rankings the ECCV way.
    sampling_method = models.CharField(max_length=32, blank=True, default="")
    query_id = models.BigIntegerField(null=True, blank=True)  # the query it was proposed for

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "image", "caption"],
                condition=Q(kind="image_caption"),
                name="pair_image_caption_unique",
            ),
            models.UniqueConstraint(
                fields=["campaign", "caption", "other_caption"],
                condition=Q(kind="caption_caption"),
                name="pair_caption_caption_unique",
            ),
            models.UniqueConstraint(
                fields=["campaign", "image", "other_image"],
                condition=Q(kind="image_image"),
                name="pair_image_image_unique",
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind="image_caption", image__isnull=False, caption__isnull=False)
                    | Q(kind="caption_caption", caption__isnull=False, other_caption__isnull=False)
                    | Q(kind="image_image", image__isnull=False, other_image__isnull=False)
                ),
                name="pair_kind_members",
            ),
        ]

    def __str__(self):
        return f"pair {self.pk} ({self.kind})"


class PairSource(models.Model):
    """Which annotator (run) proposed a Pair, for which query, at which rank and score."""

    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="sources")
    run = models.ForeignKey(RankingRun, on_delete=models.CASCADE, related_name="+")
    direction = models.CharField(max_length=3)
    rank = models.PositiveIntegerField()
    score = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pair", "run", "direction"], name="pair_source_unique")]


class HitStatus(models.TextChoices):
    OPEN = "open", "Open"
    COMPLETE = "complete", "Complete"  # enough approved assignments
    CANCELLED = "cancelled", "Cancelled"


class Hit(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="hits")
    index = models.PositiveIntegerField()  # order within the campaign, reproducible from the seed
    stage = models.CharField(max_length=3, default="i2t")  # i2t first, then t2i for `both`
    status = models.CharField(max_length=16, choices=HitStatus.choices, default=HitStatus.OPEN)
    assignments_required = models.PositiveIntegerField(default=1)  # redundancy, raised for low confidence
    # 0 for the HITs of the build; n for the n-th round of follow-up HITs of unsettled pairs.
    followup_round = models.PositiveIntegerField(default=0, db_default=0)
    # Where claims look (annotator.crowd.services.hit_room): False once the HIT's active assignments reach
    # assignments_required, written only under the HIT's row lock after a fresh count; True again as soon as
    # a slot frees up. A claim recounts under the lock, so a stale True costs one skipped HIT, never a slot.
    has_room = models.BooleanField(default=True, db_default=True)
    # One gold item instead of the campaign's full gold and one more candidate (Campaign.gold_light_share).
    # Never shown to a worker: the HIT has the same number of items and the same query groups.
    gold_light = models.BooleanField(default=False, db_default=False)
    external_hit_id = models.CharField(max_length=64, blank=True)  # MTurk HITId when published there
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign_id", "index"]
        indexes = [
            # The claim's scan: open HITs with room, in the order they are handed out. Full HITs are not in
            # it, so a claim late in a campaign costs what it costs at the start. Within a stage the HITs of
            # the gold density a worker's record calls for come first, full gold in the first index and
            # gold-light in the second, so either order is an index scan that stops at the first match.
            models.Index(
                fields=["campaign", "stage", "gold_light", "index"],
                name="hit_claim_order",
                condition=Q(status="open", has_room=True),
            ),
            models.Index(
                fields=["campaign", "stage", "-gold_light", "index"],
                name="hit_claim_order_light",
                condition=Q(status="open", has_room=True),
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "index"], name="hit_index_unique"),
            models.CheckConstraint(condition=Q(status__in=HitStatus.values), name="hit_status_valid"),
            models.CheckConstraint(condition=Q(assignments_required__gte=1), name="hit_assignments_required_positive"),
        ]

    def __str__(self):
        return f"HIT {self.campaign_id}/{self.index}"


class ItemRole(models.TextChoices):
    CANDIDATE = "candidate", "Candidate"
    GOLD_POSITIVE = "gold_positive", "Gold positive"
    GOLD_NEGATIVE = "gold_negative", "Gold negative"
    QUALIFICATION = "qualification", "Qualification item"


class HitItem(models.Model):
    """A Pair in a role at a position. The role never reaches a worker's browser."""

    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    pair = models.ForeignKey(Pair, on_delete=models.CASCADE, related_name="hit_items")
    role = models.CharField(max_length=16, choices=ItemRole.choices, default=ItemRole.CANDIDATE)

    class Meta:
        ordering = ["hit_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["hit", "position"], name="hit_item_position_unique"),
            models.UniqueConstraint(fields=["hit", "pair"], name="hit_item_pair_unique"),
            models.CheckConstraint(condition=Q(role__in=ItemRole.values), name="hit_item_role_valid"),
        ]

    def __str__(self):
        return f"{self.hit} #{self.position}"

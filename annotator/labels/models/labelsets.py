"""Label sets: named, versioned sets of judged pairs on a dataset, each with its own judged queries.

A LabelSet says, per direction, which queries it judged (LabelSetQuery) and which pairs it holds a
label for (LabelSetPair, positive or negative). A judged query's positives are its positive pairs; any other
target of a judged query counts as a negative when a model is scored (the ECCV Caption convention). A query
the set did not judge is unknown, never negative: it is not scored at all.

Sets never change once made: a re-import, a merge of new crowd work or a correction is a new version
(same name, version + 1, `parent` the one before), so several sets and versions live side by side and an
evaluation always names exactly what it was scored against.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotator.campaigns.models.campaign import Campaign
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.labels.models.exports import ExportVariant


class LabelSetKind(models.TextChoices):
    CROWD = "crowd", "Crowd-verified (a campaign's aggregated labels)"
    ORIGINAL = "original", "The dataset's original pairs"
    IMPORTED = "imported", "Imported from a file"
    DERIVED = "derived", "Derived from other sets"


class LabelSetFormat(models.TextChoices):
    ECCV_JSON = "eccv_json", 'ECCV Caption JSON, merged ({"i2t": ..., "t2i": ...})'
    ECCV_SPLIT = "eccv_split", "ECCV Caption, the two released files (image_to_caption, caption_to_image)"
    CXC_SITS = "cxc_sits", "Crisscrossed Captions SITS CSV (image-caption)"
    CXC_STS = "cxc_sts", "Crisscrossed Captions STS CSV (caption-caption)"
    CXC_SIS = "cxc_sis", "Crisscrossed Captions SIS CSV (image-image)"
    JSONL = "jsonl", "JSONL, one judged pair per line"


class LabelSetOperation(models.TextChoices):
    UNION = "union", "Union: positive in any"
    INTERSECTION = "intersection", "Intersection: positive in all"
    DIFFERENCE = "difference", "Difference: positive in the first and in none of the others"


class QueryRule(models.TextChoices):
    """Which queries a derived set judges."""

    ALL = "all", "Every query judged by any operand"
    COMMON = "common", "Queries judged by every operand"
    FIRST = "first", "The first operand's queries"


class LabelSetDirection(models.TextChoices):
    I2T = "i2t", "Image to captions"
    T2I = "t2i", "Caption to images"
    T2T = "t2t", "Caption to captions (STS)"
    I2I = "i2i", "Image to images (SIS)"


class LabelSetPairKind(models.TextChoices):
    IMAGE_CAPTION = "image_caption", "Image and caption"
    CAPTION_CAPTION = "caption_caption", "Two captions (STS)"
    IMAGE_IMAGE = "image_image", "Two images (SIS)"


# Where a direction's query and its targets live.
QUERY_SIDE = {"i2t": "image", "t2i": "caption", "t2t": "caption", "i2i": "image"}
PAIR_KIND_OF_DIRECTION = {
    "i2t": LabelSetPairKind.IMAGE_CAPTION,
    "t2i": LabelSetPairKind.IMAGE_CAPTION,
    "t2t": LabelSetPairKind.CAPTION_CAPTION,
    "i2i": LabelSetPairKind.IMAGE_IMAGE,
}

# Default positive thresholds of Crisscrossed Captions (mean of the 0-5 ratings).
CXC_THRESHOLDS = {LabelSetFormat.CXC_SITS: 3.0, LabelSetFormat.CXC_STS: 3.0, LabelSetFormat.CXC_SIS: 2.5}


class LabelSet(models.Model):
    """A named, versioned set of judged pairs on one dataset. Immutable once created (a change is a version)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="label_sets")
    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="versions"
    )  # the version this one replaces
    kind = models.CharField(max_length=16, choices=LabelSetKind.choices)
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="label_sets"
    )
    # Visible to every requester and researcher (released sets such as ECCV Caption or CxC), not only to
    # its creator and the readers of its campaign.
    public = models.BooleanField(default=False)
    # crowd: which campaign, which aggregation method, lenient or strict positives.
    campaign = models.ForeignKey(Campaign, null=True, blank=True, on_delete=models.PROTECT, related_name="label_sets")
    method = models.CharField(max_length=16, blank=True)
    variant = models.CharField(max_length=8, choices=ExportVariant.choices, blank=True)
    # imported: the file format and names, and the score threshold of a rated (CxC) file.
    source_format = models.CharField(max_length=16, choices=LabelSetFormat.choices, blank=True)
    source_files = models.JSONField(default=list, blank=True)
    threshold = models.FloatField(null=True, blank=True)
    # derived: the operation over the operands (LabelSetOperand, in order) and which queries it keeps.
    operation = models.CharField(max_length=16, choices=LabelSetOperation.choices, blank=True)
    query_rule = models.CharField(max_length=8, choices=QueryRule.choices, blank=True)
    # Names of the machine annotators whose proposals the judges saw (a model among them is not evaluated
    # fairly on this set: ECCV Caption App. E.3).
    annotators = models.JSONField(default=list, blank=True)
    report = models.JSONField(default=dict, blank=True)  # how it was made: unknown ids, coverage, conflicts
    stats = models.JSONField(default=dict, blank=True)  # queries, pairs and positives per direction
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset_id", "name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name", "version"], name="labelset_name_version_unique"),
            models.CheckConstraint(condition=Q(kind__in=LabelSetKind.values), name="labelset_kind_valid"),
            models.CheckConstraint(condition=Q(version__gte=1), name="labelset_version_positive"),
            models.CheckConstraint(condition=~Q(name=""), name="labelset_name_present"),
            models.CheckConstraint(
                condition=Q(kind="crowd", campaign__isnull=False, variant__in=ExportVariant.values) & ~Q(method="")
                | ~Q(kind="crowd") & Q(campaign__isnull=True, method="", variant=""),
                name="labelset_crowd_has_campaign",
            ),
            models.CheckConstraint(
                condition=Q(kind="imported", source_format__in=LabelSetFormat.values)
                | ~Q(kind="imported") & Q(source_format=""),
                name="labelset_imported_has_format",
            ),
            models.CheckConstraint(
                condition=Q(kind="derived", operation__in=LabelSetOperation.values, query_rule__in=QueryRule.values)
                | ~Q(kind="derived") & Q(operation="", query_rule=""),
                name="labelset_derived_has_operation",
            ),
            models.CheckConstraint(
                condition=Q(threshold__isnull=True) | Q(threshold__gte=0, threshold__lte=5),
                name="labelset_threshold_range",
            ),
        ]

    def __str__(self):
        return f"{self.name} v{self.version}"

    @property
    def label(self) -> str:
        """`name@version`, the way commands and forms name a set."""
        return f"{self.name}@{self.version}"


class LabelSetOperand(models.Model):
    """One input of a derived set, in order (the order matters for a difference)."""

    result = models.ForeignKey(LabelSet, on_delete=models.CASCADE, related_name="operand_links")
    # An operand cannot be deleted on its own while a derived set names it; deleting both at once (their
    # dataset, say) is fine.
    operand = models.ForeignKey(LabelSet, on_delete=models.RESTRICT, related_name="derived_links")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["result_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["result", "position"], name="labelset_operand_position_unique"),
            models.UniqueConstraint(fields=["result", "operand"], name="labelset_operand_once"),
            models.CheckConstraint(condition=~Q(result=F("operand")), name="labelset_operand_not_itself"),
        ]


class LabelSetQuery(models.Model):
    """A query the set judged, in one direction: an image (i2t, i2i) or a caption (t2i, t2t)."""

    label_set = models.ForeignKey(LabelSet, on_delete=models.CASCADE, related_name="queries")
    direction = models.CharField(max_length=3, choices=LabelSetDirection.choices)
    image = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    caption = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["label_set", "direction", "image"],
                condition=Q(image__isnull=False),
                name="labelset_query_image_unique",
            ),
            models.UniqueConstraint(
                fields=["label_set", "direction", "caption"],
                condition=Q(caption__isnull=False),
                name="labelset_query_caption_unique",
            ),
            models.CheckConstraint(
                condition=Q(direction__in=["i2t", "i2i"], image__isnull=False, caption__isnull=True)
                | Q(direction__in=["t2i", "t2t"], caption__isnull=False, image__isnull=True),
                name="labelset_query_side",
            ),
        ]

    def __str__(self):
        return f"{self.direction} query {self.image_id or self.caption_id}"


class LabelSetPair(models.Model):
    """One judged pair of a set: positive or negative, with the judgement's score or choice when known.

    image_caption uses (image, caption); caption_caption (caption, other_caption); image_image
    (image, other_image), as Pair does. A pair has no direction: it answers for the image's i2t query and
    the caption's t2i query alike, where the set judged them.
    """

    label_set = models.ForeignKey(LabelSet, on_delete=models.CASCADE, related_name="pairs")
    kind = models.CharField(max_length=16, choices=LabelSetPairKind.choices, default=LabelSetPairKind.IMAGE_CAPTION)
    image = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    caption = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    other_image = models.ForeignKey(Image, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    other_caption = models.ForeignKey(Caption, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    is_positive = models.BooleanField()
    score = models.FloatField(null=True, blank=True)  # a rated set's 0-5 mean, a crowd label's score
    choice = models.CharField(max_length=16, blank=True)  # a crowd label's aggregated answer
    sampling_method = models.CharField(max_length=32, blank=True, default="")  # how a rated file chose it (CxC)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["label_set", "image", "caption"],
                condition=Q(kind="image_caption"),
                name="labelset_pair_image_caption_unique",
            ),
            models.UniqueConstraint(
                fields=["label_set", "caption", "other_caption"],
                condition=Q(kind="caption_caption"),
                name="labelset_pair_caption_caption_unique",
            ),
            models.UniqueConstraint(
                fields=["label_set", "image", "other_image"],
                condition=Q(kind="image_image"),
                name="labelset_pair_image_image_unique",
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind="image_caption", image__isnull=False, caption__isnull=False)
                    & Q(other_image__isnull=True, other_caption__isnull=True)
                    | Q(kind="caption_caption", caption__isnull=False, other_caption__isnull=False)
                    & Q(image__isnull=True, other_image__isnull=True)
                    | Q(kind="image_image", image__isnull=False, other_image__isnull=False)
                    & Q(caption__isnull=True, other_caption__isnull=True)
                ),
                name="labelset_pair_kind_members",
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=0, score__lte=5), name="labelset_pair_score_range"
            ),
        ]
        indexes = [models.Index(fields=["label_set", "caption"], name="labelset_pair_caption")]

    def __str__(self):
        return f"{self.kind} pair of set {self.label_set_id}"

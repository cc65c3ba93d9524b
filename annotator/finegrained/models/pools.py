"""Outside image pools and gallery enlargement (MSCOCO-FG / Flickr30K-FG, Sec. 3.1).

An ImagePool holds images without captions attached to a dataset and kept apart from its test images: a
PoolImage is no Image, so no ranking run, campaign or export of the dataset sees it. A GalleryEnlargement
proposes, for every target (test) image, its most similar pool images; nothing joins the dataset until its
explicit add step, which makes each chosen pool image an Image of the dataset and records it as a
GalleryAddition.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.campaigns.models.campaign import Campaign
from annotator.datasets.models.dataset import Dataset, Image


class PoolStatus(models.TextChoices):
    IMPORTING = "importing", "Importing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


POOL_TRANSITIONS = {
    PoolStatus.IMPORTING: {PoolStatus.READY, PoolStatus.FAILED},
    PoolStatus.FAILED: {PoolStatus.IMPORTING},
    PoolStatus.READY: {PoolStatus.IMPORTING},
}


class ImagePool(models.Model):
    """Images without captions attached to a dataset (an outside pool for gallery enlargement)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=16, choices=PoolStatus.choices, default=PoolStatus.IMPORTING)
    images_total = models.PositiveIntegerField(default=0)
    images_done = models.PositiveIntegerField(default=0)
    # The last import's summary: imported, duplicates (byte-identical and near-identical, with the test
    # image each one repeats), offenders (files that are not images), or why it failed.
    report = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["dataset_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="pool_name_unique"),
            models.CheckConstraint(condition=Q(status__in=PoolStatus.values), name="pool_status_valid"),
        ]

    def __str__(self):
        return f"pool {self.name} of {self.dataset}"


class PoolImage(models.Model):
    pool = models.ForeignKey(ImagePool, on_delete=models.CASCADE, related_name="images")
    source_id = models.CharField(max_length=64)  # the file's name in the folder or zip, without its suffix
    file_name = models.CharField(max_length=500)
    file = models.FileField(upload_to="images/", max_length=500)
    thumbnail = models.FileField(upload_to="thumbnails/", max_length=500, blank=True)
    content_hash = models.CharField(max_length=64)  # sha256 of the file bytes
    perceptual_hash = models.CharField(max_length=64)  # 256-bit pHash (imagehash, hash size 16), hex
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()

    class Meta:
        ordering = ["pool_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "source_id"], name="pool_image_source_id_unique"),
            models.UniqueConstraint(fields=["pool", "content_hash"], name="pool_image_content_unique"),
        ]

    def __str__(self):
        return f"pool image {self.source_id}"


class EnlargementStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    PROPOSED = "proposed", "Proposed (preview before adding)"
    ADDED = "added", "Added to the gallery"
    FAILED = "failed", "Failed"


ENLARGEMENT_TRANSITIONS = {
    EnlargementStatus.QUEUED: {EnlargementStatus.RUNNING, EnlargementStatus.FAILED},
    EnlargementStatus.RUNNING: {EnlargementStatus.PROPOSED, EnlargementStatus.FAILED, EnlargementStatus.QUEUED},
    EnlargementStatus.FAILED: {EnlargementStatus.QUEUED},
    EnlargementStatus.PROPOSED: {EnlargementStatus.ADDED, EnlargementStatus.QUEUED},
    EnlargementStatus.ADDED: set(),
}


class GalleryEnlargement(models.Model):
    """For each target image, its top `k_image` pool images by image-image similarity and its captions' top
    `k_caption` by caption-image similarity, combined into the `keep` most similar (Sec. 3.1.2)."""

    pool = models.ForeignKey(ImagePool, on_delete=models.CASCADE, related_name="enlargements")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="enlargements")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=16, choices=EnlargementStatus.choices, default=EnlargementStatus.QUEUED)
    image_annotator = models.CharField(max_length=100, default="visual")  # image-image similarity
    caption_annotator = models.CharField(max_length=100, blank=True)  # caption-image; empty: none
    k_image = models.PositiveIntegerField(default=20)
    k_caption = models.PositiveIntegerField(default=20)
    keep = models.PositiveIntegerField(default=9)  # pool images kept per target (the paper: target + 9)
    # {"targets": {image pk: [[pool image pk, score, via], ...]}, "counts": {...}}: what the add step adds.
    proposal = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    added_at = models.DateTimeField(null=True, blank=True)
    verification = models.OneToOneField(
        Campaign, null=True, blank=True, on_delete=models.SET_NULL, related_name="enlargement"
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=EnlargementStatus.values), name="enlargement_status_valid"),
            models.CheckConstraint(
                condition=Q(keep__gte=1, k_image__gte=0, k_caption__gte=0), name="enlargement_sizes_valid"
            ),
            models.CheckConstraint(condition=Q(k_image__gte=1) | Q(k_caption__gte=1), name="enlargement_some_k"),
        ]

    def __str__(self):
        return f"enlargement {self.pk} of {self.dataset} from {self.pool.name}"


class GalleryAddition(models.Model):
    """One pool image added to the dataset's gallery for one target image; `image` is the new Image."""

    enlargement = models.ForeignKey(GalleryEnlargement, on_delete=models.CASCADE, related_name="additions")
    target = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="gallery_additions")
    pool_image = models.ForeignKey(PoolImage, on_delete=models.PROTECT, related_name="additions")
    image = models.OneToOneField(Image, on_delete=models.CASCADE, related_name="gallery_addition")
    rank = models.PositiveIntegerField()  # 1 is the most similar to the target
    score = models.FloatField()
    via = models.CharField(max_length=8)  # i2i, t2i or both: which similarity put it there
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["enlargement_id", "target_id", "rank"]
        constraints = [
            # Duplicates removed across targets: a pool image joins the gallery once.
            models.UniqueConstraint(fields=["enlargement", "pool_image"], name="addition_pool_image_once"),
            models.UniqueConstraint(fields=["enlargement", "target", "rank"], name="addition_rank_unique"),
            models.CheckConstraint(condition=Q(rank__gte=1), name="addition_rank_positive"),
            models.CheckConstraint(condition=Q(via__in=["i2i", "t2i", "both"]), name="addition_via_valid"),
            models.CheckConstraint(condition=~Q(target=models.F("image")), name="addition_not_its_target"),
        ]

    def __str__(self):
        return f"{self.pool_image} for {self.target} @{self.rank}"

from django.conf import settings
from django.db import models


class DatasetStatus(models.TextChoices):
    IMPORTING = "importing", "Importing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


DATASET_TRANSITIONS = {
    DatasetStatus.IMPORTING: {DatasetStatus.READY, DatasetStatus.FAILED},
    DatasetStatus.FAILED: {DatasetStatus.IMPORTING},
    DatasetStatus.READY: {DatasetStatus.IMPORTING},
}


class Dataset(models.Model):
    """A named collection of Images and Captions; `Caption.image` is the dataset's own pairing."""

    name = models.CharField(max_length=200, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="datasets"
    )
    status = models.CharField(max_length=16, choices=DatasetStatus.choices, default=DatasetStatus.IMPORTING)
    # Progress of the running (or last) import, stored so the UI and the API can show it.
    images_total = models.PositiveIntegerField(default=0)
    images_done = models.PositiveIntegerField(default=0)
    captions_total = models.PositiveIntegerField(default=0)
    captions_done = models.PositiveIntegerField(default=0)
    report = models.JSONField(default=dict, blank=True)  # the last import's summary or its offenders
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=DatasetStatus.values), name="dataset_status_valid"),
        ]

    def __str__(self):
        return self.name


class Image(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="images")
    source_id = models.CharField(max_length=64)  # e.g. the COCO image id, kept for every export
    file_name = models.CharField(max_length=500)  # the name in the source (COCO file_name, relative path)
    file = models.FileField(upload_to="images/", max_length=500)
    thumbnail = models.FileField(upload_to="thumbnails/", max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, db_index=True)  # sha256 of the file bytes
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()

    class Meta:
        ordering = ["dataset_id", "id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "source_id"], name="image_source_id_unique")]

    def __str__(self):
        return f"image {self.source_id}"


class Caption(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="captions")
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="captions")  # the original pair
    source_id = models.CharField(max_length=64)  # e.g. the COCO caption (annotation) id
    text = models.TextField()

    class Meta:
        ordering = ["dataset_id", "id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "source_id"], name="caption_source_id_unique")]

    def __str__(self):
        return f"caption {self.source_id}"

"""Instance classes of a dataset's images (COCO `instances_*.json`): what Plausible Match R-Precision needs.

Chun et al. call two items a plausible match when their images' class vectors (which of the d classes
appear) differ in at most zeta places; ECCV Caption reports PMRP with zeta = 0 (Sec. 2.1, 4.1).
"""

from django.db import models
from django.db.models import Q

from annotator.datasets.models.dataset import Dataset, Image


class Category(models.Model):
    """One instance class of a dataset, with the id its source uses (COCO: 1..90, 80 of them used)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="categories")
    source_id = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    supercategory = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["dataset_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "source_id"], name="category_source_id_unique"),
            models.CheckConstraint(condition=~Q(name=""), name="category_name_present"),
        ]

    def __str__(self):
        return self.name


class ImageCategory(models.Model):
    """An image holds at least one instance of a category (`instances`: how many were annotated)."""

    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="category_links")
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="image_links")
    instances = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["image", "category"], name="image_category_unique"),
            models.CheckConstraint(condition=Q(instances__gte=1), name="image_category_instances_positive"),
        ]

    def __str__(self):
        return f"{self.category} in image {self.image_id}"

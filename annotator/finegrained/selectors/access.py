"""Who may see and manage image pools, gallery enlargements, caption refinements and caption histories
(annotator.core.selectors.access holds the roles and the rules in words): whoever may open or manage the dataset."""

from __future__ import annotations

from django.db.models import QuerySet

from annotator.datasets.models.dataset import Dataset
from annotator.datasets.selectors.access import can_manage_dataset, datasets_managed_by, datasets_visible_to
from annotator.finegrained.models.pools import GalleryEnlargement, ImagePool
from annotator.finegrained.models.refinement import Refinement


def refinements_managed_by(user) -> QuerySet[Refinement]:
    """Caption refinements on the datasets `user` manages (proposals, correction HITs, their review)."""
    return Refinement.objects.filter(dataset__in=datasets_managed_by(user).values("pk"))


def can_manage_refinement(user, refinement: Refinement) -> bool:
    return can_manage_dataset(user, refinement.dataset)


def can_read_caption_history(user, dataset: Dataset) -> bool:
    """A caption's versions are part of the dataset: whoever may open the dataset may read them."""
    return datasets_visible_to(user).filter(pk=dataset.pk).exists()


def pools_visible_to(user) -> QuerySet[ImagePool]:
    """Image pools of the datasets `user` may see."""
    return ImagePool.objects.filter(dataset__in=datasets_visible_to(user).values("pk"))


def can_manage_pool(user, pool: ImagePool) -> bool:
    """Importing, enlarging, adding: the requester of the pool's dataset."""
    return can_manage_dataset(user, pool.dataset)


def enlargements_visible_to(user) -> QuerySet[GalleryEnlargement]:
    return GalleryEnlargement.objects.filter(dataset__in=datasets_visible_to(user).values("pk"))


def can_manage_enlargement(user, enlargement: GalleryEnlargement) -> bool:
    return can_manage_dataset(user, enlargement.dataset)

"""Dataset reads for the requester pages (and anyone else who needs the same visibility rule)."""

from django.db.models import Count, IntegerField, OuterRef, Prefetch, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Caption, Dataset, Image
from annotator.datasets.selectors.access import datasets_visible_to


def dataset_list_visible(*, user) -> QuerySet[Dataset]:
    """Datasets `user` may see (annotator.datasets.selectors.access.datasets_visible_to), with live image and caption
    counts."""
    datasets = datasets_visible_to(user).select_related("owner")
    # One subquery per count: joining images and captions at once would multiply their rows.
    return datasets.annotate(image_count=_count(Image), caption_count=_count(Caption)).order_by("name")


def _count(model) -> Coalesce:
    rows = model.objects.filter(dataset=OuterRef("pk")).order_by().values("dataset").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


def dataset_get_visible(*, user, dataset_id: int) -> Dataset:
    dataset = dataset_list_visible(user=user).filter(pk=dataset_id).first()
    if dataset is None:
        raise ApplicationError("No such dataset.", status=404)
    return dataset


def dataset_images_with_captions(*, dataset: Dataset) -> QuerySet[Image]:
    """The dataset's images in import order, each with its original captions prefetched."""
    return (
        Image.objects.filter(dataset=dataset)
        .order_by("id")
        .prefetch_related(Prefetch("captions", queryset=Caption.objects.order_by("id")))
    )


def dataset_progress(*, dataset: Dataset) -> dict:
    """Percent done of the running (or last) import, weighing images and captions alike."""
    total = dataset.images_total + dataset.captions_total
    done = min(dataset.images_done, dataset.images_total) + min(dataset.captions_done, dataset.captions_total)
    return {"percent": round(100 * done / total) if total else (100 if dataset.status == "ready" else 0)}

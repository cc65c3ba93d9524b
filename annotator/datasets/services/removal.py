"""Deleting a dataset whose import failed."""

from django.db import transaction
from django.db.models import ProtectedError

from annotator.core.errors import ApplicationError
from annotator.datasets.models.dataset import Dataset, DatasetStatus


def dataset_delete(*, dataset: Dataset) -> None:
    """Delete a failed dataset with whatever rows its import left. A ready or importing dataset is refused
    with a 409: campaigns, runs and label sets may stand on a ready one, and an import is writing the other.

    Locks the Dataset row (SELECT ... FOR UPDATE), so a retry queued at the same moment either finds the
    dataset gone or the delete finds it importing. Deleting one already gone raises a 404.
    """
    with transaction.atomic():
        locked = Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if locked is None:
            raise ApplicationError("No such dataset.", status=404)
        if locked.status != DatasetStatus.FAILED:
            raise ApplicationError(
                "Only a dataset whose import failed can be deleted; "
                f"this one is {locked.get_status_display().lower()}.",
                status=409,
            )
        try:
            locked.delete()
        except ProtectedError:
            raise ApplicationError("Other records refer to this dataset; it cannot be deleted.", status=409) from None

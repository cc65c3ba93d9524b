"""`manage.py find_duplicates --test DATASET --train DATASET`: the training images that repeat a test image,
byte for byte or nearly (ECCV Caption App. C), as JSON; a count on stderr."""

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.datasets.selectors.cross_duplicates import datasets_duplicates
from annotator.models import Dataset


class Command(BaseCommand):
    help = "Images of one dataset (a training split) that repeat an image of another (a test split)."

    def add_arguments(self, parser):
        parser.add_argument("--test", required=True, help="the test dataset (name or id)")
        parser.add_argument("--train", required=True, help="the dataset searched for its images (name or id)")

    def _dataset(self, reference: str) -> Dataset:
        dataset = Dataset.objects.filter(name=reference).first()
        if dataset is None and reference.isdigit():
            dataset = Dataset.objects.filter(pk=int(reference)).first()
        if dataset is None:
            raise CommandError(f"No dataset {reference!r}.")
        return dataset

    def handle(self, *args, **options):
        try:
            result = datasets_duplicates(test=self._dataset(options["test"]), train=self._dataset(options["train"]))
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stderr.write(
            f"{result['identical']} identical and {result['near']} near-identical images of {result['train']} "
            f"repeat images of {result['test']}"
        )
        self.stdout.write(json.dumps(result))

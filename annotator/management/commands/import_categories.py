"""`manage.py import_categories --dataset NAME --instances instances_val2014.json`: images' instance classes."""

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.datasets.services.categories import categories_import
from annotator.models import Dataset


class Command(BaseCommand):
    help = (
        "Import the instance classes of a dataset's images from a COCO instances_*.json file (categories and "
        "the category of every instance annotation), for Plausible Match R-Precision. Replaces earlier ones."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="the dataset's name")
        parser.add_argument("--instances", required=True, help="a COCO instances JSON file")

    def handle(self, *args, dataset, instances, **options):
        found = Dataset.objects.filter(name=dataset).first()
        if found is None:
            raise CommandError(f"There is no dataset {dataset!r}.")
        try:
            summary = categories_import(dataset=found, path=instances)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stdout.write(json.dumps(summary))

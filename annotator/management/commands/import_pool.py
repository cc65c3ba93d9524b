"""`manage.py import_pool --dataset NAME --name POOL --images DIR_OR_ZIP [--enlarge --keep 9 --add]`."""

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.finegrained.services.pools.enlargement import enlargement_add, enlargement_request
from annotator.finegrained.services.pools.imports import pool_import
from annotator.models import Dataset, GalleryEnlargement


class Command(BaseCommand):
    help = (
        "Import images without captions (a folder or a zip) as an outside pool of a dataset; duplicates of its "
        "test images are reported and not added. With --enlarge, score the pool against the test images and "
        "print the proposal's counts; with --add as well, add the proposal to the gallery."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="the dataset's name")
        parser.add_argument("--name", required=True, help="the pool's name")
        parser.add_argument("--images", required=True, help="a folder or a zip of images")
        parser.add_argument("--enlarge", action="store_true", help="score the pool and propose additions")
        parser.add_argument("--image-annotator", default="visual")
        parser.add_argument("--caption-annotator", default="", help="a registered clip annotator, optional")
        parser.add_argument("--k-image", type=int, default=20)
        parser.add_argument("--k-caption", type=int, default=20)
        parser.add_argument("--keep", type=int, default=9)
        parser.add_argument("--add", action="store_true", help="add the proposal (needs --enlarge)")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"There is no dataset {options['dataset']!r}.")
        try:
            pool = pool_import(dataset=dataset, name=options["name"], images_path=options["images"])
            summary = {"pool": pool.pk, "status": pool.status, **{k: v for k, v in pool.report.items() if k != "phase"}}
            if options["enlarge"]:
                enlargement = enlargement_request(
                    pool=pool,
                    image_annotator=options["image_annotator"],
                    caption_annotator=options["caption_annotator"],
                    k_image=options["k_image"],
                    k_caption=options["k_caption"],
                    keep=options["keep"],
                )  # with eager Celery (the embedded default) it is scored right here
                enlargement = GalleryEnlargement.objects.get(pk=enlargement.pk)
                if options["add"]:
                    enlargement = enlargement_add(enlargement=enlargement)
                summary["enlargement"] = {
                    "id": enlargement.pk,
                    "status": enlargement.status,
                    "error": enlargement.error,
                    "counts": enlargement.proposal.get("counts", {}),
                }
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stdout.write(json.dumps(summary))

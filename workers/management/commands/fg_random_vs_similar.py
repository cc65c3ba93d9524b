"""`manage.py fg_random_vs_similar --enlargement E --annotator NAME [--seed 0]`: MSCOCO-FG's Fig. 8. T2I R@1, R@5
and R@10 of one annotator over the gallery the enlargement made with similar images and over one enlarged with
as many random images of the same pool (workers/ranking/pool_difficulty.py), as JSON. A CLIP kind only: the
pool images have no caption for a pivot annotator. Runs here and now, on this machine's device."""

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.models import GalleryEnlargement
from workers.ranking.pool_difficulty import random_versus_similar


class Command(BaseCommand):
    help = "MSCOCO-FG Fig. 8: R@k over a gallery enlarged with similar images against one enlarged at random."

    def add_arguments(self, parser):
        parser.add_argument("--enlargement", type=int, required=True)
        parser.add_argument("--annotator", required=True, help="a registered annotator of a CLIP kind")
        parser.add_argument("--seed", type=int, default=0, help="the random draw's seed")

    def handle(self, *args, **options):
        enlargement = GalleryEnlargement.objects.filter(pk=options["enlargement"]).first()
        if enlargement is None:
            raise CommandError(f"No enlargement {options['enlargement']}.")
        try:
            result = random_versus_similar(
                enlargement=enlargement, annotator=options["annotator"], seed=options["seed"]
            )
        except ApplicationError as error:
            raise CommandError(error.message) from None
        self.stdout.write(json.dumps(result))

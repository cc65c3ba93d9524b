"""`manage.py fg_wrong_vs_correct --dataset D --annotator KIND`: MSCOCO-FG's Fig. 10. Each approved worker
correction of a refinement proposal gives (image, wrong text, corrected text), the two texts a few words
apart; the annotator scores both against the image (workers/ranking/scoring.py: the image seen through its
other captions), and picks the corrected one when it scores higher. Prints the pairs, the share picked right,
wrong and tied, as JSON. Pivot annotators only (tfidf_pivot, minilm_pivot)."""

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Caption, CaptionVersion, Dataset, VersionSource
from workers.ranking.scoring import pivot_pair_scores

PIVOT_KINDS = ("tfidf_pivot", "minilm_pivot")


class Command(BaseCommand):
    help = "MSCOCO-FG Fig. 10: does an annotator prefer the corrected text to the wrong one for its image?"

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="dataset name or id")
        parser.add_argument("--annotator", choices=PIVOT_KINDS, default="tfidf_pivot")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None and options["dataset"].isdigit():
            dataset = Dataset.objects.filter(pk=int(options["dataset"])).first()
        if dataset is None:
            raise CommandError(f"No dataset {options['dataset']!r}.")
        corrections = list(
            CaptionVersion.objects.filter(
                caption__dataset=dataset, source=VersionSource.CORRECTION, proposal__isnull=False
            ).values_list("caption_id", "caption__image_id", "text", "proposal__text")
        )
        if not corrections:
            raise CommandError(f"Dataset {dataset.name} has no approved corrections of a proposal yet.")
        captions = list(Caption.objects.filter(dataset=dataset).values_list("pk", "image_id", "text"))
        by_image: dict[int, list[tuple[int, str]]] = {}
        for pk, image, text in captions:
            by_image.setdefault(image, []).append((pk, text))
        pairs = [
            (correct, wrong, [text for pk, text in by_image.get(image, []) if pk != caption])
            for caption, image, correct, wrong in corrections
        ]
        # The vocabulary is every text the annotator reads: the captions and both texts of each pair.
        corpus = [text for _, _, text in captions] + [text for pair in pairs for text in pair[:2]]
        scores = pivot_pair_scores(kind=options["annotator"], pairs=pairs, corpus=corpus)
        right = sum(1 for correct, wrong in scores if correct > wrong)
        tied = sum(1 for correct, wrong in scores if correct == wrong)
        total = len(scores)
        self.stdout.write(
            json.dumps(
                {
                    "dataset": dataset.name,
                    "annotator": options["annotator"],
                    "pairs": total,
                    "right": right,
                    "wrong": total - right - tied,
                    "tied": tied,
                    "accuracy": right / total,
                }
            )
        )

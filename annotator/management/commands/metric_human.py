"""`manage.py metric_human (--label-set NAME | --campaign ID [--method M]) [--metric cider|spice | --scores FILE]`:
how well a captioning metric (or any metric's or model's stored scores of the pairs) agrees with people on
the judged image-caption pairs (Kendall's tau-b and Spearman's r with bootstrap intervals; seed 002's Table 1,
ECCV Caption's App. D.1), as JSON.

A scores file is CSV with the columns image,caption,score, or JSONL lines {"image": ..., "caption": ...,
"score": ...}; ids are the dataset's source ids (or CxC's spellings), '-' reads stdin."""

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.labels.selectors.labelsets import labelset_find
from annotator.models import Campaign
from annotator.research.selectors.metric_human import metric_human_agreement, metric_scores_read


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise CommandError(f"Cannot read the scores file {path}: {error.strerror}") from None


class Command(BaseCommand):
    help = (
        "Kendall's tau-b and Spearman's r between a captioning metric (or a file of any metric's scores of the "
        "pairs) and the human judgements of pairs."
    )

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--label-set", help="a label set (name, name@version or id): 0-5 scores or labels")
        source.add_argument("--campaign", type=int, help="a campaign's aggregated labels")
        parser.add_argument("--method", default=None, help="with --campaign: the aggregation method")
        scored = parser.add_mutually_exclusive_group()
        scored.add_argument("--metric", choices=["cider", "spice"], default=None, help="default cider")
        scored.add_argument(
            "--scores",
            metavar="FILE",
            help="any metric's or annotator's scores instead: CSV image,caption,score or JSONL with those keys",
        )
        parser.add_argument("--resamples", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options):
        try:
            label_set = campaign = scores = None
            if options["scores"]:
                scores = metric_scores_read(name=options["scores"], content=_read(options["scores"]))
            if options["label_set"]:
                label_set = labelset_find(reference=options["label_set"], dataset=None)
            else:
                campaign = Campaign.objects.filter(pk=options["campaign"]).first()
                if campaign is None:
                    raise CommandError(f"There is no campaign {options['campaign']}.")
            result = metric_human_agreement(
                label_set=label_set,
                campaign=campaign,
                method=options["method"],
                metric=options["metric"] or "cider",
                scores=scores,
                scores_name=options["scores"] or "",
                resamples=options["resamples"],
                seed=options["seed"],
            )
        except ApplicationError as error:
            raise CommandError(error.message) from None
        for note in result["notes"]:
            self.stderr.write(note)
        self.stdout.write(json.dumps(result))

"""`manage.py evaluate (--campaign ID | --labels FILE) --rankings FILE --format json`: ECCV Caption's metrics."""

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.analysis.metrics import evaluate
from annotator.errors import ApplicationError
from annotator.models import Campaign, ExportVariant
from annotator.services.evaluation import campaign_evaluate, rankings_parse


def _read(path: str, what: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise CommandError(f"Cannot read the {what} {path}: {error.strerror}") from None


class Command(BaseCommand):
    help = (
        "Score a model's rankings (ECCV JSON shape, lists best first) with R@1/5/10, R-Precision and mAP@R "
        "against a campaign's verified labels or an ECCV-style label file; queries are the label file's keys."
    )

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--campaign", type=int, help="Evaluate against this campaign's verified labels.")
        source.add_argument("--labels", help='A label file {"i2t": {id: [positive ids]}, "t2i": {...}}.')
        parser.add_argument("--rankings", required=True, help="The model's rankings file ('-' reads stdin).")
        parser.add_argument("--format", choices=["json"], default="json")
        parser.add_argument(
            "--variant",
            choices=ExportVariant.values,
            default=ExportVariant.LENIENT,
            help="With --campaign: lenient (100%% YES + Partially YES) or strict (100%% YES).",
        )
        parser.add_argument("--method", default=None, help="With --campaign: the aggregation method of the labels.")

    def handle(self, *args, **options):
        try:
            rankings = rankings_parse(raw=_read(options["rankings"], "rankings file"))
            if options["labels"]:
                labels = rankings_parse(raw=_read(options["labels"], "label file"), what="label file")
                results, counts = evaluate(rankings, labels)
            else:
                campaign = Campaign.objects.filter(pk=options["campaign"]).first()
                if campaign is None:
                    raise CommandError(f"There is no campaign {options['campaign']}.")
                outcome = campaign_evaluate(
                    campaign=campaign, rankings=rankings, method=options["method"], variant=options["variant"]
                )
                results, counts = outcome["verified"], outcome["counts"]
        except ApplicationError as error:
            raise CommandError(error.message) from None
        for direction, count in counts.items():
            if count["missing_rankings"]:
                self.stderr.write(
                    f"{direction}: {count['missing_rankings']} of {count['queries']} queries have no ranking "
                    "(scored as misses)"
                )
            if not count["queries"]:
                self.stderr.write(f"{direction}: no query with positives; its scores are null")
        self.stdout.write(json.dumps(results))

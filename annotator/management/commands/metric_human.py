"""`manage.py metric_human (--label-set NAME | --campaign ID [--method M]) [--metric cider|spice]`: how well a
captioning metric agrees with people on the judged image-caption pairs (Kendall's tau-b and Spearman's r
with bootstrap intervals; seed 002's Table 1, ECCV Caption's App. D.1), as JSON."""

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.labels.selectors.labelsets import labelset_find
from annotator.models import Campaign
from annotator.research.selectors.metric_human import metric_human_agreement


class Command(BaseCommand):
    help = "Kendall's tau-b and Spearman's r between a captioning metric and the human judgements of pairs."

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--label-set", help="a label set (name, name@version or id): 0-5 scores or labels")
        source.add_argument("--campaign", type=int, help="a campaign's aggregated labels")
        parser.add_argument("--method", default=None, help="with --campaign: the aggregation method")
        parser.add_argument("--metric", choices=["cider", "spice"], default="cider")
        parser.add_argument("--resamples", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options):
        try:
            label_set = campaign = None
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
                metric=options["metric"],
                resamples=options["resamples"],
                seed=options["seed"],
            )
        except ApplicationError as error:
            raise CommandError(error.message) from None
        for note in result["notes"]:
            self.stderr.write(note)
        self.stdout.write(json.dumps(result))

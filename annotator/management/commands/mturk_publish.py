"""Publish a live campaign's open HITs on Amazon Mechanical Turk as ExternalQuestions."""

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.crowd.mturk import campaign_publish_to_mturk, mturk_client
from annotator.models import Campaign


class Command(BaseCommand):
    help = "Create one MTurk HIT per open HIT of a live campaign (idempotent: published HITs are skipped)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", type=int, required=True, help="campaign id")
        parser.add_argument(
            "--base-url", required=True, help="this site's https address, e.g. https://vericap.example.org"
        )
        parser.add_argument("--production", action="store_true", help="real MTurk instead of the sandbox")
        parser.add_argument("--lifetime-days", type=int, default=7)

    def handle(self, *args, **options):
        campaign = Campaign.objects.filter(pk=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"No campaign {options['campaign']}.")
        try:
            created = campaign_publish_to_mturk(
                campaign=campaign,
                client=mturk_client(sandbox=not options["production"]),
                base_url=options["base_url"],
                lifetime_days=options["lifetime_days"],
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        self.stdout.write(
            f"Published {len(created)} HIT(s) on {'MTurk' if options['production'] else 'the MTurk sandbox'}."
        )

"""`manage.py export_labels --campaign ID (--to postgres --dsn DSN --table T | --to FILE --format F)`."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.labels.selectors.labels import label_method_resolve
from annotator.labels.services.exports.postgres import labels_export_postgres
from annotator.labels.services.exports.write import labels_write
from annotator.models import Campaign, ExportFormat, ExportVariant


class Command(BaseCommand):
    help = (
        "Export a campaign's verified labels: into a PostgreSQL table (COPY + upsert; re-running updates) "
        "or into a file (ECCV JSON, the ECCV split zip, JSONL or Crisscrossed CSV), streaming."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", type=int, required=True)
        parser.add_argument("--to", required=True, help="'postgres', a file path, or '-' for stdout.")
        parser.add_argument("--dsn", help="With --to postgres: the target database, e.g. postgres://me@host/db.")
        parser.add_argument("--table", help="With --to postgres: the table (created if missing), e.g. eccv_labels.")
        parser.add_argument("--format", choices=ExportFormat.values, default=ExportFormat.ECCV_JSON)
        parser.add_argument("--variant", choices=ExportVariant.values, default=ExportVariant.LENIENT)
        parser.add_argument("--method", default=None, help="Aggregation method (default: the campaign's best).")
        parser.add_argument("--merge-original", action="store_true", help="Add the dataset's original pairs.")

    def handle(self, *args, **options):
        campaign = Campaign.objects.filter(pk=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"There is no campaign {options['campaign']}.")
        try:
            if options["to"] == "postgres":
                if not options["dsn"] or not options["table"]:
                    raise CommandError("--to postgres needs --dsn and --table.")
                result = labels_export_postgres(
                    campaign=campaign, method=options["method"], dsn=options["dsn"], table=options["table"]
                )
                self.stderr.write(json.dumps(result))
                return
            method = label_method_resolve(campaign=campaign, method=options["method"])
            if options["format"] == ExportFormat.CXC_CSV and campaign.scale != "similarity":
                raise CommandError("The Crisscrossed CSV is for similarity (0-5) campaigns.")
            kwargs = {
                "campaign_id": campaign.pk,
                "format": options["format"],
                "method": method,
                "variant": options["variant"],
                "merge_original": options["merge_original"],
            }
            if options["to"] == "-":
                rows = labels_write(out=sys.stdout.buffer, **kwargs)
                sys.stdout.buffer.flush()
            else:
                with open(options["to"], "wb") as out:
                    rows = labels_write(out=out, **kwargs)
            self.stderr.write(f"{rows} rows written ({options['format']}, {options['variant']}, {method})")
        except ApplicationError as error:
            raise CommandError(error.message) from None
        except OSError as error:
            raise CommandError(f"Cannot write {options['to']}: {error.strerror}") from None

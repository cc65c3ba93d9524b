"""`manage.py labelset <import|crowd|original|derive|list|show|export|compare|bias> ...`: label sets.

Sets are named `name` (the latest version) or `name@version`; `--dataset` picks the dataset when a name is
used on several. Output is JSON on stdout (export writes the file), messages on stderr.
"""

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.core.errors import ApplicationError
from annotator.labels.selectors.labelsets import labelset_find
from annotator.labels.services.labelsets.builds import (
    labelset_derive,
    labelset_from_campaign,
    labelset_from_original,
)
from annotator.labels.services.labelsets.exports import FORMATS, labelset_export_chunks
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Campaign, Dataset, ExportVariant, LabelSet, LabelSetFormat, LabelSetOperation, QueryRule
from annotator.research.selectors.labelset_analyses import labelset_bias, labelset_compare


def _dataset(name: str | None) -> Dataset | None:
    if not name:
        return None
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        raise CommandError(f"There is no dataset {name!r}.")
    return dataset


def _summary(label_set: LabelSet) -> dict:
    return {
        "id": label_set.pk,
        "label": label_set.label,
        "dataset": label_set.dataset.name,
        "kind": label_set.kind,
        "stats": label_set.stats,
        "report": label_set.report,
    }


class Command(BaseCommand):
    help = "Import, make, combine, list, export and compare label sets (ECCV Caption, CxC, JSONL, crowd, original)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)

        imp = sub.add_parser("import", help="Import label files as a new set (or the next version of a name).")
        imp.add_argument("files", nargs="+", help="The file(s); ECCV split: both released files.")
        imp.add_argument("--dataset", required=True)
        imp.add_argument("--name", required=True)
        imp.add_argument("--format", choices=LabelSetFormat.values, help="Default: from the file names.")
        imp.add_argument("--threshold", type=float, help="CxC files: positive at score >= this.")
        imp.add_argument("--annotators", default="", help="Comma-separated models that proposed the candidates.")
        imp.add_argument("--description", default="")
        imp.add_argument("--public", action="store_true", help="Visible to every researcher and requester.")

        crowd = sub.add_parser("crowd", help="A crowd-verified set from a campaign's labels.")
        crowd.add_argument("--campaign", type=int, required=True)
        crowd.add_argument("--method", default=None)
        crowd.add_argument("--variant", choices=ExportVariant.values, default=ExportVariant.LENIENT)
        crowd.add_argument("--name", default=None)
        crowd.add_argument("--public", action="store_true")

        original = sub.add_parser("original", help="The dataset's original pairs as a set.")
        original.add_argument("--dataset", required=True)
        original.add_argument("--name", default="original")
        original.add_argument("--public", action="store_true")

        derive = sub.add_parser("derive", help="Union, intersection or difference of sets.")
        derive.add_argument("operation", choices=LabelSetOperation.values)
        derive.add_argument("sets", nargs="+", help="name, name@version or id, in order")
        derive.add_argument("--name", required=True)
        derive.add_argument("--queries", choices=QueryRule.values, default=None, help="Default: by the operation.")
        derive.add_argument("--dataset", default=None)
        derive.add_argument("--public", action="store_true")

        listing = sub.add_parser("list", help="Every set (or a dataset's) with its counts.")
        listing.add_argument("--dataset", default=None)

        show = sub.add_parser("show", help="One set's counts and import report.")
        show.add_argument("set")
        show.add_argument("--dataset", default=None)

        export = sub.add_parser(
            "export",
            help="Write a set as ECCV JSON, one ECCV split file, CSV, JSONL or a CxC file (cxc_sits/sts/sis).",
        )
        export.add_argument("set")
        export.add_argument("--to", required=True, help="File path, or - for stdout.")
        export.add_argument("--format", choices=FORMATS, default="eccv_json")
        export.add_argument("--direction", choices=["i2t", "t2i"], default=None, help="eccv_split only.")
        export.add_argument("--dataset", default=None)

        compare = sub.add_parser("compare", help="ECCV Caption Tables 2 and 3 for some sets.")
        compare.add_argument("sets", nargs="+")
        compare.add_argument("--queries-of", default=None, help="Count positives over this set's queries.")
        compare.add_argument("--baseline", default=None, help="Ratios relative to this set.")
        compare.add_argument("--dataset", default=None)

        bias = sub.add_parser("bias", help="Machine-annotator bias of a crowd set (ECCV Caption App. E.3).")
        bias.add_argument("set")
        bias.add_argument("--k", type=int, default=5)
        bias.add_argument("--dataset", default=None)

    def handle(self, *args, **options):
        try:
            result = getattr(self, f"_{options['action']}")(options)
        except ApplicationError as error:
            detail = {key: value for key, value in error.extra.items()}
            raise CommandError(error.message + (f" {json.dumps(detail)}" if detail else "")) from None
        if result is not None:
            self.stdout.write(json.dumps(result, indent=2, default=str))

    def _find(self, reference: str, options) -> LabelSet:
        return labelset_find(reference=reference, dataset=_dataset(options.get("dataset")))

    def _import(self, options):
        files = []
        for name in options["files"]:
            try:
                files.append((Path(name).name, Path(name).read_bytes()))
            except OSError as error:
                raise CommandError(f"Cannot read {name}: {error.strerror}") from None
        label_set = labelset_import(
            dataset=_dataset(options["dataset"]),
            name=options["name"],
            files=files,
            fmt=options["format"],
            threshold=options["threshold"],
            description=options["description"],
            annotators=options["annotators"].split(","),
            public=options["public"],
        )
        return _summary(label_set)

    def _crowd(self, options):
        campaign = Campaign.objects.filter(pk=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"There is no campaign {options['campaign']}.")
        label_set = labelset_from_campaign(
            campaign=campaign,
            method=options["method"],
            variant=options["variant"],
            name=options["name"],
            public=options["public"],
        )
        return _summary(label_set)

    def _original(self, options):
        label_set = labelset_from_original(
            dataset=_dataset(options["dataset"]), name=options["name"], public=options["public"]
        )
        return _summary(label_set)

    def _derive(self, options):
        operands = [self._find(reference, options) for reference in options["sets"]]
        label_set = labelset_derive(
            operands=operands,
            operation=options["operation"],
            name=options["name"],
            query_rule=options["queries"],
            public=options["public"],
        )
        return _summary(label_set)

    def _list(self, options):
        sets = LabelSet.objects.select_related("dataset").order_by("dataset__name", "name", "-version")
        dataset = _dataset(options["dataset"])
        if dataset is not None:
            sets = sets.filter(dataset=dataset)
        return [
            {"id": s.pk, "label": s.label, "dataset": s.dataset.name, "kind": s.kind, "stats": s.stats} for s in sets
        ]

    def _show(self, options):
        return _summary(self._find(options["set"], options))

    def _export(self, options):
        label_set = self._find(options["set"], options)
        chunks = labelset_export_chunks(label_set=label_set, fmt=options["format"], direction=options["direction"])
        if options["to"] == "-":
            for chunk in chunks:
                sys.stdout.write(chunk)
            return None
        with open(options["to"], "w", encoding="utf-8") as out:
            for chunk in chunks:
                out.write(chunk)
        self.stderr.write(f"Wrote {label_set.label} as {options['format']} to {options['to']}.")
        return None

    def _compare(self, options):
        sets = [self._find(reference, options) for reference in options["sets"]]
        queries_of = self._find(options["queries_of"], options) if options["queries_of"] else None
        baseline = self._find(options["baseline"], options) if options["baseline"] else None
        return labelset_compare(label_sets=sets, queries_of=queries_of, baseline=baseline)

    def _bias(self, options):
        return labelset_bias(label_set=self._find(options["set"], options), k=options["k"])

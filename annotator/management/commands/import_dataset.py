from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotator.core.errors import ApplicationError
from annotator.datasets.services.imports import dataset_import


class Command(BaseCommand):
    help = (
        "Import a dataset: COCO caption JSON (or JSONL/CSV of image path, caption) and an image folder or zip, "
        "optionally filtered by a Karpathy split file. Running it again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="dataset name (created if missing)")
        parser.add_argument("--captions", required=True, help="captions file: .json (COCO), .jsonl or .csv")
        parser.add_argument("--images", required=True, help="folder or .zip holding the image files")
        parser.add_argument("--split-file", help="Karpathy split file (dataset_coco.json form)")
        parser.add_argument("--split", help="split(s) to keep, comma-separated, e.g. test or train,restval")

    def handle(self, *args, name, captions, images, split_file, split, **options):
        bars: dict[str, tqdm] = {}
        quiet = options.get("verbosity", 1) == 0

        def progress(phase: str, done: int, total: int) -> None:
            bar = bars.get(phase)
            if bar is None:
                for other in bars.values():
                    other.close()
                bar = bars[phase] = tqdm(total=total or None, desc=phase, unit="", disable=quiet)
            bar.update(done - bar.n)

        try:
            dataset = dataset_import(
                name=name,
                captions_path=captions,
                images_path=images,
                split_path=split_file,
                split=split,
                progress=progress,
            )
        except ApplicationError as error:
            for bar in bars.values():
                bar.close()
            lines = [error.message, *(f"  - {line}" for line in error.extra.get("errors", []))]
            raise CommandError("\n".join(lines)) from None
        for bar in bars.values():
            bar.close()
        report = dataset.report
        self.stdout.write(
            self.style.SUCCESS(
                f"Dataset {dataset.name!r}: {dataset.images_total} images, {dataset.captions_total} captions "
                f"({report['images_created']} images and {report['captions_created']} captions new, "
                f"{report['images_unchanged']} and {report['captions_unchanged']} already there)."
            )
        )
        if report.get("duplicate_groups"):
            self.stdout.write(
                self.style.WARNING(
                    f"{report['duplicate_groups']} groups of images have identical files (stored once): "
                    + "; ".join(", ".join(group["image_ids"]) for group in report["duplicates"][:10])
                )
            )
        skipped = report.get("images_skipped_by_split")
        if skipped:
            self.stdout.write(
                f"Left out by the split: {skipped} images, {report['captions_skipped_by_split']} captions."
            )

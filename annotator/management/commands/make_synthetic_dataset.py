from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotator.scenarios.synthetic import make_synthetic_dataset


class Command(BaseCommand):
    help = (
        "Draw N synthetic scenes with five captions each and write OUT/images/*.png, OUT/captions.json "
        "(COCO form), OUT/truth.json (every caption-image pair that is truly described) and OUT/instances.json "
        "(the objects as COCO instance annotations). Deterministic per seed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--images", type=int, required=True, help="how many images (scenes)")
        parser.add_argument("--seed", type=int, default=0, help="random seed (same seed, same files)")
        parser.add_argument("--out", required=True, help="output directory (created if missing)")
        parser.add_argument("--size", default="320x240", help="image size WIDTHxHEIGHT (default 320x240)")

    def handle(self, *args, images, seed, out, size, **options):
        if images < 1:
            raise CommandError("--images must be at least 1")
        try:
            width, height = (int(part) for part in size.lower().split("x"))
        except ValueError:
            raise CommandError("--size must look like 320x240") from None
        if not (16 <= width <= 4096 and 16 <= height <= 4096):
            raise CommandError("--size must be between 16x16 and 4096x4096")
        bar = tqdm(total=images, unit="img", desc="drawing", disable=options.get("verbosity", 1) == 0)

        def progress(done, total):
            bar.update(done - bar.n)

        summary = make_synthetic_dataset(
            out_dir=Path(out), images=images, seed=seed, size=(width, height), progress=progress
        )
        bar.close()
        self.stdout.write(
            self.style.SUCCESS(
                f"Wrote {summary['images']} images and {summary['captions']} captions to {summary['out_dir']} "
                f"({summary['positives_per_caption_mean']:.2f} true images per caption on average, "
                f"at most {summary['positives_per_caption_max']})."
            )
        )

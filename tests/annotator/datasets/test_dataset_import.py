"""dataset_import: formats, Pillow checks, every offender named, nothing half-imported, idempotent."""

import csv
import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from annotator.core.errors import ApplicationError
from annotator.datasets.services import storage as import_storage
from annotator.datasets.services.imports import dataset_import
from annotator.models import Caption, Dataset, DatasetStatus, Image
from annotator.scenarios.synthetic import make_synthetic_dataset
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def picture_bytes(color, size=(40, 30), fmt="PNG") -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format=fmt)
    return buffer.getvalue()


def write_coco(
    root: Path,
    images: dict[int, bytes],
    captions: list[tuple[int, int, str]],
    *,
    extra_images: list[dict] | None = None,
) -> Path:
    """images: id -> file bytes (written as <id>.png); captions: (caption id, image id, text)."""
    folder = root / "images"
    folder.mkdir(parents=True, exist_ok=True)
    for image_id, data in images.items():
        (folder / f"{image_id}.png").write_bytes(data)
    coco = {
        "images": [{"id": i, "file_name": f"{i}.png"} for i in images] + (extra_images or []),
        "annotations": [{"id": c, "image_id": i, "caption": t} for c, i, t in captions],
    }
    path = root / "captions.json"
    path.write_text(json.dumps(coco))
    return path


def small_coco(root: Path, n: int = 3) -> Path:
    images = {i: picture_bytes((40 * i % 256, 80, 120)) for i in range(1, n + 1)}
    captions = [(100 + 10 * i + k, i, f"Picture {i}, caption {k}.") for i in images for k in range(2)]
    return write_coco(root, images, captions)


def stored_files(media: Path) -> list[str]:
    return sorted(str(p.relative_to(media)) for p in media.rglob("*") if p.is_file()) if media.exists() else []


def test_synthetic_500_imports_500_images_and_2500_captions_and_a_second_import_adds_nothing(tmp_path, settings):
    out = tmp_path / "syn"
    make_synthetic_dataset(out_dir=out, images=500, seed=11, size=(48, 36))
    dataset = dataset_import(name="syn", captions_path=out / "captions.json", images_path=out / "images")
    assert (Image.objects.filter(dataset=dataset).count(), Caption.objects.filter(dataset=dataset).count()) == (
        500,
        2500,
    )
    assert dataset.status == DatasetStatus.READY
    assert (dataset.images_done, dataset.images_total, dataset.captions_done, dataset.captions_total) == (
        500,
        500,
        2500,
        2500,
    )
    files_before = stored_files(Path(settings.MEDIA_ROOT))
    assert len(files_before) == 1000  # each image and its thumbnail

    again = dataset_import(name="syn", captions_path=out / "captions.json", images_path=out / "images")
    assert again.pk == dataset.pk
    assert Image.objects.count() == 500 and Caption.objects.count() == 2500
    assert stored_files(Path(settings.MEDIA_ROOT)) == files_before
    assert again.report["images_created"] == 0 and again.report["captions_created"] == 0
    assert again.report["images_unchanged"] == 500 and again.report["captions_unchanged"] == 2500


def test_source_ids_hash_thumbnail_and_original_pairing_are_kept(tmp_path, settings):
    settings.THUMBNAIL_SIZE = 16
    data = picture_bytes((10, 200, 30), size=(80, 40))
    path = write_coco(tmp_path, {391895: data}, [(770337, 391895, "A green rectangle.")])
    dataset = dataset_import(name="ids", captions_path=path, images_path=tmp_path / "images")
    image = Image.objects.get(dataset=dataset)
    assert image.source_id == "391895" and image.file_name == "391895.png"
    assert (image.width, image.height) == (80, 40)
    assert image.content_hash == hashlib.sha256(data).hexdigest()
    with default_storage.open(image.file.name) as handle:
        assert handle.read() == data
    with default_storage.open(image.thumbnail.name) as handle:
        thumb = PILImage.open(io.BytesIO(handle.read()))
        assert thumb.format == "JPEG" and max(thumb.size) <= 16
    caption = Caption.objects.get(dataset=dataset)
    assert (caption.source_id, caption.image_id, caption.text) == ("770337", image.pk, "A green rectangle.")


def test_corrupt_image_and_caption_for_unknown_image_are_both_named_and_nothing_is_imported(tmp_path, settings):
    images = {1: picture_bytes((1, 2, 3)), 2: picture_bytes((4, 5, 6))[:60]}  # 2 is truncated
    path = write_coco(tmp_path, images, [(11, 1, "ok"), (12, 2, "ok too"), (13, 999, "for nobody")])
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="bad", captions_path=path, images_path=tmp_path / "images")
    errors = caught.value.extra["errors"]
    assert len(errors) == 2
    assert any(e.startswith("image 2") and "2.png" in e for e in errors)
    assert any(e.startswith("caption 13") and "unknown image 999" in e for e in errors)
    assert {(o["kind"], o["id"]) for o in caught.value.extra["offenders"]} == {("image", "2"), ("caption", "13")}
    assert Image.objects.count() == 0 and Caption.objects.count() == 0
    assert stored_files(Path(settings.MEDIA_ROOT)) == []
    dataset = Dataset.objects.get(name="bad")
    assert dataset.status == DatasetStatus.FAILED
    assert dataset.report["errors"] == errors


def test_every_kind_of_bad_input_is_named(tmp_path, settings):
    settings.IMPORT_MAX_IMAGE_BYTES = 5_000
    folder = tmp_path / "images"
    folder.mkdir()
    (folder / "not-an-image.png").write_text("hello, I am text")
    (folder / "big.png").write_bytes(picture_bytes((9, 9, 9)) + b"\0" * 6_000)
    (folder / "good.png").write_bytes(picture_bytes((1, 1, 1)))
    coco = {
        "images": [
            {"id": 1, "file_name": "good.png"},
            {"id": 1, "file_name": "good.png"},  # duplicate image id
            {"id": 2, "file_name": "missing.png"},
            {"id": 3, "file_name": "not-an-image.png"},
            {"id": 4, "file_name": "big.png"},
            {"id": 5, "file_name": "../outside.png"},
            {"id": [1], "file_name": "good.png"},
        ],
        "annotations": [
            {"id": 10, "image_id": 1, "caption": "fine"},
            {"id": 10, "image_id": 1, "caption": "duplicate caption id"},
            {"id": 11, "image_id": 1, "caption": "   "},
            {"id": 12, "image_id": 77, "caption": "unknown image"},
        ],
    }
    (tmp_path / "outside.png").write_bytes(picture_bytes((2, 2, 2)))
    path = tmp_path / "captions.json"
    path.write_text(json.dumps(coco))
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="many", captions_path=path, images_path=folder)
    text = "\n".join(caught.value.extra["errors"])
    assert "image 1 (images[1]): image id appears more than once" in text
    assert "image 2 (images[2]): file 'missing.png' not found" in text
    assert "image 3 (images[3]): file 'not-an-image.png' is not a readable image" in text
    assert "image 4 (images[4])" in text and "IMPORT_MAX_IMAGE_BYTES" in text
    assert "image 5 (images[5]): file '../outside.png' not found" in text
    assert "image (images[6]): id [1] is not an integer" in text
    assert "caption 10 (annotations[1]): caption id appears more than once" in text
    assert "caption 11 (annotations[2]): has an empty caption" in text
    assert "caption 12 (annotations[3]): refers to unknown image 77" in text
    assert caught.value.extra["error_count"] == 9
    assert Image.objects.count() == 0


def test_malformed_json_is_named(tmp_path):
    (tmp_path / "images").mkdir()
    path = tmp_path / "captions.json"
    path.write_text('{"images": [{"id": 1, "file_name": "1.png"}, {"id": 2,,}]}')
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="broken", captions_path=path, images_path=tmp_path / "images")
    assert any(e.startswith("file (captions.json): malformed JSON") for e in caught.value.extra["errors"])


def test_a_coco_instances_file_is_named_as_object_annotations_not_captions(tmp_path):
    """The import's reader says what the upload says: object annotations (category_id, bbox) are not captions."""
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "1.png").write_bytes(picture_bytes((9, 9, 9)))
    path = tmp_path / "instances.json"
    annotation = {"id": 5, "image_id": 1, "category_id": 18, "bbox": [0, 0, 4, 4], "segmentation": [[0, 0, 4, 4]]}
    path.write_text(json.dumps({"images": [{"id": 1, "file_name": "1.png"}], "annotations": [annotation]}))
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="instances", captions_path=path, images_path=tmp_path / "images")
    assert caught.value.extra["errors"][0].startswith(
        "caption 5 (annotations[0]): is an object annotation (category_id, bbox, segmentation), not a caption"
    )


def test_missing_paths_are_named_before_anything_is_created(tmp_path):
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="nothing", captions_path=tmp_path / "nope.json", images_path=tmp_path / "nope")
    errors = caught.value.extra["errors"]
    assert any("captions file not found" in e for e in errors) and any(
        "images folder or zip not found" in e for e in errors
    )
    assert not Dataset.objects.filter(name="nothing").exists()


def test_pixel_limit_and_allowed_formats_come_from_settings(tmp_path, settings):
    settings.IMPORT_MAX_IMAGE_PIXELS = 1000
    folder = tmp_path / "images"
    folder.mkdir()
    (folder / "huge.png").write_bytes(picture_bytes((0, 0, 0), size=(100, 100)))
    (folder / "photo.jpg").write_bytes(picture_bytes((0, 0, 0), size=(10, 10), fmt="JPEG"))
    (folder / "tiny.gif").write_bytes(picture_bytes((0, 0, 0), size=(10, 10), fmt="GIF"))
    settings.IMPORT_ALLOWED_FORMATS = ["JPEG", "PNG"]
    path = tmp_path / "captions.jsonl"
    path.write_text(
        "\n".join(json.dumps({"image": name, "caption": "x"}) for name in ("huge.png", "photo.jpg", "tiny.gif"))
    )
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="limits", captions_path=path, images_path=folder)
    text = "\n".join(caught.value.extra["errors"])
    assert "image huge.png" in text and "100x100 pixels, over the limit" in text
    assert "image tiny.gif" in text and "is a GIF image" in text
    assert "photo.jpg" not in text


def test_a_decompression_bomb_is_refused_from_its_header(tmp_path, settings):
    """A tiny file that claims 10000x10000 pixels is refused without decoding it."""
    settings.IMPORT_MAX_IMAGE_PIXELS = 64_000_000
    bomb = io.BytesIO()
    PILImage.new("1", (10000, 10000)).save(bomb, format="PNG")  # compresses to a few KB
    assert len(bomb.getvalue()) < 200_000
    path = write_coco(tmp_path, {1: bomb.getvalue()}, [(1, 1, "a bomb")])
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="bomb", captions_path=path, images_path=tmp_path / "images")
    assert "10000x10000 pixels, over the limit" in caught.value.extra["errors"][0]


def test_zip_with_a_top_folder_and_jsonl_csv_forms(tmp_path):
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("val2014/", "")
        zf.writestr("val2014/a.png", picture_bytes((200, 0, 0)))
        zf.writestr("val2014/sub/b.png", picture_bytes((0, 200, 0)))
    jsonl = tmp_path / "captions.jsonl"
    jsonl.write_text(
        json.dumps({"image": "a.png", "caption": "red"})
        + "\n\n"
        + json.dumps({"image": "sub/b.png", "caption": "green", "image_id": "B", "caption_id": "g1"})
        + "\n"
        + json.dumps({"image": "a.png", "caption": "still red"})
        + "\n"
    )
    dataset = dataset_import(name="zipped", captions_path=jsonl, images_path=archive)
    assert sorted(Image.objects.filter(dataset=dataset).values_list("source_id", flat=True)) == ["B", "a.png"]
    assert sorted(Caption.objects.filter(dataset=dataset).values_list("source_id", "image__source_id", "text")) == [
        ("1", "a.png", "red"),
        ("4", "a.png", "still red"),
        ("g1", "B", "green"),
    ]

    rows = tmp_path / "captions.csv"
    with open(rows, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image", "caption"])
        writer.writerow(["a.png", "A red square, with a comma."])
        writer.writerow(["sub/b.png", "A green square."])
    dataset = dataset_import(name="csv", captions_path=rows, images_path=archive)
    assert sorted(Caption.objects.filter(dataset=dataset).values_list("source_id", "image__source_id", "text")) == [
        ("2", "a.png", "A red square, with a comma."),
        ("3", "sub/b.png", "A green square."),
    ]


def test_karpathy_split_keeps_only_the_requested_split(tmp_path):
    path = small_coco(tmp_path, n=4)
    split_file = tmp_path / "dataset_coco.json"
    split_file.write_text(
        json.dumps(
            {
                "images": [
                    {"cocoid": 1, "imgid": 0, "split": "test", "filename": "1.png"},
                    {"cocoid": 2, "imgid": 1, "split": "train", "filename": "2.png"},
                    {"cocoid": 3, "imgid": 2, "split": "restval", "filename": "3.png"},
                    {"cocoid": 4, "imgid": 3, "split": "val", "filename": "4.png"},
                ]
            }
        )
    )
    dataset = dataset_import(
        name="karpathy",
        captions_path=path,
        images_path=tmp_path / "images",
        split_path=split_file,
        split="train,restval",
    )
    assert sorted(Image.objects.filter(dataset=dataset).values_list("source_id", flat=True)) == ["2", "3"]
    assert Caption.objects.filter(dataset=dataset).count() == 4
    assert set(Caption.objects.filter(dataset=dataset).values_list("image__source_id", flat=True)) == {"2", "3"}
    assert dataset.report["images_skipped_by_split"] == 2 and dataset.report["captions_skipped_by_split"] == 4
    with pytest.raises(ApplicationError) as caught:
        dataset_import(
            name="karpathy-none",
            captions_path=path,
            images_path=tmp_path / "images",
            split_path=split_file,
            split="nosuchsplit",
        )
    assert "lists no images to import in split nosuchsplit" in caught.value.extra["errors"][0]


def test_duplicate_files_keep_their_rows_share_one_stored_file_and_are_reported(tmp_path, settings):
    same = picture_bytes((5, 5, 5))
    path = write_coco(
        tmp_path, {1: same, 2: picture_bytes((6, 6, 6)), 3: same}, [(10, 1, "one"), (20, 2, "two"), (30, 3, "three")]
    )
    dataset = dataset_import(name="dups", captions_path=path, images_path=tmp_path / "images")
    one, three = Image.objects.get(source_id="1"), Image.objects.get(source_id="3")
    assert one.file.name == three.file.name and one.thumbnail.name == three.thumbnail.name
    assert dataset.report["duplicate_groups"] == 1
    assert dataset.report["duplicates"][0]["image_ids"] == ["1", "3"]
    assert len(stored_files(Path(settings.MEDIA_ROOT))) == 4  # two distinct files, two thumbnails


def test_a_failure_while_writing_removes_this_runs_rows_and_files(tmp_path, settings, monkeypatch):
    """Batches commit, so a mid-write failure is undone by hand: no rows, no files from the run."""
    monkeypatch.setattr(import_storage, "IMAGE_BATCH", 2)
    first = small_coco(tmp_path / "first", n=2)
    dataset = dataset_import(name="grow", captions_path=first, images_path=tmp_path / "first" / "images")
    before = stored_files(Path(settings.MEDIA_ROOT))

    images = {i: picture_bytes((i, 2 * i, 3)) for i in range(3, 10)}
    second = write_coco(tmp_path / "second", images, [(100 + i, i, f"caption {i}") for i in images])
    real_thumbnail = import_storage.make_thumbnail
    calls = {"n": 0}

    def failing_thumbnail(data):
        calls["n"] += 1
        if calls["n"] == 5:  # after two batches committed, in the third
            raise OSError("storage went away")
        return real_thumbnail(data)

    monkeypatch.setattr(import_storage, "make_thumbnail", failing_thumbnail)
    with pytest.raises(OSError):
        dataset_import(name="grow", captions_path=second, images_path=tmp_path / "second" / "images")
    dataset.refresh_from_db()
    assert dataset.status == DatasetStatus.READY  # it was ready before; its earlier content is intact
    assert "storage went away" in dataset.report["errors"][0]
    assert sorted(Image.objects.values_list("source_id", flat=True)) == ["1", "2"]
    assert Caption.objects.count() == 4
    assert stored_files(Path(settings.MEDIA_ROOT)) == before


def test_a_changed_file_or_caption_under_an_imported_id_is_refused(tmp_path):
    path = small_coco(tmp_path, n=2)
    dataset_import(name="stable", captions_path=path, images_path=tmp_path / "images")
    (tmp_path / "images" / "1.png").write_bytes(picture_bytes((99, 99, 99)))
    coco = json.loads(path.read_text())
    coco["annotations"][-1]["caption"] = "edited"
    path.write_text(json.dumps(coco))
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="stable", captions_path=path, images_path=tmp_path / "images")
    text = "\n".join(caught.value.extra["errors"])
    assert "image 1 (images[0]): was imported before with a different file" in text
    assert "caption 121 (annotations[3]): was imported before with a different text or image" in text
    assert Dataset.objects.get(name="stable").status == DatasetStatus.READY


def test_another_requesters_dataset_is_refused(tmp_path):
    path = small_coco(tmp_path, n=1)
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    dataset_import(name="alice-set", captions_path=path, images_path=tmp_path / "images", owner=alice)
    with pytest.raises(ApplicationError) as caught:
        dataset_import(name="alice-set", captions_path=path, images_path=tmp_path / "images", owner=bob)
    assert caught.value.status == 403


def test_command_imports_and_names_offenders(tmp_path, capsys):
    path = small_coco(tmp_path, n=2)
    call_command("import_dataset", name="cmd", captions=str(path), images=str(tmp_path / "images"), verbosity=0)
    assert "2 images, 4 captions" in capsys.readouterr().out
    (tmp_path / "images" / "2.png").write_bytes(b"garbage")
    with pytest.raises(CommandError) as caught:
        call_command("import_dataset", name="cmd2", captions=str(path), images=str(tmp_path / "images"), verbosity=0)
    assert "image 2 (images[1]): file '2.png' is not a readable image" in str(caught.value)

"""Crisscrossed Captions' released test files: all three import with no unknown id on a dataset that carries
the COCO ids, and export again with CxC's columns, id spellings, scores and sampling methods."""

import gzip

import pytest

from annotator.labels.selectors.cxc_ids import coco_split, cxc_ids
from annotator.labels.services.labelsets.exports import labelset_export_chunks
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.models import Caption, Dataset, Image, LabelSetPair
from tests.annotator.cxc.released_support import FILES, RELEASED, coco_test_split

pytestmark = pytest.mark.django_db


def test_coco_ids_are_spelled_as_cxc_spells_them_and_other_ids_are_left_alone():
    assert coco_split(file_name="COCO_val2014_000000365325.jpg", source_id="365325") == "COCO_val2014"
    assert coco_split(file_name="COCO_val2014_000000365325.jpg", source_id="18") is None
    assert coco_split(file_name="365325.jpg", source_id="365325") is None
    dataset = Dataset.objects.create(name="plain")
    image = Image.objects.create(dataset=dataset, source_id="18", file_name="18.png", width=1, height=1)
    caption = Caption.objects.create(dataset=dataset, image=image, source_id="391895", text="x")
    assert cxc_ids(dataset_id=dataset.pk) == {"image": {image.pk: "18"}, "caption": {caption.pk: "391895"}}


@pytest.mark.parametrize("fmt", list(FILES))
def test_a_released_cxc_file_imports_with_no_unknown_id_and_exports_as_released(fmt):
    dataset = coco_test_split()
    assert Image.objects.filter(dataset=dataset).count() == 5000
    assert Caption.objects.filter(dataset=dataset).count() == 25000
    raw = gzip.decompress((RELEASED / f"{FILES[fmt]}.gz").read_bytes())
    label_set = labelset_import(dataset=dataset, name=fmt, files=[(FILES[fmt], raw)], fmt=fmt)
    report = label_set.report
    assert report["pairs_with_unknown_ids"] == 0 and report["unknown_ids"] == {"image": 0, "caption": 0}
    released = raw.decode().splitlines()
    assert LabelSetPair.objects.filter(label_set=label_set).count() == len(released) - 1
    # SIS positives start at 2.5, STS and SITS at 3.
    threshold = {"cxc_sis": 2.5}.get(fmt, 3.0)
    assert label_set.threshold == threshold
    assert not LabelSetPair.objects.filter(label_set=label_set, score__lt=threshold, is_positive=True).exists()
    assert not LabelSetPair.objects.filter(label_set=label_set, score__gte=threshold, is_positive=False).exists()

    exported = "".join(labelset_export_chunks(label_set=label_set, fmt=fmt)).splitlines()
    assert exported[0] == released[0]  # the same columns, in the same order
    assert exported[1:] == released[1:]  # every line byte for byte, in the released order

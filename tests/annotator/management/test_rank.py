"""`manage.py rank`: registers the annotator, runs in-process without a broker, reports; bad input is an error."""

import pytest
from django.core.management import CommandError, call_command

from annotator import models
from tests.ranking_support import ranking_dataset

pytestmark = pytest.mark.django_db


@pytest.mark.django_db(transaction=True)  # commits for real, so the eager task runs inside the command
def test_rank_command_runs_a_built_in_annotator_in_process(capsys):
    dataset, _images, _captions = ranking_dataset(name="tiny")
    call_command("rank", "--dataset", "tiny", "--annotator", "tfidf_pivot", "--top-k", "4")
    output = capsys.readouterr().out
    run = models.RankingRun.objects.get(dataset=dataset)
    assert run.status == models.RunStatus.SUCCEEDED and run.top_k == 4
    assert f"Run {run.pk} (tfidf_pivot on tiny) succeeded" in output
    assert models.MachineAnnotator.objects.get(name="tfidf_pivot").kind == "tfidf_pivot"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--dataset", "nope", "--annotator", "tfidf_pivot"], "No dataset named"),
        (["--dataset", "tiny", "--annotator", "mystery"], "give --kind"),
        (["--dataset", "tiny", "--annotator", "c", "--kind", "clip"], "needs the directory"),
        (["--dataset", "tiny", "--annotator", "tfidf_pivot", "--top-k", "0"], "top_k must be between"),
    ],
)
def test_rank_command_reports_bad_input(arguments, message):
    ranking_dataset(name="tiny")
    with pytest.raises(CommandError, match=message):
        call_command("rank", *arguments)

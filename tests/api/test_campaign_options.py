"""Campaign options are declared once (OPTION_FIELDS, OPTION_HELP): the API's input and output and the CLI's
flags are made from that list, so none of them can miss an option."""

from io import StringIO

import pytest
from django.core.management import call_command

from annotator.campaigns.services.options import OPTION_FIELDS, OPTION_HELP
from annotator.management.commands.build_campaign import Command as BuildCampaign
from api.serializers import CampaignCreateSerializer, CampaignSerializer


def test_the_api_returns_every_option_its_create_accepts():
    # A preset is a way to fill the options at creation (annotator.campaigns.services.presets), not one of them.
    accepted = set(CampaignCreateSerializer().fields) - {"dataset", "runs", "preset"}
    assert accepted == set(OPTION_FIELDS)
    assert accepted <= set(CampaignSerializer().fields)


def test_the_schema_describes_each_option_in_the_forms_words():
    fields = CampaignSerializer().fields
    assert all(fields[name].help_text == text for name, text in OPTION_HELP.items())


def test_build_campaign_has_a_flag_for_every_option():
    parser = BuildCampaign().create_parser("manage.py", "build_campaign")
    destinations = {action.dest for action in parser._actions}
    assert set(OPTION_FIELDS) - {"rationale_followups"} <= destinations
    assert "no_rationale_followups" in destinations


@pytest.mark.django_db
def test_a_boolean_and_a_choice_option_reach_the_campaign_from_the_command_line():
    """--no-machine-prior and --label-model were not flags before; now they set the campaign."""
    from annotator.models import Campaign
    from tests.annotator.campaign_support import add_run, make_dataset
    from tests.factories import UserFactory

    dataset = make_dataset(images=12, captions_per_image=2)
    dataset.owner = UserFactory()
    dataset.save(update_fields=["owner"])
    run = add_run(dataset=dataset, name="tfidf", seed=1, top_k=10)
    out = StringIO()
    call_command(
        "build_campaign",
        "--dataset",
        dataset.name,
        "--runs",
        str(run.pk),
        "--name",
        "flags",
        "--no-machine-prior",
        "--label-model",
        "dawid_skene",
        "--qualification-items",
        "0",
        "--gold-exclusion-depth",
        "5",
        stdout=out,
    )
    campaign = Campaign.objects.get(name="flags")
    assert campaign.machine_prior is False and campaign.label_model == "dawid_skene"

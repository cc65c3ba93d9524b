"""Requester pages for campaigns: list, create, detail with pre-launch statistics, state buttons.

Requester-only; a requester sees only their own campaigns: any other id is
a 404. Every state change is a POST with CSRF that calls a service; service errors render as a 4xx page.
"""

from decimal import Decimal, InvalidOperation

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, re_path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator.campaigns.models.campaign import Campaign, CampaignStatus
from annotator.campaigns.selectors.access import campaigns_managed_by
from annotator.campaigns.selectors.campaigns import (
    campaign_cost,
    campaign_get_managed,
    campaign_overview,
    runs_available,
)
from annotator.campaigns.selectors.crowd_work import bonuses_failed, campaign_spend
from annotator.campaigns.selectors.gold_exposure import (
    gold_exposure_summary,
    qualification_pool_summary,
)
from annotator.campaigns.selectors.listing import CAMPAIGN_SORTS, campaign_filter_read, campaign_list_filtered
from annotator.campaigns.services.build import campaign_add_run, campaign_build_request
from annotator.campaigns.services.lifecycle import (
    campaign_create,
    campaign_finish,
    campaign_launch,
    campaign_pause,
    campaign_resume,
)
from annotator.campaigns.services.options import OPTION_FIELDS, OPTION_GROUPS, OPTION_HELP
from annotator.campaigns.services.policy import campaign_policy_update
from annotator.campaigns.services.presets import PRESET_CHOICES, preset_options
from annotator.core.errors import ApplicationError
from annotator.core.jobs import job_stalled, job_view
from annotator.core.models.accounts import Role
from annotator.core.selectors.listing import PAGE_SIZE
from annotator.core.views.access import role_required
from annotator.datasets.models.dataset import Dataset, DatasetStatus
from annotator.ranking.models.ranking import RankingRun

# The form's fields that are not campaign options, each after the option it follows on the page.
FORM_ONLY_AFTER = {"name": ("dataset", "runs"), "direction": ("preset",)}
FIELDSETS = [
    (title, [field for name in names for field in (name, *FORM_ONLY_AFTER.get(name, ()))])
    for title, names in OPTION_GROUPS
]
# Left empty, these take the campaign's default (a form sent without them still makes a campaign).
DEFAULTED = (
    "query_list",
    "sampling",
    "cocaption_share",
    "random_pair_share",
    "tolerated_gold_misses",
    "label_model",
    "settle_probability",
    "settle_min_answers",
    "max_answers_per_pair",
    "gold_light_share",
    "qualification_positive_share",
)


class RunChoices(forms.CheckboxSelectMultiple):
    """Checkboxes that carry their run's dataset, so the page can show only the chosen dataset's runs."""

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex=subindex, attrs=attrs)
        instance = getattr(value, "instance", None)
        if instance is not None:
            option["attrs"]["data-dataset"] = str(instance.dataset_id)
        return option


class RunField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, run: RankingRun) -> str:
        return f"{run.annotator.name} on {run.dataset.name} (run {run.pk}, top {run.top_k})"


class CampaignForm(forms.ModelForm):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none())
    preset = forms.ChoiceField(
        choices=PRESET_CHOICES,
        required=False,
        help_text="Crisscrossed Captions: the similarity scale, 5 ratings per pair averaged (mean label), CxC's "
        "threshold per task (3 STS/SITS, 2.5 SIS), no follow-up HITs, no machine prior and no qualification test. "
        "An option you change from its default here is kept (set qualification items to ask for a test).",
    )
    runs = RunField(
        queryset=RankingRun.objects.none(), widget=RunChoices, help_text="Succeeded ranking runs of the dataset."
    )

    class Meta:
        model = Campaign
        fields = list(OPTION_FIELDS)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = Dataset.objects.filter(status=DatasetStatus.READY).order_by("name")
        self.fields["runs"].queryset = runs_available()
        for name, text in OPTION_HELP.items():
            self.fields[name].help_text = text
        for name in DEFAULTED:
            self.fields[name].required = False
        self.fields["adaptive_redundancy"].label = "Follow-up HITs for unsettled pairs"
        self.fields["rationale_followups"].label = "Rationale follow-ups"
        self.fields["stage2_rationale_followups"].label = "Rationale follow-ups in the second stage"
        self.order_fields([name for _title, names in FIELDSETS for name in names])

    def clean(self):
        cleaned = super().clean()
        for name in DEFAULTED:
            if cleaned.get(name) in (None, ""):
                cleaned[name] = Campaign._meta.get_field(name).get_default()
        return cleaned

    def fieldsets(self):
        return [(title, [self[name] for name in names]) for title, names in FIELDSETS]


@require_GET
@role_required(Role.REQUESTER)
def campaign_list(request):
    wanted = campaign_filter_read(params=request.GET)
    campaigns = campaign_list_filtered(user=request.user, wanted=wanted)
    page = Paginator(campaigns, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "campaigns": page.object_list,
        "page": page,
        "wanted": wanted,
        "statuses": CampaignStatus.choices,
        "sorts": CAMPAIGN_SORTS,
    }
    return render(request, "campaigns/list.html", context)


def _changed_options(data: dict) -> set[str]:
    """The options a form sets away from their model default (a preset keeps them), and name and direction."""
    return {"name", "direction"} | {
        name for name, value in data.items() if value != Campaign._meta.get_field(name).get_default()
    }


@require_http_methods(["GET", "POST"])
@role_required(Role.REQUESTER)
def campaign_new(request):
    initial = {}
    if request.GET.get("dataset", "").isdigit():
        initial["dataset"] = int(request.GET["dataset"])
    form = CampaignForm(request.POST or None, initial=initial)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = dict(form.cleaned_data)
            dataset, runs, preset = data.pop("dataset"), list(data.pop("runs")), data.pop("preset", "")
            try:
                data = preset_options(preset=preset, options=data, given=_changed_options(data))
                campaign = campaign_create(owner=request.user, dataset=dataset, runs=runs, **data)
            except ApplicationError as error:
                for message in error.extra.get("errors") or [error.message]:
                    form.add_error(None, message)
            else:
                messages.success(request, f"Campaign {campaign.name} is saved as a draft. Build it to see its HITs.")
                return redirect("campaign-detail", campaign_id=campaign.pk)
        status = 400
    return render(request, "campaigns/new.html", {"form": form}, status=status)


@require_GET
@role_required(Role.REQUESTER)
def campaign_detail(request, campaign_id: int):
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    return render(request, "campaigns/detail.html", _detail_context(request, campaign))


def _detail_context(request, campaign: Campaign, **extra) -> dict:
    stats = campaign_overview(campaign=campaign)
    runs = list(campaign.runs.select_related("annotator").order_by("pk"))
    addable = runs_available(dataset=campaign.dataset).exclude(pk__in=[r.pk for r in runs])
    overlap_rows = []
    if stats:
        overlap = stats["overlap"]
        overlap_rows = [
            (
                name,
                [
                    (overlap["both"][i][j], overlap["either"][i][j], overlap["jaccard"][i][j])
                    for j in range(len(overlap["runs"]))
                ],
            )
            for i, name in enumerate(overlap["names"])
        ]
    stalled = job_stalled(campaign)
    context = {
        "campaign": campaign,
        "stalled": stalled,
        "job": job_view(campaign),
        "stats": stats,
        "runs": runs,
        "addable_runs": addable
        if campaign.status in (CampaignStatus.BUILT, CampaignStatus.LIVE, CampaignStatus.PAUSED)
        else [],
        "overlap_rows": overlap_rows,
        "stages": campaign.build_report.get("stages", []),
        "gold": gold_exposure_summary(campaign=campaign) if stats else None,
        "qualification_pool": qualification_pool_summary(campaign=campaign) if stats else None,
        "cost_total": (stats["cost"]["total_cents"] / 100.0) if stats else None,
        "spend": campaign_spend(campaign=campaign)
        if campaign.status in (CampaignStatus.LIVE, CampaignStatus.PAUSED, CampaignStatus.FINISHED)
        else None,
        "can": {
            "build": campaign.status in (CampaignStatus.DRAFT, CampaignStatus.BUILT) or stalled,
            "launch": campaign.status == CampaignStatus.BUILT,
            "pause": campaign.status == CampaignStatus.LIVE,
            "resume": campaign.status == CampaignStatus.PAUSED,
            "finish": campaign.status in (CampaignStatus.LIVE, CampaignStatus.PAUSED),
        },
        # The budget has its own form (templates/campaigns/_spend.html), not a button among the actions.
        "can_budget": campaign.status in (CampaignStatus.BUILT, CampaignStatus.LIVE, CampaignStatus.PAUSED),
        "failed_bonuses": bonuses_failed(campaigns=campaigns_managed_by(request.user).filter(pk=campaign.pk)).count(),
        "budget_value": "" if campaign.budget_cents is None else f"{campaign.budget_cents / 100:.2f}",
    }
    return {**context, **extra}


def _budget_cents(text: str) -> int | None:
    """'2,500' or '$2500.00' -> 250000; empty -> None (no cap); anything else is a 400 with a message."""
    text = (text or "").strip().lstrip("$").replace(",", "")
    if not text:
        return None
    try:
        amount = Decimal(text)
        whole_cents = amount.is_finite() and amount == amount.quantize(Decimal("0.01"))
    except InvalidOperation:
        whole_cents = False
    if not whole_cents or amount <= 0:
        raise ApplicationError("Give the budget in dollars and cents, such as 2500 or 2,500.00, or leave it empty.")
    if amount > MAX_BUDGET_DOLLARS:
        raise ApplicationError(f"A budget is at most ${MAX_BUDGET_DOLLARS:,}.")
    return int(amount * 100)


@require_POST
@role_required(Role.REQUESTER)
def campaign_budget(request, campaign_id: int):
    """Change the budget cap through the policy service (annotator.campaigns.services.policy); an error shows
    in the form on the campaign page (4xx) with what was typed."""
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    typed = request.POST.get("budget", "")
    try:
        if campaign.status not in (CampaignStatus.BUILT, CampaignStatus.LIVE, CampaignStatus.PAUSED):
            raise ApplicationError(f"The budget of a {campaign.status} campaign cannot change.", status=409)
        updated = campaign_policy_update(campaign=campaign, actor=request.user, budget_cents=_budget_cents(typed))
    except ApplicationError as error:
        context = _detail_context(request, campaign, budget_error=error.message, budget_value=typed)
        return render(request, "campaigns/detail.html", context, status=error.status)
    if updated.budget_cents is None:
        messages.success(request, "The budget cap is removed.")
    else:
        messages.success(request, f"The budget is now ${updated.budget_cents / 100:,.2f}.")
    if updated.status == CampaignStatus.PAUSED and not campaign_spend(campaign=updated)["budget_reached"]:
        messages.info(request, "The budget has room again: resume the campaign when you are ready.")
    return redirect("campaign-detail", campaign_id=campaign.pk)


ACTIONS = {
    "launch": (campaign_launch, "Launched: workers can take its HITs now."),
    "pause": (campaign_pause, "Paused: no new HITs are handed out; leases already taken can still be submitted."),
    "resume": (campaign_resume, "Resumed: workers can take its HITs again."),
    "finish": (campaign_finish, "Finished: no more HITs are handed out."),
}


CONFIRMED_ACTIONS = ("launch", "finish")
MAX_BUDGET_DOLLARS = 10_000_000


@require_GET
@role_required(Role.REQUESTER)
def campaign_confirm(request, campaign_id: int, action: str):
    """The page before launch or finish: the estimated total cost, the budget and spend so far, and the
    button that does it (a POST with confirm=yes)."""
    if action not in CONFIRMED_ACTIONS:
        raise Http404("No such action.")
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    hits = campaign.hits.count()
    context = {
        "campaign": campaign,
        "action": action,
        "hits": hits,
        "cost": campaign_cost(campaign=campaign, hits=hits),
        "spend": campaign_spend(campaign=campaign),
        "qualification_pool": qualification_pool_summary(campaign=campaign),
    }
    return render(request, "campaigns/confirm.html", context)


@require_POST
@role_required(Role.REQUESTER)
def campaign_action(request, campaign_id: int, action: str):
    if action == "build":
        return _campaign_build(request, campaign_id)
    if action not in ACTIONS:
        raise Http404("No such action.")
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    if action in CONFIRMED_ACTIONS and request.POST.get("confirm") != "yes":
        # Launch and finish spend or stop money: only the confirmation page's button does them.
        return redirect("campaign-confirm", campaign_id=campaign.pk, action=action)
    service, message = ACTIONS[action]
    campaign = service(campaign=campaign)
    messages.success(request, message.format(hits=campaign.hits.count()))
    return redirect("campaign-detail", campaign_id=campaign.pk)


def _campaign_build(request, campaign_id: int):
    """Queue the build and go back to the campaign page, which follows it until it is built or failed."""
    campaign = campaign_build_request(campaign=campaign_get_managed(user=request.user, campaign_id=campaign_id))
    if campaign.status == CampaignStatus.BUILT:  # Celery ran it eagerly, or nothing had changed
        messages.success(request, f"Built: {campaign.hits.count()} HITs are ready. Check the numbers, then launch.")
    elif campaign.status == CampaignStatus.BUILDING:
        messages.info(request, "Building: this page follows the build and shows the numbers when it is done.")
    return redirect("campaign-detail", campaign_id=campaign.pk)  # a failed build shows its error there


@require_POST
@role_required(Role.REQUESTER)
def campaign_run_add(request, campaign_id: int):
    campaign = campaign_get_managed(user=request.user, campaign_id=campaign_id)
    try:
        run = runs_available(dataset=campaign.dataset).get(pk=int(request.POST.get("run", "")))
    except (ValueError, RankingRun.DoesNotExist):
        raise ApplicationError("Choose a succeeded ranking run of this campaign's dataset.") from None
    before = campaign.hits.count()
    campaign = campaign_add_run(campaign=campaign, run=run)
    added = campaign.hits.count() - before
    messages.success(request, f"Added {run.annotator.name}: {added} new HITs with the pairs it alone proposed.")
    return redirect(reverse("campaign-detail", kwargs={"campaign_id": campaign.pk}))


urlpatterns = [
    path("campaigns/", campaign_list, name="campaign-list"),
    path("campaigns/new/", campaign_new, name="campaign-new"),
    path("campaigns/<int:campaign_id>/", campaign_detail, name="campaign-detail"),
    path("campaigns/<int:campaign_id>/runs/", campaign_run_add, name="campaign-run-add"),
    path("campaigns/<int:campaign_id>/confirm/<str:action>/", campaign_confirm, name="campaign-confirm"),
    path("campaigns/<int:campaign_id>/budget/", campaign_budget, name="campaign-budget"),
    # The actions by name, so this route shadows no other slice's campaigns/<id>/<word>/ page.
    re_path(
        r"^campaigns/(?P<campaign_id>[0-9]+)/(?P<action>build|launch|pause|resume|finish)/$",
        campaign_action,
        name="campaign-action",
    ),
]

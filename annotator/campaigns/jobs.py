"""Campaign builds as jobs of the shared lifecycle (annotator.core.jobs)."""

from __future__ import annotations

from django.urls import reverse

from annotator.campaigns.models.campaign import CAMPAIGN_TRANSITIONS, Campaign, CampaignStatus
from annotator.campaigns.selectors.access import campaigns_visible_to, can_manage_campaign
from annotator.campaigns.services.build import campaign_build_request
from annotator.core.jobs import BUILD_STALE_AFTER, JobKind, JobState, job_kind_register


class BuildKind(JobKind):
    """A build runs in one transaction under its campaign's row lock: until it ends it reads as queued, and
    nothing of it is visible before it is all there."""

    name, label, model, transitions = "build", "Build", Campaign, CAMPAIGN_TRANSITIONS

    def retry(self, job):
        return campaign_build_request(campaign=job)

    def state(self, campaign):
        if campaign.status == CampaignStatus.BUILDING:
            return JobState.QUEUED
        if campaign.status == CampaignStatus.DRAFT:
            return JobState.FAILED if campaign.build_error else None
        return JobState.DONE if campaign.built_at else None

    def last_alive(self, campaign):
        return campaign.build_requested_at

    def stale_after(self, state):
        return BUILD_STALE_AFTER

    def progress(self, campaign):
        return int(self.state(campaign) == JobState.DONE), 1, "build"

    def error(self, campaign):
        return campaign.build_error

    def page(self, campaign):
        return reverse("campaign-detail", args=[campaign.pk])

    def visible(self, user):
        return campaigns_visible_to(user)

    def may_retry(self, user, campaign):
        return can_manage_campaign(user, campaign)


job_kind_register(BuildKind())

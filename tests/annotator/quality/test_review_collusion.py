"""The review queue shows a collusion group with its evidence; worker ids only to the campaign's owner."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotator.models import Role
from annotator.quality.services.peers import assignments_auto_approve_due
from tests.annotator.quality_support import colluding_ring
from tests.factories import user_with_role

pytestmark = pytest.mark.django_db


def test_review_queue_shows_the_collusion_group_with_its_evidence(client):
    ring = colluding_ring()
    assignments_auto_approve_due(now=timezone.now() + timedelta(days=30))
    url = reverse("review-queue", args=[ring.campaign.pk])
    a, b = ring.colluders

    client.force_login(ring.campaign.owner)
    page = client.get(url).content.decode()
    assert "Collusion groups" in page
    group = page[page.index('class="collusion-group"') :]
    assert a.pseudonym in group and b.pseudonym in group
    assert "the same answers at the same HIT positions, on different pairs" in group
    assert "36/36" in group  # A's two HITs apart against B's two, position by position, all identical
    assert f"worker {a.pk}" in group and f"worker {b.pk}" in group
    assert "answers like another worker&#x27;s far beyond chance" in page  # the flag, in the queue's rows

    operator = user_with_role(Role.REQUESTER, is_staff=True)  # sees every tenant's queue, not its worker ids
    client.force_login(operator)
    page = client.get(url).content.decode()
    assert a.pseudonym in page and "36/36" in page
    assert f"worker {a.pk}" not in page and f"worker {b.pk}" not in page

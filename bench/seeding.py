"""The live campaign and the logged-in crowd that the load benchmarks (hit_serving, chaos) run against.

Built with bulk inserts for speed, in the shape a real build leaves: every HIT holds `items` candidates and
one gold positive and one gold negative, in shuffled positions numbered from 1, as a worker sees them.
Call after django.setup() and the migrations.
"""

from __future__ import annotations

import random
from importlib import import_module


def seed_live_campaign(*, name: str, hits: int, items: int, redundancy: int, rng: random.Random, first_index=0):
    """A requester, a dataset of synthetic images and captions, and a live campaign of `hits` HITs.
    Returns (campaign, hit rows)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotator import models as m

    owner = get_user_model().objects.create_user(f"{name}-requester", password=None)
    m.Profile.objects.create(user=owner, role=m.Role.REQUESTER)
    dataset = m.Dataset.objects.create(name=name, owner=owner, status=m.DatasetStatus.READY)
    images_n = max(50, hits)
    images = m.Image.objects.bulk_create(
        m.Image(
            dataset=dataset,
            source_id=str(i),
            file_name=f"{i}.jpg",
            file=f"images/{i}.jpg",
            thumbnail=f"thumbnails/{i}.jpg",
            content_hash=f"{i:064x}",
            width=640,
            height=480,
        )
        for i in range(images_n)
    )
    captions = m.Caption.objects.bulk_create(
        m.Caption(dataset=dataset, image=images[i // 5], source_id=str(i), text=f"A photo number {i} of something.")
        for i in range(images_n * 5)
    )
    campaign = m.Campaign.objects.create(
        name=name,
        owner=owner,
        dataset=dataset,
        status=m.CampaignStatus.LIVE,
        redundancy=redundancy,
        candidates_per_hit=items,
        qualification_items=2,
        lease_minutes=60,
        launched_at=timezone.now(),
    )
    gold_pos = m.Pair.objects.create(campaign=campaign, image=images[0], caption=captions[0], is_original=True)
    gold_neg = m.Pair.objects.create(campaign=campaign, image=images[0], caption=captions[-1])
    used, pairs = {(images[0].pk, captions[0].pk), (images[0].pk, captions[-1].pk)}, []
    while len(pairs) < hits * items:
        image, caption = rng.choice(images), rng.choice(captions)
        if (image.pk, caption.pk) not in used:
            used.add((image.pk, caption.pk))
            pairs.append(m.Pair(campaign=campaign, image=image, caption=caption))
    pairs = m.Pair.objects.bulk_create(pairs)
    hit_rows = m.Hit.objects.bulk_create(
        m.Hit(campaign=campaign, index=first_index + i, assignments_required=redundancy) for i in range(hits)
    )
    rows = []
    for h, hit in enumerate(hit_rows):
        members = [(p, m.ItemRole.CANDIDATE) for p in pairs[h * items : (h + 1) * items]]
        members += [(gold_pos, m.ItemRole.GOLD_POSITIVE), (gold_neg, m.ItemRole.GOLD_NEGATIVE)]
        rng.shuffle(members)
        rows += [
            m.HitItem(hit=hit, position=p, pair=pair, role=role) for p, (pair, role) in enumerate(members, start=1)
        ]
    m.HitItem.objects.bulk_create(rows)
    return campaign, hit_rows


def seed_qualified_workers(*, campaign, prefix: str, count: int) -> list:
    """`count` local worker accounts that passed the campaign's qualification test. Returns their users."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotator import models as m

    users = get_user_model().objects.bulk_create(get_user_model()(username=f"{prefix}-{i}") for i in range(count))
    m.Profile.objects.bulk_create(m.Profile(user=u, role=m.Role.WORKER) for u in users)
    workers = m.Worker.objects.bulk_create(
        m.Worker(user=u, pseudonym=f"w-{prefix}{i:05d}") for i, u in enumerate(users)
    )
    m.QualificationAttempt.objects.bulk_create(
        m.QualificationAttempt(
            worker=w, campaign=campaign, items=[], passed=True, score=1.0, finished_at=timezone.now()
        )
        for w in workers
    )
    return users


def logged_in_sessions(users) -> list[str]:
    """A stored session per user, as a log-in leaves it: the session keys for the simulated browsers' cookies."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    SessionStore = import_module(settings.SESSION_ENGINE).SessionStore  # as the server reads them
    sessions = []
    for user in users:
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]  # the model backend: axes's has no get_user
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        sessions.append(store.session_key)
    return sessions

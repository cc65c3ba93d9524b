"""factory_boy factories for the whole suite, in one place."""

import io

import factory
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.db.models import Max
from django.utils import timezone
from PIL import Image as PILImage

from annotator import models
from annotator.crowd.services.hit_room import hit_room_recount


def png_bytes(color=(200, 30, 30), size=(32, 24)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ["username"]
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password("correct-horse-battery")


class ProfileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Profile
        django_get_or_create = ["user"]

    user = factory.SubFactory(UserFactory)
    role = models.Role.WORKER


def user_with_role(role: str, **kwargs):
    user = UserFactory(**kwargs)
    ProfileFactory(user=user, role=role)
    return user


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Dataset

    name = factory.Sequence(lambda n: f"dataset-{n}")
    status = models.DatasetStatus.READY


class ImageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Image

    dataset = factory.SubFactory(DatasetFactory)
    source_id = factory.Sequence(lambda n: str(1000 + n))
    file_name = factory.LazyAttribute(lambda o: f"{o.source_id}.png")
    file = factory.LazyAttribute(lambda o: ContentFile(png_bytes(), name=f"{o.source_id}.png"))
    thumbnail = factory.LazyAttribute(lambda o: ContentFile(png_bytes(), name=f"{o.source_id}_thumb.png"))
    content_hash = factory.Sequence(lambda n: f"{n:064x}")
    width = 32
    height = 24


class CaptionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Caption

    image = factory.SubFactory(ImageFactory)
    dataset = factory.SelfAttribute("image.dataset")
    source_id = factory.Sequence(lambda n: str(50000 + n))
    text = factory.Sequence(lambda n: f"A red square number {n} on a plain background.")


class MachineAnnotatorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.MachineAnnotator
        django_get_or_create = ["name"]

    name = factory.Sequence(lambda n: f"annotator-{n}")
    kind = models.AnnotatorKind.TFIDF_PIVOT


class RankingRunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.RankingRun

    annotator = factory.SubFactory(MachineAnnotatorFactory)
    dataset = factory.SubFactory(DatasetFactory)
    status = models.RunStatus.SUCCEEDED


class CampaignFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Campaign

    name = factory.Sequence(lambda n: f"campaign-{n}")
    owner = factory.LazyFunction(lambda: user_with_role(models.Role.REQUESTER))
    dataset = factory.SubFactory(DatasetFactory)
    # The unit tests of single mechanisms pin the ECCV Caption policy (every gold miss to review, fixed
    # redundancy, majority-era labels); tests of the product defaults build campaigns with the services.
    tolerated_gold_misses = 0
    adaptive_redundancy = False
    machine_prior = False


class PairFactory(factory.django.DjangoModelFactory):
    """An image-caption pair; `mismatched=True` pairs the image with another image's caption, as a build's
    gold negatives are (and then, as a build flags it, the pair is not an original one)."""

    class Meta:
        model = models.Pair

    class Params:
        mismatched = False

    campaign = factory.SubFactory(CampaignFactory)
    image = factory.SubFactory(ImageFactory, dataset=factory.SelfAttribute("..campaign.dataset"))
    caption = factory.Maybe(
        "mismatched",
        yes_declaration=factory.SubFactory(
            CaptionFactory, image=factory.SubFactory(ImageFactory, dataset=factory.SelfAttribute("...campaign.dataset"))
        ),
        no_declaration=factory.SubFactory(CaptionFactory, image=factory.SelfAttribute("..image")),
    )
    kind = models.PairKind.IMAGE_CAPTION


class HitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Hit

    campaign = factory.SubFactory(CampaignFactory)
    index = factory.Sequence(lambda n: n)


def _next_position(item) -> int:
    """Positions count from 1 within a HIT, as a build numbers them and as the worker sees them."""
    last = models.HitItem.objects.filter(hit=item.hit).aggregate(last=Max("position"))["last"]
    return (last or 0) + 1


class HitItemFactory(factory.django.DjangoModelFactory):
    """An item at the HIT's next position; a gold positive's pair is an original pair of the dataset, a gold
    negative's pairs an image with another image's caption, as a build chooses them."""

    class Meta:
        model = models.HitItem

    hit = factory.SubFactory(HitFactory)
    role = models.ItemRole.CANDIDATE
    position = factory.LazyAttribute(_next_position)
    pair = factory.SubFactory(
        PairFactory,
        campaign=factory.SelfAttribute("..hit.campaign"),
        is_original=factory.LazyAttribute(lambda pair: pair.factory_parent.role == models.ItemRole.GOLD_POSITIVE),
        mismatched=factory.LazyAttribute(lambda pair: pair.factory_parent.role == models.ItemRole.GOLD_NEGATIVE),
    )


class WorkerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Worker

    user = factory.LazyFunction(lambda: user_with_role(models.Role.WORKER))
    pseudonym = factory.Sequence(lambda n: f"w{n:06d}")


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Assignment
        skip_postgeneration_save = True

    hit = factory.SubFactory(HitFactory)
    worker = factory.SubFactory(WorkerFactory)
    expires_at = factory.LazyFunction(lambda: timezone.now() + timezone.timedelta(minutes=30))

    @factory.post_generation
    def room(assignment, create, extracted, **kwargs):
        """Hit.has_room as a claim leaves it: False once the active assignments reach assignments_required."""
        if create:
            hit_room_recount(hit=assignment.hit)


def live_campaign_with_hits(
    *,
    hits: int = 2,
    candidates: int = 2,
    redundancy: int = 1,
    shared_gold: bool = False,
    gold_light_hits=(),
    **campaign_kwargs,
):
    """A live campaign with `hits` HITs of `candidates` candidates and the campaign's gold (by default one
    gold positive, an original pair, and one gold negative, an image with another image's caption).
    The HITs whose index is in `gold_light_hits` are gold-light as a build makes them (adaptive gold): one
    gold item, a positive and a negative in turn, and one more candidate for each gold item left out.

    Each HIT has its own gold pairs, or with `shared_gold` every HIT has the same ones (as the gold reuse
    of a real build; one worker then gets one of those HITs only). Positions count from 1 and put the gold
    items in the middle, as a real build shuffles them. A qualification pool apart from the HITs comes with it.
    """
    campaign_kwargs.setdefault("qualification_items", 2)
    campaign = CampaignFactory(
        status=models.CampaignStatus.LIVE,
        redundancy=redundancy,
        candidates_per_hit=candidates,
        launched_at=timezone.now(),
        **campaign_kwargs,
    )
    gold = None
    for index in range(hits):
        if gold is None or not shared_gold:
            gold = [
                (PairFactory(campaign=campaign, is_original=True), models.ItemRole.GOLD_POSITIVE)
                for _ in range(campaign.gold_positives_per_hit)
            ] + [
                (PairFactory(campaign=campaign, mismatched=True), models.ItemRole.GOLD_NEGATIVE)
                for _ in range(campaign.gold_negatives_per_hit)
            ]
        light = index in gold_light_hits
        hit_gold = gold
        if light:
            turn = sorted(gold_light_hits).index(index)
            hit_gold = [pair for pair in gold if pair[1] == models.ItemRole.GOLD_POSITIVE] if turn % 2 == 0 else []
            hit_gold = hit_gold[:1] or [pair for pair in gold if pair[1] == models.ItemRole.GOLD_NEGATIVE][:1]
        hit = HitFactory(campaign=campaign, index=index, assignments_required=redundancy, gold_light=light)
        count = candidates + len(gold) - len(hit_gold)
        items = [(PairFactory(campaign=campaign), models.ItemRole.CANDIDATE) for _ in range(count)]
        middle = candidates // 2
        items[middle:middle] = hit_gold
        for position, (pair, role) in enumerate(items, start=1):
            HitItemFactory(hit=hit, position=position, pair=pair, role=role)
    if campaign.qualification_items:
        add_qualification_pool(campaign=campaign, size=max(4, 2 * campaign.qualification_items))
    return campaign


def add_qualification_pool(*, campaign, size: int = 4) -> list:
    """A qualification pool of `size` items (half positives), pairs that are in no HIT, as a build sets aside."""
    items = []
    for number in range(size):
        image = ImageFactory(dataset=campaign.dataset)
        caption = CaptionFactory(image=image if number % 2 == 0 else ImageFactory(dataset=campaign.dataset))
        items.append(
            models.QualificationItem.objects.create(
                campaign=campaign,
                key=(image.pk << 32) | caption.pk,
                image=image,
                caption=caption,
                role=models.QualificationRole.GOLD_POSITIVE
                if number % 2 == 0
                else models.QualificationRole.GOLD_NEGATIVE,
            )
        )
    return items


def qualification_right_answers(attempt) -> dict:
    """The right answers of a qualification attempt, as the form posts them."""
    roles = dict(models.QualificationItem.objects.filter(pk__in=attempt.items).values_list("pk", "role"))
    return {str(i): ("yes" if roles[p] == "gold_positive" else "no") for i, p in enumerate(attempt.items)}


class LabelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Label

    pair = factory.SubFactory(PairFactory)
    method = models.AggregationMethod.MAJORITY
    choice = models.Choice.YES
    is_positive = factory.LazyAttribute(lambda o: o.choice in models.POSITIVE_CHOICES)
    is_positive_strict = factory.LazyAttribute(lambda o: o.choice in models.STRICT_POSITIVE_CHOICES)
    confidence = 1.0
    answer_count = 1


class ExportJobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.ExportJob

    campaign = factory.SubFactory(CampaignFactory)
    created_by = factory.SelfAttribute("campaign.owner")
    format = models.ExportFormat.ECCV_JSON
    method = models.AggregationMethod.MAJORITY


class EvaluationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = models.Evaluation

    campaign = factory.SubFactory(CampaignFactory)
    created_by = factory.SelfAttribute("campaign.owner")
    name = factory.Sequence(lambda n: f"model-{n}")
    method = models.AggregationMethod.MAJORITY
    results = factory.LazyFunction(dict)

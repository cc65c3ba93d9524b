"""A simulated crowd: rehearse a quality policy on a synthetic dataset whose truth is known.

The simulation goes through the SAME services a person's browser uses: `worker_for_external`,
`qualification_start` / `qualification_submit`, `assignment_claim`, `assignment_submit` (which queues gold
scoring), then the requester's side: the review queue (`assignment_reject` / `assignment_approve`),
auto-approval (`assignments_auto_approve_due`) and aggregation (`labels_aggregate`), whose low-confidence
pairs ask for one more assignment. Nothing is short-cut: the policy that flags a simulated spammer is the one
that flags a real one.

What a simulated worker knows is what a person sees: the image and the caption of each item (it reads the
pair behind an item token, never the item's role; only the gold learner is told which items are gold, as a
worker who has memorised them would know). Worker kinds:
- careful: judges by the truth, each worker right with their own accuracy, drawn uniformly within
  `careful_spread` of `careful_accuracy` (default 0.89: a real crowd's careful workers are 85-90% right);
  answers "100% YES"/"100% NO" three times in four, else the middle answer with a reason;
- random: clicks one of the four answers at random;
- always_yes: answers "100% YES" to everything;
- adversarial: answers the opposite of what they see;
- colluder: answers from one sheet shared by all colluders, by the item's position in the HIT, so they
  agree with each other and not with the truth;
- gold_learner: answers gold items right (they have learnt them) and clicks at random otherwise;
- always_no: answers "100% NO" to everything; too_fast: clicks at random in under a second per item.
The default crowd is `bad_share` bad workers of the five default bad kinds in turn, the rest careful; each
worker does at most `hits_per_worker` HITs (the campaign's max_hits_per_worker), as real crowds do 2-3 each,
and the crowd is sized after the build so the campaign can finish within that cap (`crowd_size`). What a
crowd cannot finish is reported apart ("UNFINISHED: N pairs had no label"), never counted as wrong labels.
Careful workers can be better on the qualification test than at work (`test_accuracy`), give a middle
answer `middle_share` of the time, and err more on negatives the annotators ranked first
(`rank_difficulty`). `bench/crowd_quality.py --grid` runs a grid of such crowds.

Each rehearsal is isolated: its own requester and crowd, random streams derived from (seed, variant), the
id sequences reset before and its rows deleted after (the product seeds draws with ids), so a variant gives
the same figures for a seed alone, beside other variants, or run again.

`--variant` picks the campaign's policy: `defaults` (the campaign defaults: redundancy 1, adaptive
redundancy with the machine prior), `fixed` (redundancy 3, no adaptive redundancy, no machine prior),
`adaptive` (redundancy 1, adaptive, no machine prior) or `assisted` (redundancy 1, adaptive, machine
prior); `simulate_variants` runs several on the same dataset and crowd make-up for a side-by-side table.
Bad workers are not modelled as faster than careful ones by default (median 2.5 s against 4 s per item,
both above the campaign's 1 s minimum), so the speed rule is not what catches them.

The dataset is `annotator.scenarios.synthetic` (exact truth); candidates come from a real `tfidf_pivot` ranking run
when the ranking runtime is available, else from a documented cheap proposal (see `_propose_candidates`).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotator.core.errors import ApplicationError
from annotator.crowd.selectors.work import worker_may_take_work
from annotator.models import (
    AggregationMethod,
    AnnotatorKind,
    Assignment,
    AssignmentStatus,
    Campaign,
    Candidate,
    Caption,
    Dataset,
    DatasetStatus,
    Hit,
    HitItem,
    HitStatus,
    Image,
    ItemRole,
    Label,
    MachineAnnotator,
    Profile,
    RankingRun,
    Role,
    RunStatus,
    WorkerStanding,
)
from annotator.quality.selectors.gold import GOLD_ROLES

CAREFUL, RANDOM, ALWAYS_YES = "careful", "random", "always_yes"
ADVERSARIAL, COLLUDER, GOLD_LEARNER = "adversarial", "colluder", "gold_learner"
ALWAYS_NO, TOO_FAST = "always_no", "too_fast"
BAD_KINDS = (RANDOM, ALWAYS_YES, ADVERSARIAL, COLLUDER, GOLD_LEARNER)  # the default crowd's, in turn
ALL_BAD_KINDS = (*BAD_KINDS, ALWAYS_NO, TOO_FAST)
# The grid's bad share, in turn: colluders come first and twice in every eight, so even a 10% bad share of
# the smallest crowd holds two of them (one colluder alone is just a worker with a bad sheet).
GRID_BAD_KINDS = (COLLUDER, RANDOM, COLLUDER, ALWAYS_YES, ALWAYS_NO, TOO_FAST, ADVERSARIAL, GOLD_LEARNER)
MIN_CROWD = 20
CROWD_ASSIGNMENTS_PER_HIT = 6
# The campaign options of each policy variant (everything else is the campaign default).
VARIANTS = {
    "defaults": {},
    "fixed": {"redundancy": 3, "adaptive_redundancy": False, "machine_prior": False},
    "adaptive": {"redundancy": 1, "adaptive_redundancy": True, "machine_prior": False},
    "assisted": {"redundancy": 1, "adaptive_redundancy": True, "machine_prior": True},
}
CHOICES = ("yes", "partially_yes", "mostly_no", "no")
SHORTCOMINGS = ("extra_concepts", "misses_main", "wrong_way", "grammar")
ASPECTS = ("quantity", "color", "species", "gender", "age", "action", "emotion", "location", "orientation", "other")
MEDIAN_SECONDS = {CAREFUL: 4.0}  # every bad kind: 2.5 s


@dataclass
class SimulationConfig:
    images: int = 60
    seed: int = 0
    # None: sized after the build so the crowd can finish the campaign within the cap (see `crowd_size`).
    workers: int | None = None
    bad_share: float = 0.2
    random_share: float | None = None  # share of all workers (only random and always-yes bad workers then)
    always_yes_share: float | None = None  # share of all workers
    bad_kinds: tuple = BAD_KINDS  # the kinds of the bad share, in turn
    careful_accuracy: float = 0.89
    careful_spread: float = 0.05
    careful_error: float | None = None  # legacy: 1 - careful_accuracy, no spread
    # Careful workers' accuracy on the qualification test (people try harder on a test than at work);
    # None: as at work. Gold items inside HITs look like any other item, so they get the work accuracy.
    test_accuracy: float | None = None
    # Bad workers who try on the qualification test (answer it as a careful worker would, at `test_accuracy` or the
    # careful accuracy) and only then spam, collude or guess at work: the test keeps none of them out, and only the
    # work's own evidence (gold inside HITs, the crowd check, collusion) can catch them.
    bad_pass_test: bool = False
    middle_share: float = 0.25  # of careful answers: "Partially YES" / "Mostly NO" instead of 100%
    # Extra error of careful workers on negatives the annotators ranked first (harder negatives, ECCV
    # Table B.2): + rank_difficulty at best rank 1, halving with each rank after it.
    rank_difficulty: float = 0.0
    hits_per_worker: int | None = 3
    variant: str = "defaults"
    redundancy: int | None = None  # None: the variant's (the campaign default for `defaults`)
    candidates_per_hit: int = 16
    pool_depth: int = 5
    qualification_items: int | None = 6  # None: the campaign default
    tolerated_gold_misses: int | None = None  # None: the campaign default
    extra_assignment_cap: int | None = None
    confidence_threshold: float | None = None
    gold_light_share: float | None = None  # adaptive gold; None: the campaign default
    gold_fail_action: str = "review"
    review: str = "reject"  # what the simulated requester does with the review queue: reject | inspect
    reward_cents: int = 50
    max_rounds: int = 400
    ranking: str = "auto"  # auto (the annotators' runs if they run, else the cheap proposal) | tfidf | proposal
    # The offline annotators that rank the dataset; the campaign pools every run's top `pool_depth`, as a
    # requester's campaign over several runs does (`make demo` ranks with minilm_pivot and tfidf_pivot).
    annotators: tuple = ("tfidf_pivot",)
    # A synthetic vision-language judge of this accuracy joins the campaign's runs after the build (its
    # scores feed the machine prior; annotator/scenarios/judge_sim.py); None: no judge.
    judge_accuracy: float | None = None

    def crowd_size(self, *, hits: int) -> int:
        """The number of workers: `workers`, or, when None, enough for the campaign's `hits` first-round
        HITs to finish within the cap: CROWD_ASSIGNMENTS_PER_HIT assignments per HIT (three answers per
        pair, the bad work rejected and re-offered, follow-up HITs), at least MIN_CROWD workers."""
        if self.workers is not None:
            return self.workers
        if self.hits_per_worker is None:
            return MIN_CROWD
        return max(MIN_CROWD, math.ceil(CROWD_ASSIGNMENTS_PER_HIT * hits / self.hits_per_worker))

    def kinds(self, *, workers: int | None = None) -> list[str]:
        workers = workers if workers is not None else (self.workers if self.workers is not None else MIN_CROWD)
        random_share, always_yes_share = self.random_share, self.always_yes_share
        if random_share is None and always_yes_share is None:
            n_bad = round(workers * self.bad_share)
            if n_bad > workers:
                raise ApplicationError("The bad workers' share is more than the whole crowd.")
            bad = [self.bad_kinds[k % len(self.bad_kinds)] for k in range(n_bad)]
            return bad + [CAREFUL] * (workers - n_bad)
        if random_share is None:
            random_share = max(self.bad_share - always_yes_share, 0.0)
        if always_yes_share is None:
            always_yes_share = max(self.bad_share - random_share, 0.0)
        n_random = round(workers * random_share)
        n_yes = round(workers * always_yes_share)
        if n_random + n_yes > workers:
            raise ApplicationError("The bad workers' shares add up to more than the whole crowd.")
        return [RANDOM] * n_random + [ALWAYS_YES] * n_yes + [CAREFUL] * (workers - n_random - n_yes)

    def campaign_options(self) -> dict:
        """The campaign options of this rehearsal: the variant's, then what the config sets explicitly."""
        if self.variant not in VARIANTS:
            raise ApplicationError(f"Unknown variant {self.variant!r}; use one of {', '.join(VARIANTS)}.")
        options = dict(VARIANTS[self.variant])
        for name in (
            "redundancy",
            "qualification_items",
            "tolerated_gold_misses",
            "extra_assignment_cap",
            "confidence_threshold",
            "gold_light_share",
        ):
            value = getattr(self, name)
            if value is not None:
                options[name] = value
        if self.hits_per_worker is not None:
            options["max_hits_per_worker"] = self.hits_per_worker
        return options

    def accuracy_of(self, number: int) -> float:
        """The careful worker's own accuracy (reproducible from the seed and their number: the same people
        in every variant)."""
        if self.careful_error is not None:
            return 1.0 - self.careful_error
        spread = random.Random(f"accuracy-{self.seed}-{number}").uniform(-self.careful_spread, self.careful_spread)
        return min(max(self.careful_accuracy + spread, 0.0), 1.0)

    def stream(self, *parts) -> random.Random:
        """A random stream of this rehearsal alone, derived from (seed, variant, parts): no variant draws from
        another's stream, so a variant's figures do not depend on what runs beside it."""
        return random.Random("-".join(str(part) for part in (self.seed, self.variant, *parts)))


@dataclass
class SimWorker:
    worker: object
    kind: str
    rng: random.Random
    accuracy: float = 0.89
    qualification_tries: int = 0
    done: int = 0
    test_accuracy: float | None = None  # on the qualification test; None: `accuracy`
    honest_on_test: bool = False  # a bad worker who answers the test as a careful worker would
    middle_share: float = 0.25
    rank_difficulty: float = 0.0
    sheet: tuple = ()  # colluders: the shared answer sheet, one choice per HIT position

    def seconds(self) -> float:
        if self.kind == TOO_FAST:  # always under the campaign's 1 s minimum per item
            return round(min(0.4 * math.exp(self.rng.gauss(0.0, 0.35)), 0.95), 2)
        return round(MEDIAN_SECONDS.get(self.kind, 2.5) * math.exp(self.rng.gauss(0.0, 0.35)), 2)

    def accuracy_on(self, *, positive: bool, rank: int | None = None, test: bool = False) -> float:
        """This worker's chance of seeing the pair right: the test accuracy on the qualification test, else
        the work accuracy, less the difficulty of a negative the annotators ranked near the top."""
        if test and self.test_accuracy is not None:
            return self.test_accuracy
        if positive or not rank or not self.rank_difficulty:
            return self.accuracy
        return max(self.accuracy - self.rank_difficulty * 0.5 ** (rank - 1), 0.0)

    def sensitivity_specificity(self, *, rank: int | None = None) -> tuple[float, float]:
        """P(says positive | positive) and P(says negative | negative) on a candidate pair at best rank
        `rank`: the truth about this worker, for the oracle probability the label intervals are checked
        against."""
        if self.kind == CAREFUL:
            return self.accuracy, self.accuracy_on(positive=False, rank=rank)
        if self.kind == ALWAYS_YES:
            return 1.0, 0.0
        if self.kind == ALWAYS_NO:
            return 0.0, 1.0
        if self.kind == ADVERSARIAL:
            return 1.0 - self.accuracy, 1.0 - self.accuracy
        return 0.5, 0.5  # random, too fast, colluder (a sheet by position), gold learner (random on candidates)

    def judge(
        self,
        positive: bool,
        *,
        pair_id: int = 0,
        gold: bool = False,
        position: int = 0,
        rank: int | None = None,
        test: bool = False,
    ) -> dict:
        """One answer as the browser sends it: choice, reasons where asked, time spent. `position` is the
        item's place in the HIT (what a colluder's sheet is keyed by), `rank` the best rank the annotators
        gave the pair, `test` whether it is a qualification test item."""
        if test and self.honest_on_test and self.kind != CAREFUL:
            right = self.rng.random() < (self.test_accuracy if self.test_accuracy is not None else self.accuracy)
            choice = "yes" if positive == right else "no"
        elif self.kind == GOLD_LEARNER and (gold or test):
            choice = "yes" if positive else "no"
        elif self.kind == ALWAYS_YES:
            choice = "yes"
        elif self.kind == ALWAYS_NO:
            choice = "no"
        elif self.kind in (RANDOM, GOLD_LEARNER, TOO_FAST):
            choice = self.rng.choice(CHOICES)
        elif self.kind == COLLUDER:
            choice = self.sheet[position % len(self.sheet)] if self.sheet else "yes"
        else:
            accuracy = self.accuracy_on(positive=positive, rank=rank, test=test)
            right = self.rng.random() < accuracy
            seen_positive = positive if right != (self.kind == ADVERSARIAL) else not positive
            extreme = self.rng.random() < 1.0 - self.middle_share
            choice = ("yes" if extreme else "partially_yes") if seen_positive else ("no" if extreme else "mostly_no")
        answer = {"choice": choice, "seconds_spent": self.seconds()}
        if choice in ("partially_yes", "mostly_no"):
            shortcoming = self.rng.choice(SHORTCOMINGS)
            answer["shortcomings"] = [shortcoming]
            if shortcoming == "wrong_way":
                answer["wrong_aspects"] = [self.rng.choice(ASPECTS)]
        return answer


def collusion_sheet(rng: random.Random, *, length: int = 64) -> tuple:
    """The colluders' shared answer sheet: one of "yes" / "no" per HIT position."""
    return tuple(rng.choice(("yes", "no")) for _ in range(length))


@dataclass
class SimulationResult:
    config: SimulationConfig
    campaign_id: int
    candidate_source: str
    table: list[tuple[str, str]] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    inspected: object = None  # what simulate_crowd's `inspect` returned

    def as_text(self) -> str:
        width = max(len(name) for name, _ in self.table)
        lines = [f"{name.ljust(width)}  {value}" for name, value in self.table]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------- dataset


def _requester(username: str):
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save()
    Profile.objects.get_or_create(user=user, defaults={"role": Role.REQUESTER})
    return user


def _dataset(*, images: int, seed: int, owner) -> tuple[Dataset, dict]:
    """The synthetic dataset (written once under MEDIA_ROOT/simulation/) and its truth.json."""
    from annotator.scenarios.synthetic import make_synthetic_dataset

    out_dir = Path(settings.MEDIA_ROOT) / "simulation" / f"{images}-{seed}"
    if not (out_dir / "truth.json").exists():
        make_synthetic_dataset(out_dir=out_dir, images=images, seed=seed, size=(160, 120))
    truth = json.loads((out_dir / "truth.json").read_text())
    name = f"simulation-{images}-{seed}"
    dataset = Dataset.objects.filter(name=name, status=DatasetStatus.READY).first()
    if dataset is not None:
        return dataset, truth
    Dataset.objects.filter(name=name).delete()
    coco = json.loads((out_dir / "captions.json").read_text())
    media_root = Path(settings.MEDIA_ROOT)
    with transaction.atomic():
        dataset = Dataset.objects.create(name=name, owner=owner, status=DatasetStatus.IMPORTING)
        rows = []
        for entry in coco["images"]:
            path = out_dir / "images" / entry["file_name"]
            rows.append(
                Image(
                    dataset=dataset,
                    source_id=str(entry["id"]),
                    file_name=entry["file_name"],
                    file=str(path.relative_to(media_root)),
                    content_hash=hashlib.sha256(path.read_bytes()).hexdigest(),
                    width=entry["width"],
                    height=entry["height"],
                )
            )
        Image.objects.bulk_create(rows, batch_size=1000)
        image_pk = dict(Image.objects.filter(dataset=dataset).values_list("source_id", "pk"))
        Caption.objects.bulk_create(
            [
                Caption(
                    dataset=dataset, image_id=image_pk[str(a["image_id"])], source_id=str(a["id"]), text=a["caption"]
                )
                for a in coco["annotations"]
            ],
            batch_size=2000,
        )
        dataset.images_total = dataset.images_done = len(rows)
        dataset.captions_total = dataset.captions_done = len(coco["annotations"])
        dataset.status = DatasetStatus.READY
        dataset.report = {"source": "annotator.simulation", "images": images, "seed": seed}
        dataset.save()
    return dataset, truth


RANKING_ANNOTATORS = ("tfidf_pivot", "minilm_pivot")  # offline, text pivots: they rank i2t
TOP_K = 25


def _real_ranking(
    *, dataset: Dataset, top_k: int, kind: str = "tfidf_pivot", wait_seconds: float = 600
) -> RankingRun | None:
    """A real run of the offline annotator `kind` through the ranking service; None when the runtime is
    missing or fails."""
    from annotator.ranking.services.annotators import annotator_register
    from annotator.ranking.services.runs import ranking_run_start

    try:
        annotator = annotator_register(name=kind.replace("_", "-"), kind=kind)
        run = RankingRun.objects.filter(
            dataset=dataset, annotator=annotator, top_k__gte=top_k, status=RunStatus.SUCCEEDED
        ).first() or ranking_run_start(dataset=dataset, annotator=annotator, top_k=top_k)
    except Exception:  # noqa: BLE001 - no ranking runtime here: use the cheap proposal instead
        return None
    deadline = time.monotonic() + wait_seconds
    while True:
        run.refresh_from_db()
        if run.status == RunStatus.SUCCEEDED:
            return run
        if run.status in (RunStatus.FAILED, RunStatus.CANCELLED) or time.monotonic() > deadline:
            return None
        time.sleep(1.0)


def _propose_candidates(*, dataset: Dataset, truth: dict, top_k: int, seed: int) -> RankingRun:
    """The cheap proposal, used when no ranking runtime runs: for each image, up to top_k // 2 of its true
    captions (its own first, then other images' captions that describe it) and random other captions to
    fill top_k, in a shuffled order with descending scores; the reverse direction likewise. Recorded as a
    run of an `external` annotator named "simulation-proposal" so campaigns pool it like any run."""
    rng = random.Random(f"proposal-{seed}")
    annotator, _ = MachineAnnotator.objects.get_or_create(
        name="simulation-proposal", defaults={"kind": AnnotatorKind.EXTERNAL}
    )
    made = RankingRun.objects.filter(dataset=dataset, annotator=annotator, top_k=top_k, status=RunStatus.SUCCEEDED)
    if made.exists():
        return made.order_by("pk").first()
    run = RankingRun.objects.create(
        dataset=dataset, annotator=annotator, top_k=top_k, status=RunStatus.SUCCEEDED, finished_at=timezone.now()
    )
    image_pk = dict(Image.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    caption_pk = dict(Caption.objects.filter(dataset=dataset).values_list("source_id", "pk"))
    all_captions, all_images = list(caption_pk.values()), list(image_pk.values())
    rows = []
    for direction, table, targets_all, query_pk, target_pk in (
        ("i2t", truth["i2t"], all_captions, image_pk, caption_pk),
        ("t2i", truth["t2i"], all_images, caption_pk, image_pk),
    ):
        for query_source, query in query_pk.items():
            true_targets = [target_pk[str(t)] for t in table.get(query_source, []) if str(t) in target_pk]
            rng.shuffle(true_targets)
            chosen = true_targets[: max(1, top_k // 2)]
            while len(chosen) < min(top_k, len(targets_all)):
                target = rng.choice(targets_all)
                if target not in chosen:
                    chosen.append(target)
            rng.shuffle(chosen)
            rows += [
                Candidate(
                    run=run, direction=direction, query_id=query, target_id=t, rank=r, score=1.0 - r / (top_k + 1)
                )
                for r, t in enumerate(chosen, start=1)
            ]
    Candidate.objects.bulk_create(rows, batch_size=5000)
    return run


# ------------------------------------------------------------------------------------------- the crowd


def _qualify(sim: SimWorker, *, campaign: Campaign, truth_of, now) -> bool:
    from annotator.crowd.selectors.work import qualification_state
    from annotator.crowd.services.qualification import qualification_start, qualification_submit

    state = qualification_state(campaign=campaign, worker=sim.worker)
    if state in ("passed", "not_required"):
        return True
    if sim.qualification_tries >= 3:
        return False
    try:
        attempt = qualification_start(campaign=campaign, worker=sim.worker, now=now)
    except ApplicationError:  # cool-down, or blocked
        return False
    from annotator.models import QualificationItem

    pairs = QualificationItem.objects.in_bulk(attempt.items)
    answers = {
        str(i): sim.judge(truth_of(pairs[pk]), pair_id=pk, position=i, test=True)["choice"]
        for i, pk in enumerate(attempt.items)
    }
    sim.qualification_tries += 1
    attempt = qualification_submit(attempt=attempt, worker=sim.worker, answers=answers, now=now)
    return bool(attempt.passed)


def _work_one_hit(sim: SimWorker, *, campaign: Campaign, truth_of, now, rank_of: dict | None = None) -> bool:
    """Claim, answer and submit one HIT as the browser would; False when there is nothing to claim.
    `rank_of`: pair id -> the best rank the annotators gave it (item difficulty)."""
    from annotator.crowd.selectors.work import hit_item_tokens
    from annotator.crowd.services.answers import assignment_submit
    from annotator.crowd.services.assignments import assignment_claim

    try:
        assignment = assignment_claim(campaign=campaign, worker=sim.worker, now=now)
    except ApplicationError:
        return False
    tokens = hit_item_tokens(hit=assignment.hit)  # token -> item id, what the page resolves server side
    items = HitItem.objects.select_related("pair").in_bulk(list(tokens.values()))
    answers = []
    for position, (token, item_id) in enumerate(tokens.items()):  # tokens come in the page's order
        item = items[item_id]
        pair = item.pair  # what the worker sees: the image and the caption (the role only for a gold learner)
        answer = sim.judge(
            truth_of(pair),
            pair_id=pair.pk,
            gold=item.role != ItemRole.CANDIDATE,
            position=position,
            rank=(rank_of or {}).get(pair.pk),
        )
        answers.append({"item_token": token, **answer})
    assignment_submit(assignment=assignment, worker=sim.worker, answers=answers, now=now)
    sim.done += 1
    return True


def _score_pending(campaign: Campaign) -> None:
    """Score what the queue has not scored yet (with a live broker the default-queue workers do it)."""
    from annotator.quality.services.scoring import assignment_score

    pending = Assignment.objects.filter(
        hit__campaign=campaign, status=AssignmentStatus.SUBMITTED, scored_at__isnull=True
    ).values_list("pk", flat=True)
    for pk in list(pending):
        assignment_score(assignment_id=pk)


def _review(campaign: Campaign, *, reviewer, policy: str, truth_of) -> dict:
    """The simulated requester works through the review queue.

    `reject`: every flagged assignment is rejected (the HIT is re-offered). `inspect`: the requester looks
    at the candidate answers as ECCV's authors did and rejects when fewer than 80% of them are right.
    """
    from annotator.quality.selectors.quality import review_queue
    from annotator.quality.services.decisions import assignment_approve, assignment_reject

    decided = Counter()
    for assignment in review_queue(campaign=campaign):
        if policy == "inspect":
            answers = assignment.answers.select_related("item__pair__image", "item__pair__caption")
            right = [
                (a.choice in ("yes", "partially_yes")) == truth_of(a.item.pair)
                for a in answers
                if a.item.role == ItemRole.CANDIDATE
            ]
            if right and sum(right) / len(right) >= 0.8:
                assignment_approve(assignment=assignment, actor=reviewer, reason="Checked: the answers hold up.")
                decided["approved"] += 1
                continue
        flags = ", ".join(assignment.flags) or "flagged"
        assignment_reject(assignment=assignment, actor=reviewer, reason=f"Reviewed ({flags}): rejected.")
        decided["rejected"] += 1
    return dict(decided)


def _truth_of(dataset: Dataset, truth: dict):
    """truth_of(pair) -> whether the pair's caption describes its image, from the dataset's truth.json."""
    positives = {(int(image), int(caption)) for image, captions in truth["i2t"].items() for caption in captions}
    image_source = dict(Image.objects.filter(dataset=dataset).values_list("pk", "source_id"))
    caption_source = dict(Caption.objects.filter(dataset=dataset).values_list("pk", "source_id"))

    def truth_of(pair) -> bool:
        return (int(image_source[pair.image_id]), int(caption_source[pair.caption_id])) in positives

    return truth_of


def truth_lookup(campaign: Campaign):
    """truth_of(pair) for a simulated campaign (its dataset's report names the synthetic images and seed)."""
    report = campaign.dataset.report or {}
    out_dir = Path(settings.MEDIA_ROOT) / "simulation" / f"{report['images']}-{report['seed']}"
    return _truth_of(campaign.dataset, json.loads((out_dir / "truth.json").read_text()))


@dataclass
class Prepared:
    """What the rehearsals of one seed share and never write to: the dataset, its truth and its ranking runs."""

    dataset: Dataset
    truth: dict
    runs: list
    source: str


def simulation_prepare(config: SimulationConfig, *, log=None) -> Prepared:
    """The synthetic dataset of (images, seed) and its ranking runs, made once and reused by every variant and
    every crowd of the seed (the ranking is the slow part)."""
    log = log or (lambda message: None)
    owner = _requester(f"sim-requester-{config.seed}")
    dataset, truth = _dataset(images=config.images, seed=config.seed, owner=owner)
    unknown = [kind for kind in config.annotators if kind not in RANKING_ANNOTATORS]
    if unknown or not config.annotators:
        raise ApplicationError(f"The simulation ranks with some of {', '.join(RANKING_ANNOTATORS)}.")
    runs = []
    if config.ranking != "proposal":
        for kind in config.annotators:
            run = _real_ranking(dataset=dataset, top_k=TOP_K, kind=kind)
            if run is None:
                runs = []
                break
            runs.append(run)
    if not runs and config.ranking == "tfidf":
        raise ApplicationError(f"The {', '.join(config.annotators)} ranking runs did not succeed here.")
    source = (
        " + ".join(config.annotators) + (" ranking runs" if len(runs) > 1 else " ranking run")
        if runs
        else "cheap proposal (truth positives + random)"
    )
    if not runs:
        runs = [_propose_candidates(dataset=dataset, truth=truth, top_k=TOP_K, seed=config.seed)]
    log(
        f"dataset {dataset.name}: {dataset.images_total} images, {dataset.captions_total} captions; "
        f"candidates: {source}"
    )
    return Prepared(dataset=dataset, truth=truth, runs=runs, source=source)


def _id_models() -> list:
    from django.apps import apps

    return [
        model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed
        and not model._meta.proxy
        and model._meta.pk.get_internal_type() in ("AutoField", "BigAutoField", "SmallAutoField")
    ]


def _reset_id_sequences() -> None:
    """Every id sequence back to its table's largest id (Django's `sqlsequencereset`; SQLite keeps its
    AUTOINCREMENT counters in sqlite_sequence), so the next row of every table gets the same id whether or
    not rows were made and deleted before. Run it on a database nobody else writes to meanwhile."""
    from django.core.management.color import no_style
    from django.db import connection

    models = _id_models()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for model in models:
                table, column = model._meta.db_table, model._meta.pk.column
                cursor.execute(
                    f'UPDATE sqlite_sequence SET seq = (SELECT COALESCE(MAX("{column}"), 0) FROM "{table}") '
                    "WHERE name = %s",
                    [table],
                )
        else:
            for statement in connection.ops.sequence_reset_sql(no_style(), models):
                cursor.execute(statement)


def _clean_up(*, requester_name: str, worker_prefix: str) -> None:
    """Delete a rehearsal's campaigns, crowd and requester (what it wrote hangs off them), then reset the id
    sequences. Also clears what a rehearsal that crashed left behind under the same names."""
    from annotator.models import LabelSet, Worker

    User = get_user_model()
    with transaction.atomic():
        campaigns = Campaign.objects.filter(owner__username=requester_name)
        LabelSet.objects.filter(campaign__in=campaigns).delete()  # PROTECT on the campaign
        campaigns.delete()
        Worker.objects.filter(external_id__startswith=worker_prefix).delete()
        User.objects.filter(username=requester_name).delete()
    _reset_id_sequences()


def simulate_crowd(
    config: SimulationConfig, *, log=None, prepared: Prepared | None = None, keep: bool = False, inspect=None
) -> SimulationResult:
    """Run the whole rehearsal and measure it; see the module docstring.

    Isolated: the campaign has its own requester and crowd, made fresh, with random streams derived from
    (seed, variant); the id sequences are reset before it starts and everything it made is deleted after
    it is measured (only `prepared`, the dataset and its ranking runs, stays; `keep` leaves the campaign,
    its crowd and requester in place to look at, until the next rehearsal of the same seed and variant;
    `inspect(campaign)`, when given, is called on the finished campaign before it is deleted, and what it
    returns is kept in `result.inspected`). So the same config gives the same figures whatever ran before
    it or beside it in the same database."""
    prepared = prepared or simulation_prepare(config, log=log)
    requester_name = f"sim-requester-{config.seed}-{config.variant}"
    worker_prefix = f"SIM{config.seed}{config.variant.upper()}X"
    _clean_up(requester_name=requester_name, worker_prefix=worker_prefix)
    kept = False
    try:
        result = _rehearse(
            config, prepared=prepared, requester_name=requester_name, worker_prefix=worker_prefix, log=log
        )
        if inspect is not None:
            result.inspected = inspect(Campaign.objects.get(pk=result.campaign_id))
        kept = keep
        return result
    finally:
        if not kept:
            _clean_up(requester_name=requester_name, worker_prefix=worker_prefix)


def _best_ranks(campaign: Campaign) -> dict[int, int]:
    """pair id -> the best rank any annotator gave it in this campaign."""
    from django.db.models import Min

    from annotator.models import PairSource

    return dict(
        PairSource.objects.filter(pair__campaign=campaign)
        .values("pair_id")
        .annotate(best=Min("rank"))
        .values_list("pair_id", "best")
    )


def _rehearse(config: SimulationConfig, *, prepared: Prepared, requester_name: str, worker_prefix: str, log=None):
    from annotator.campaigns.services.build import campaign_build
    from annotator.campaigns.services.lifecycle import (
        campaign_create,
        campaign_finish,
        campaign_launch,
    )
    from annotator.crowd.services.workers import worker_for_external
    from annotator.labels.services.aggregation import labels_aggregate
    from annotator.quality.services.peers import assignments_auto_approve_due

    log = log or (lambda message: None)
    started = time.perf_counter()
    owner = _requester(requester_name)
    dataset, source = prepared.dataset, prepared.source
    truth_of = _truth_of(dataset, prepared.truth)
    campaign = campaign_create(
        owner=owner,
        dataset=dataset,
        runs=prepared.runs,
        name=f"simulation {config.variant} seed {config.seed}",
        direction="i2t",
        pool_depth=config.pool_depth,
        gold_exclusion_depth=TOP_K,
        candidates_per_hit=config.candidates_per_hit,
        reward_cents=config.reward_cents,
        gold_fail_action=config.gold_fail_action,
        seed=config.seed,
        lease_minutes=30,
        qualification_cooldown_minutes=60,
        **config.campaign_options(),
    )
    campaign = campaign_build(campaign=campaign)
    if config.judge_accuracy is not None:
        from annotator.scenarios.judge_sim import synthetic_judge_run

        synthetic_judge_run(
            campaign=campaign, truth_of=truth_of, accuracy=config.judge_accuracy, rng=config.stream("judge")
        )
    campaign = campaign_launch(campaign=campaign)
    first_round_hits = campaign.hits.count()
    log(f"campaign {campaign.pk}: {first_round_hits} HITs of {campaign.hit_size} items")
    rank_of = _best_ranks(campaign) if config.rank_difficulty else None

    rng = config.stream("crowd")
    sheet = collusion_sheet(config.stream("collusion-sheet"))
    crowd = []
    for number, kind in enumerate(config.kinds(workers=config.crowd_size(hits=first_round_hits))):
        worker = worker_for_external(external_id=f"{worker_prefix}{number:04d}")
        sim = SimWorker(
            worker=worker,
            kind=kind,
            rng=config.stream("worker", number),
            accuracy=config.accuracy_of(number),
            test_accuracy=config.test_accuracy,
            honest_on_test=config.bad_pass_test,
            middle_share=config.middle_share,
            rank_difficulty=config.rank_difficulty,
            sheet=sheet,
        )
        crowd.append(sim)

    now = timezone.now()
    review_decisions: Counter = Counter()
    extras = 0
    idle = 0
    last_state = None
    for round_number in range(config.max_rounds):
        worked = 0
        rng.shuffle(crowd)
        for sim in crowd:
            sim.worker.refresh_from_db()
            if not worker_may_take_work(worker=sim.worker, campaign=campaign):
                continue
            if not _qualify(sim, campaign=campaign, truth_of=truth_of, now=now):
                continue
            worked += _work_one_hit(sim, campaign=campaign, truth_of=truth_of, now=now, rank_of=rank_of)
        now += timedelta(minutes=10)
        if worked:
            continue
        # The crowd has nothing left to claim: the requester reviews, the auto-approval delay passes, labels.
        _score_pending(campaign)
        review_decisions.update(_review(campaign, reviewer=owner, policy=config.review, truth_of=truth_of))
        assignments_auto_approve_due(now=max(now, timezone.now()) + timedelta(hours=campaign.auto_approve_hours + 1))
        report = labels_aggregate(campaign=campaign)
        extras += report["extra_assignments"]
        open_hits = Hit.objects.filter(campaign=campaign, status=HitStatus.OPEN).count()
        log(
            f"round {round_number}: open HITs {open_hits}, review {dict(review_decisions)}, extra {extras}, "
            f"follow-ups {report.get('followups')}"
        )
        if not open_hits:
            break
        if not any(
            worker_may_take_work(worker=sim.worker, campaign=campaign) and sim.qualification_tries < 3 for sim in crowd
        ):
            break
        state = (
            Hit.objects.filter(campaign=campaign).count(),
            Assignment.objects.filter(hit__campaign=campaign).exclude(status=AssignmentStatus.SUBMITTED).count(),
        )
        idle = idle + 1 if state == last_state else 0
        last_state = state
        if idle >= 2 or all(_stuck(sim, campaign) for sim in crowd):
            break  # nobody can take what is left (caps, pairs already seen): the requester closes it
    # The requester finishes the campaign: what still waits for evidence is decided, labels are final.
    campaign = campaign_finish(campaign=Campaign.objects.get(pk=campaign.pk))
    _score_pending(campaign)
    late = now + timedelta(hours=campaign.auto_approve_hours + settings.QUALITY_PEER_WAIT_HOURS + 2)
    assignments_auto_approve_due(now=max(late, timezone.now() + timedelta(days=30)))
    review_decisions.update(_review(campaign, reviewer=owner, policy=config.review, truth_of=truth_of))
    labels_aggregate(campaign=campaign)
    result = _measure(
        config=config, campaign=campaign, crowd=crowd, truth_of=truth_of, source=source, rank_of=rank_of or {}
    )
    result.metrics.update(
        review=dict(review_decisions), extra_assignments=extras, seconds=round(time.perf_counter() - started, 1)
    )
    result.table.insert(
        -1,
        ("requester's review", ", ".join(f"{n} {k}" for k, n in sorted(review_decisions.items())) or "nothing flagged"),
    )
    result.table.insert(-1, ("extra assignments for low confidence", str(extras)))
    result.table.append(("wall time", f"{result.metrics['seconds']} s"))
    return result


def _stuck(sim: SimWorker, campaign: Campaign) -> bool:
    """No open HIT is left that this worker could still take."""
    if not worker_may_take_work(worker=sim.worker, campaign=campaign):
        return True
    if campaign.max_hits_per_worker is not None and sim.done >= campaign.max_hits_per_worker:
        return True
    return (
        not Hit.objects.filter(campaign=campaign, status=HitStatus.OPEN)
        .exclude(assignments__worker=sim.worker)
        .exists()
    )


def _oracle_coverage(*, campaign, crowd, truth: dict[int, bool], labels: dict, rank_of: dict) -> float | None:
    """The share of posterior labels whose 90% interval holds the oracle probability: P(positive) from the
    same approved answers with the truth about every worker on every pair (SimWorker.sensitivity_specificity
    at the pair's best rank) and the pair's true prior (the share of true positives among the candidates,
    or, with the machine prior, the logistic model of the machine evidence fitted on the truth)."""
    import numpy as np

    from annotator.analysis.posterior import oracle_probability
    from annotator.crowd.scales import answer_verdict
    from annotator.models import Answer
    from annotator.quality.selectors.posterior import machine_features

    if not labels:
        return None
    sims = {sim.worker.pk: sim for sim in crowd}
    rows = Answer.objects.filter(
        item__hit__campaign=campaign, assignment__status=AssignmentStatus.APPROVED, item__pair_id__in=list(labels)
    ).values_list("item__pair_id", "assignment__worker_id", "choice", "score")
    pairs, judges, verdicts = [], [], []  # a judge is (worker, pair): item difficulty makes it per pair
    for pair_id, worker_id, choice, score in rows:
        said = answer_verdict(campaign=campaign, choice=choice, score=score)
        if said is not None and worker_id in sims:
            pairs.append(pair_id)
            judges.append((worker_id, pair_id))
            verdicts.append(said)
    truths = {judge: sims[judge[0]].sensitivity_specificity(rank=rank_of.get(judge[1])) for judge in set(judges)}
    sens = {judge: value[0] for judge, value in truths.items()}
    spec = {judge: value[1] for judge, value in truths.items()}
    rate = min(max(sum(truth.values()) / len(truth), 1e-3), 1 - 1e-3)
    prior = {pair: float(np.log(rate / (1 - rate))) for pair in truth}
    features = machine_features(campaign=campaign, pair_ids=list(truth)) if campaign.machine_prior else {}
    if features:
        from sklearn.linear_model import LogisticRegression

        width = len(next(iter(features.values())))
        order = sorted(truth)
        x = np.array([features.get(pair, np.zeros(width)) for pair in order])
        y = np.array([truth[pair] for pair in order])
        if 0 < y.sum() < len(y):
            model = LogisticRegression(C=10.0).fit(x, y)
            prior = dict(zip(order, model.decision_function(x).tolist(), strict=True))
    oracle = oracle_probability(
        pair_ids=pairs, worker_ids=judges, verdicts=verdicts, sensitivity=sens, specificity=spec, prior_log_odds=prior
    )
    inside = [low <= oracle[pair] <= high for pair, (low, high) in labels.items() if pair in oracle]
    return sum(inside) / len(inside) if inside else None


def _measure(*, config, campaign, crowd, truth_of, source, rank_of: dict | None = None) -> SimulationResult:
    from annotator.analysis.posterior import reliability
    from annotator.labels.services.aggregation import primary_method
    from annotator.models import Answer, Pair

    kind_of = {sim.worker.pk: sim.kind for sim in crowd}
    scored = Assignment.objects.filter(hit__campaign=campaign, scored_at__isnull=False)
    flagged = defaultdict(lambda: [0, 0])  # kind -> [flagged, total]
    good_flags: Counter = Counter()  # flag -> careful workers' assignments that carry it (why good work was flagged)
    for worker_id, flags in scored.values_list("worker_id", "flags"):
        kind = kind_of.get(worker_id, CAREFUL)
        entry = flagged[kind]
        entry[0] += int(bool(flags))
        entry[1] += 1
        if kind == CAREFUL:
            good_flags.update(flags or [])
    bad = [sum(flagged[k][0] for k in ALL_BAD_KINDS), sum(flagged[k][1] for k in ALL_BAD_KINDS)]
    good = flagged[CAREFUL]

    candidate_pairs = set(
        HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values_list("pair_id", flat=True)
    )
    pairs = Pair.objects.in_bulk(list(candidate_pairs))
    truth = {pk: truth_of(pair) for pk, pair in pairs.items()}
    primary = str(primary_method(campaign))
    # A pair is finished when the campaign's method labelled it from at least one human answer; the rest
    # had no answer (the crowd ran out: too few workers for the cap) and are reported apart, not as wrong.
    finished = set(
        Label.objects.filter(pair_id__in=candidate_pairs, method=primary, answer_count__gt=0).values_list(
            "pair_id", flat=True
        )
    )
    unfinished = len(truth) - len(finished)
    open_hits = Hit.objects.filter(campaign=campaign, status=HitStatus.OPEN).count()
    cap = campaign.max_hits_per_worker
    at_cap = sum(1 for sim in crowd if cap is not None and sim.done >= cap)
    accuracy = {}
    positives_found = 0
    methods = [AggregationMethod.POSTERIOR, AggregationMethod.MAJORITY, AggregationMethod.GOLD_WEIGHTED]
    methods.append(AggregationMethod.DAWID_SKENE)
    for method in methods:
        labels = dict(Label.objects.filter(pair_id__in=finished, method=method).values_list("pair_id", "is_positive"))
        right = sum(1 for pk, positive in labels.items() if positive == truth[pk])
        # over the finished pairs; a finished pair this method left unlabelled counts as wrong
        accuracy[str(method)] = (right / len(finished)) if finished else 0.0
        if str(method) == primary:
            positives_found = sum(1 for pk, positive in labels.items() if positive and truth[pk])
    posterior = {
        pair: (p, low, high)
        for pair, p, low, high in Label.objects.filter(
            pair_id__in=candidate_pairs, method=AggregationMethod.POSTERIOR
        ).values_list("pair_id", "probability", "probability_low", "probability_high")
    }
    table, ece = reliability([v[0] for v in posterior.values()], [truth[p] for p in posterior])
    coverage = _oracle_coverage(
        campaign=campaign,
        crowd=crowd,
        truth=truth,
        labels={pair: (v[1], v[2]) for pair, v in posterior.items()},
        rank_of=rank_of or {},
    )
    approved_answers = Answer.objects.filter(
        item__hit__campaign=campaign, item__role=ItemRole.CANDIDATE, assignment__status=AssignmentStatus.APPROVED
    ).count()
    answers_per_pair = approved_answers / len(truth) if truth else 0.0  # over all pairs: what was bought
    followup_hits = Hit.objects.filter(campaign=campaign, followup_round__gt=0).count()
    approved = Assignment.objects.filter(hit__campaign=campaign, status=AssignmentStatus.APPROVED).count()
    # Adaptive gold: how much of the careful workers' time went to gold, and how many of their HITs were light.
    careful_ids = [sim.worker.pk for sim in crowd if sim.kind == CAREFUL]
    careful_items = Counter(
        role in GOLD_ROLES
        for role in HitItem.objects.filter(
            hit__campaign=campaign,
            hit__assignments__worker_id__in=careful_ids,
            hit__assignments__scored_at__isnull=False,
        ).values_list("role", flat=True)
    )
    careful_hits = Counter(
        Assignment.objects.filter(
            worker_id__in=careful_ids, hit__campaign=campaign, scored_at__isnull=False
        ).values_list("hit__gold_light", flat=True)
    )
    careful_gold_share = careful_items[True] / max(careful_items[True] + careful_items[False], 1)
    cost_cents = approved * campaign.reward_cents * (1 + campaign.platform_fee_percent / 100.0)
    counts = Counter(sim.kind for sim in crowd)
    bad_share = bad[0] / bad[1] if bad[1] else 1.0
    good_share = good[0] / good[1] if good[1] else 0.0
    label_accuracy = accuracy.get(primary, 0.0)
    result = SimulationResult(config=config, campaign_id=campaign.pk, candidate_source=source)
    result.metrics = {
        "variant": config.variant,
        "primary_method": primary,
        "accuracy": accuracy,
        "label_accuracy": label_accuracy,
        "answers_per_pair": answers_per_pair,
        "interval_coverage": coverage,
        "calibration_error": ece,
        "reliability": table,
        "followup_hits": followup_hits,
        "bad_flagged": bad_share,
        "good_flagged": good_share,
        "flagged_by_kind": {kind: tuple(entry) for kind, entry in flagged.items()},  # kind -> (flagged, total)
        "bad_flagged_count": bad[0],
        "good_flagged_count": good[0],
        "bad_assignments": bad[1],
        "good_assignments": good[1],
        "good_flags": dict(good_flags),
        "cost_cents": cost_cents,
        "cost_per_verified_positive_cents": (cost_cents / positives_found) if positives_found else None,
        "candidate_pairs": len(truth),
        "unfinished_pairs": unfinished,
        "open_hits_left": open_hits,
        "workers_at_cap": at_cap,
        "true_positive_pairs": sum(truth.values()),
        "approved_assignments": approved,
        "careful_gold_share": careful_gold_share,
        "careful_gold_light_hits": careful_hits[True],
        "careful_hits": careful_hits[True] + careful_hits[False],
    }
    paused = set(
        WorkerStanding.objects.filter(requester_id=campaign.owner_id)
        .filter(Q(blocked=True) | Q(soft_blocked=True))
        .values_list("worker_id", flat=True)
    )
    blocked = sum(1 for sim in crowd if sim.worker.pk in paused or sim.worker.blocked)
    n_bad = sum(1 for sim in crowd if sim.kind in ALL_BAD_KINDS)
    kept_out = sum(1 for sim in crowd if sim.kind in ALL_BAD_KINDS and sim.done == 0)
    hits_done = [sim.done for sim in crowd if sim.kind == CAREFUL and sim.done]
    result.metrics.update(bad_workers=n_bad, bad_workers_kept_out=kept_out)
    options = config.campaign_options()
    from annotator.campaigns.selectors.gold_exposure import (
        gold_exposure_per_worker,
        gold_exposure_summary,
        qualification_pool_summary,
    )

    per_worker = gold_exposure_per_worker(campaign=campaign)
    gold = gold_exposure_summary(campaign=campaign)
    pool = qualification_pool_summary(campaign=campaign)
    gold_pairs_seen = sorted(row["gold_pairs"] for row in per_worker.values())
    result.metrics.update(
        gold_exposure_per_worker={
            sim.worker.pseudonym: per_worker.get(sim.worker.pk, {"gold_pairs": 0, "views": 0, "most_views_of_one": 0})
            for sim in crowd
        },
        gold_repeats=sum(row["views"] - row["gold_pairs"] for row in per_worker.values()),
        gold_retired=gold["retired_count"],
        max_workers_per_gold_pair=gold["max_workers_per_pair"],
        qualification_pool=pool,
    )
    result.table = [
        (
            "campaign",
            f"{campaign.pk} ({config.variant}: redundancy {campaign.redundancy}, adaptive "
            f"{'on' if campaign.adaptive_redundancy else 'off'}, machine prior "
            f"{'on' if campaign.machine_prior else 'off'}; {campaign.hits.filter(followup_round=0).count()} HITs + "
            f"{followup_hits} follow-up HITs, {len(truth)} candidate pairs, {sum(truth.values())} truly positive; "
            f"candidates from {source})",
        ),
        (
            "crowd",
            ", ".join(f"{counts[k]} {k}" for k in (CAREFUL, *ALL_BAD_KINDS) if counts[k])
            + f"; careful accuracy {config.careful_accuracy:g} +- {config.careful_spread:g}"
            + (f" ({config.test_accuracy:g} on the test)" if config.test_accuracy is not None else "")
            + f", {config.middle_share:.2f} middle answers"
            + (f", first-ranked negatives {config.rank_difficulty:g} harder" if config.rank_difficulty else "")
            + (f", at most {options['max_hits_per_worker']} HITs each" if "max_hits_per_worker" in options else "")
            + (f" (careful workers did {sum(hits_done) / len(hits_done):.1f} on average)" if hits_done else "")
            + f"; {blocked} soft-blocked",
        ),
        *(
            [
                (
                    "UNFINISHED",
                    f"{unfinished} of {len(truth)} pairs had no label: crowd too small / cap reached "
                    f"({len(crowd)} workers, at most {campaign.max_hits_per_worker} HITs each, {at_cap} at the "
                    f"cap; {open_hits} HITs left open that no worker could claim); accuracy is over the "
                    f"{len(finished)} labelled pairs",
                )
            ]
            if unfinished
            else []
        ),
        (f"label accuracy, {primary} (the campaign's)", f"{label_accuracy:.3f}"),
        *[(f"label accuracy, {name}", f"{value:.3f}") for name, value in accuracy.items() if name != primary],
        ("human answers per candidate pair", f"{answers_per_pair:.2f}"),
        (
            "posterior: 90% intervals holding the oracle P",
            "n/a" if coverage is None else f"{coverage:.3f}",
        ),
        ("posterior: calibration error (ECE)", f"{ece:.3f}"),
        ("bad workers kept out by the qualification", f"{kept_out}/{n_bad}"),
        (
            "bad workers' assignments flagged",
            f"{bad_share:.3f} ({bad[0]}/{bad[1]})" if bad[1] else "none got through (0/0)",
        ),
        ("good workers' assignments flagged", f"{good_share:.3f} ({good[0]}/{good[1]})"),
        ("approved assignments", str(approved)),
        (
            "gold share of careful workers' items",
            f"{careful_gold_share:.3f} ({careful_hits[True]} of their {careful_hits[True] + careful_hits[False]} "
            "HITs gold-light)",
        ),
        ("cost", f"${cost_cents / 100:.2f} (reward {campaign.reward_cents}c + {campaign.platform_fee_percent:g}% fee)"),
        (
            "cost per verified positive",
            f"${cost_cents / positives_found / 100:.3f}" if positives_found else "n/a (no positive found)",
        ),
        (
            "gold exposure per worker",
            (
                f"{len(gold_pairs_seen)} workers saw 0-{gold_pairs_seen[-1]} gold pairs (median "
                f"{gold_pairs_seen[len(gold_pairs_seen) // 2]}); same gold pair twice to one worker: "
                f"{result.metrics['gold_repeats']}"
            )
            if gold_pairs_seen
            else "no gold seen",
        ),
        (
            "gold pairs",
            f"{gold['gold_pairs']} in HITs, at most {gold['max_workers_per_pair']} workers each (cap "
            f"{gold['cap']}); {gold['retired_count']} retired and replaced",
        ),
        (
            "qualification pool",
            f"{pool['size']} pairs in no HIT ({pool['positives']} positive, {pool['negatives']} negative), "
            f"shown {pool['total_shown']} times, at most {pool['max_shown']} times each",
        ),
        (
            "done (all labelled, acc >= 0.97, bad >= 0.95, good <= 0.05)",
            "yes" if not unfinished and label_accuracy >= 0.97 and bad_share >= 0.95 and good_share <= 0.05 else "NO",
        ),
    ]
    return result


def simulate_variants(
    config: SimulationConfig, variants: list[str], *, log=None, inspect=None
) -> list[SimulationResult]:
    """The same rehearsal once per variant: the same dataset and ranking runs, the same people (worker
    accuracies), and for each variant its own fresh requester, crowd and random streams (see
    `simulate_crowd`), so each variant's figures are those it gets alone."""
    from dataclasses import replace

    prepared = simulation_prepare(config, log=log)
    return [
        simulate_crowd(replace(config, variant=variant), log=log, prepared=prepared, inspect=inspect)
        for variant in variants
    ]


def variants_table(results: list[SimulationResult]) -> str:
    """Side by side: accuracy, human answers per pair and flags per variant."""
    header = ("variant", "accuracy", "answers/pair", "interval cover", "ECE", "bad flagged", "good flagged")
    rows = [header]
    for result in results:
        m = result.metrics
        rows.append(
            (
                m["variant"],
                f"{m['label_accuracy']:.3f}",
                f"{m['answers_per_pair']:.2f}",
                "n/a" if m["interval_coverage"] is None else f"{m['interval_coverage']:.3f}",
                f"{m['calibration_error']:.3f}",
                f"{m['bad_flagged']:.3f} ({m['bad_flagged_count']}/{m['bad_assignments']})",
                f"{m['good_flagged']:.3f} ({m['good_flagged_count']}/{m['good_assignments']})",
            )
        )
    widths = [max(len(row[k]) for row in rows) for k in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)

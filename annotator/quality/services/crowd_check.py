"""The last check before an assignment is paid: does the crowd's posterior say this worker is careless?

Comparing a worker with one or two other workers is fragile: two careful workers right nine times in ten agree
on only about eight items in ten, so with one peer a careful worker falls below a fixed agreement bar by
chance, and whoever is checked first is the one flagged. The posterior (annotator.quality.selectors.posterior)
weighs every answer by what the model learned about its worker, uses the gold items and the machine prior, and
takes the checked worker's own answers out of the comparison. The flag rule, per worker and campaign:

- `disagrees_with_peers` when P(the worker's accuracy < QUALITY_POSTERIOR_FLAG_BELOW) is at least
  QUALITY_POSTERIOR_FLAG_LEVEL, judged on at least QUALITY_PEER_MIN_ITEMS of informative comparisons
  (each pair counts |2 q - 1|, so a pair the others are unsure of counts little) over all the worker's
  candidate answers in the campaign; or on the assignment's own answers with QUALITY_POSTERIOR_HIT_LEVEL
  (a worker careful on one HIT and careless on the next); or with QUALITY_POSTERIOR_HIT_LEVEL over the campaign
  on fewer comparisons (at least QUALITY_PEER_STRONG_MIN_ITEMS): the posterior already weighs how much evidence
  there is, and a guesser whose pairs the machine prior settled on few answers is otherwise paid for want of
  comparisons;
- with too little evidence to judge (a short follow-up HIT), `disagrees_with_peers` again when another of the
  worker's assignments on the campaign was flagged so and not approved;
- a tolerated gold miss is excused when that probability, judged on the worker's candidate answers and all
  their gold answers in the campaign together (at least QUALITY_PEER_MIN_ITEMS of informative comparisons, a
  gold answer counting one), is below QUALITY_POSTERIOR_EXCUSE_BELOW (or the worker's gold record is
  trusted); otherwise `gold_failed`;
- `collusion` when the worker is in one of the campaign's collusion groups (annotator.quality.selectors.collusion:
  answers identical to another worker's, by HIT position or on shared pairs, far beyond what independent
  workers of their accuracy give). The other members of the group are not the worker's peers: their answers
  are taken out of every comparison above, so colluders cannot vouch for each other.

Waiting for the pairs to settle (`settled_only`): while the assignment's pairs are still collecting answers
(CrowdCheck.collecting) the caller may wait, and then judges on the *settled* pairs only (settled, or with
max_answers_per_pair answers, in the label fit). A careful worker who disagrees with the single other answer on
a pair leaves it unsettled, so adaptive redundancy asks again; the disagreement says little until that answer
is in, and with about two answers per pair most of a careful worker's "evidence" against them is such pairs.
Settled pairs are biased toward agreeing with the worker (a pair they contradict does not settle), so they may
condemn a worker at once but never clear one: an assignment is cleared only once its pairs are settled or no
more answers are coming for them (the caller then judges on every pair).

Reads only; the caller (assignments_auto_approve_due) holds the assignment's row lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from annotator.analysis.collusion import CollusionGroup
from annotator.analysis.posterior import PosteriorFit, WorkerEvidence
from annotator.analysis.trust import is_trusted
from annotator.campaigns.models.campaign import Campaign, HitItem, ItemRole
from annotator.crowd.models.crowd import (
    FLAG_COLLUSION,
    FLAG_GOLD_FAILED,
    FLAG_PEER_DISAGREEMENT,
    Assignment,
    AssignmentStatus,
)
from annotator.quality.selectors.collusion import campaign_collusion, collusion_group_of
from annotator.quality.selectors.posterior import campaign_posterior, label_prior
from annotator.quality.selectors.redundancy import machine_answers, pair_settled
from annotator.quality.services.trust import trust_policy, worker_trust


def _setting(name: str, default: float) -> float:
    return getattr(settings, name, default)


def _machine_witness() -> bool:
    """Whether a pair only this worker answered counts, with the machine prior as the other witness."""
    return bool(getattr(settings, "QUALITY_POSTERIOR_MACHINE_WITNESS", True))


@dataclass
class CrowdCheck:
    """One fitted working posterior per campaign, reused for every assignment due in one pass."""

    fits: dict[tuple[int, bool], tuple[PosteriorFit, set[int]]] = field(default_factory=dict)
    open: dict[int, set[int]] = field(default_factory=dict)  # campaign -> pairs still collecting answers
    groups: dict[int, dict[int, CollusionGroup]] = field(default_factory=dict)  # campaign -> worker -> group

    def fit_for(self, campaign: Campaign, *, check: bool = True) -> tuple[PosteriorFit, set[int]]:
        """The working posterior: with `check`, under the sceptical prior the check judges workers by;
        otherwise under the label prior, which decides what is settled."""
        key = (campaign.pk, check)
        if key not in self.fits:
            candidates = set(
                HitItem.objects.filter(hit__campaign=campaign, role=ItemRole.CANDIDATE).values_list(
                    "pair_id", flat=True
                )
            )
            self.fits[key] = (
                campaign_posterior(
                    campaign=campaign,
                    approved_only=False,
                    prior=label_prior(check=check, requester_id=campaign.owner_id),
                ),
                candidates,
            )
        return self.fits[key]

    def evidence(self, assignment, *, settled_only: bool = False) -> tuple[WorkerEvidence, WorkerEvidence]:
        """The worker's evidence on this assignment's pairs and on all their candidate answers in the campaign;
        with `settled_only`, on the pairs that collect no more answers only."""
        from annotator.analysis.posterior import worker_evidence

        campaign = assignment.hit.campaign
        fit, candidates = self.fit_for(campaign)
        below = _setting("QUALITY_POSTERIOR_FLAG_BELOW", 0.7)
        own_pairs = set(
            HitItem.objects.filter(hit_id=assignment.hit_id, role=ItemRole.CANDIDATE).values_list("pair_id", flat=True)
        )
        if settled_only:
            still_open = self.open_pairs(campaign)
            own_pairs -= still_open
            candidates = candidates - still_open
        partners = self.partners(assignment)
        machine = _machine_witness()
        this = worker_evidence(
            fit,
            worker_id=assignment.worker_id,
            pair_ids=own_pairs,
            below=below,
            without=partners,
            machine_witness=machine,
        )
        overall = worker_evidence(
            fit,
            worker_id=assignment.worker_id,
            pair_ids=candidates,
            below=below,
            without=partners,
            machine_witness=machine,
        )
        return this, overall

    def evidence_with_gold(self, assignment, *, settled_only: bool = False) -> WorkerEvidence:
        """The worker's accuracy on all their candidate answers in the campaign and their gold answers together
        (gold's truth is known, so each gold answer counts fully): the joint evidence a gold miss is weighed
        against."""
        from annotator.analysis.posterior import worker_evidence

        campaign = assignment.hit.campaign
        fit, candidates = self.fit_for(campaign)
        if settled_only:
            candidates = candidates - self.open_pairs(campaign)
        gold = set(
            HitItem.objects.filter(hit__campaign=campaign, role__in=[ItemRole.GOLD_POSITIVE, ItemRole.GOLD_NEGATIVE])
            .values_list("pair_id", flat=True)
            .distinct()
        )
        below = _setting("QUALITY_POSTERIOR_FLAG_BELOW", 0.7)
        return worker_evidence(
            fit,
            worker_id=assignment.worker_id,
            pair_ids=candidates | gold,
            below=below,
            without=self.partners(assignment),
            machine_witness=_machine_witness(),
        )

    def collusion_group(self, assignment) -> CollusionGroup | None:
        """The worker's collusion group on the assignment's campaign, if any (found once per pass)."""
        campaign = assignment.hit.campaign
        if campaign.pk not in self.groups:
            fit, _ = self.fit_for(campaign)
            self.groups[campaign.pk] = collusion_group_of(campaign_collusion(campaign=campaign, fit=fit))
        return self.groups[campaign.pk].get(assignment.worker_id)

    def partners(self, assignment) -> set[int]:
        """The other members of the worker's collusion group: never their peers."""
        group = self.collusion_group(assignment)
        return set(group.workers) - {assignment.worker_id} if group else set()

    def open_pairs(self, campaign: Campaign) -> set[int]:
        """The candidate pairs adaptive redundancy will still ask about: unsettled in the label fit, with fewer
        than max_answers_per_pair answers."""
        if campaign.pk not in self.open:
            fit, candidates = self.fit_for(campaign, check=False)
            row_of = fit.row_of()
            machine, first_ranked = machine_answers(campaign=campaign)
            still_open = set()
            for pair_id in candidates:
                answers, _, settled = pair_settled(
                    campaign=campaign,
                    fit=fit,
                    row=row_of.get(pair_id),
                    machine=0 if pair_id in first_ranked else machine,
                )
                if not settled and answers < campaign.max_answers_per_pair:
                    still_open.add(pair_id)
            self.open[campaign.pk] = still_open
        return self.open[campaign.pk]

    def collecting(self, assignment) -> bool:
        """Whether more answers will still come for the assignment's pairs: one of them is unsettled with
        fewer than max_answers_per_pair answers (adaptive redundancy will ask again)."""
        still_open = self.open_pairs(assignment.hit.campaign)
        pairs = HitItem.objects.filter(hit_id=assignment.hit_id, role=ItemRole.CANDIDATE).values_list(
            "pair_id", flat=True
        )
        return any(pair_id in still_open for pair_id in pairs)


def _found_careless_before(assignment) -> bool:
    """Whether another of the worker's assignments on this campaign was flagged as disagreeing with the crowd
    and not approved after all (a requester who approved it overruled the flag)."""
    earlier = (
        Assignment.objects.filter(hit__campaign_id=assignment.hit.campaign_id, worker_id=assignment.worker_id)
        .exclude(pk=assignment.pk)
        .exclude(status=AssignmentStatus.APPROVED)
        .values_list("flags", flat=True)
    )
    return any(FLAG_PEER_DISAGREEMENT in (flags or []) for flags in earlier)


def assignment_crowd_flags(*, assignment, check: CrowdCheck, settled_only: bool = False) -> tuple[list[str], bool]:
    """The flags the crowd's posterior gives a due assignment, and whether there was enough evidence to
    judge it (when not, the caller may wait for more answers). With `settled_only` (the caller can still wait
    for the assignment's pairs to settle) the evidence is the settled pairs', which may condemn but not clear
    while one of the assignment's own pairs is still open: `enough` is then False unless the worker is found
    careless."""
    min_items = _setting("QUALITY_PEER_MIN_ITEMS", 8)
    this, overall = check.evidence(assignment, settled_only=settled_only)
    enough = overall.compared >= min_items
    flags = []
    strong = _setting("QUALITY_POSTERIOR_HIT_LEVEL", 0.95)
    careless = (
        (enough and overall.p_below >= _setting("QUALITY_POSTERIOR_FLAG_LEVEL", 0.7))
        or (this.compared >= min_items and this.p_below >= strong)
        or (overall.compared >= _setting("QUALITY_PEER_STRONG_MIN_ITEMS", 5) and overall.p_below >= strong)
    )
    if not careless and not enough and _found_careless_before(assignment):
        careless = True  # too little to clear a worker the crowd already found careless on this campaign
    if careless:
        flags.append(FLAG_PEER_DISAGREEMENT)
    elif settled_only and check.collecting(assignment):
        enough = False  # not careless on the settled pairs so far: its open pairs may still tell against them
    if check.collusion_group(assignment) is not None:
        flags.append(FLAG_COLLUSION)  # the evidence only grows with more answers: no waiting for it
    missed = (assignment.gold_total or 0) - (assignment.gold_correct or 0)
    if missed > 0:
        # The miss is weighed with everything else known about the worker: their other gold answers and their
        # candidate answers against the crowd's, jointly.
        joint = check.evidence_with_gold(assignment, settled_only=settled_only)
        vouched = (
            not careless
            and joint.compared >= min_items
            and joint.p_below < _setting("QUALITY_POSTERIOR_EXCUSE_BELOW", 0.7)
        )
        if not vouched and not is_trusted(
            worker_trust(worker=assignment.worker, requester_id=assignment.hit.campaign.owner_id), trust_policy()
        ):
            flags.append(FLAG_GOLD_FAILED)
    return flags, enough

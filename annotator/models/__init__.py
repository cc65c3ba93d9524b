from annotator.campaigns.models.campaign import (
    CAMPAIGN_TRANSITIONS,
    CXC_POSITIVE_AT,
    LABEL_MODELS,
    QUALIFICATION_SHARE_DEFAULT,
    QUALIFICATION_SHARE_MAX,
    QUALIFICATION_SHARE_MIN,
    Campaign,
    CampaignDirection,
    CampaignStatus,
    GoldFailAction,
    Hit,
    HitItem,
    HitStatus,
    ItemRole,
    Pair,
    PairKind,
    PairSource,
    Sampling,
    Scale,
)
from annotator.campaigns.models.gold import (
    GoldRetirement,
    GoldRetirementReason,
    QualificationItem,
    QualificationRole,
)
from annotator.core.models.accounts import Profile, Role
from annotator.core.models.audit import AuditAction, AuditEvent
from annotator.core.models.operations import RequeueKind, SweepRequeue, SweepRun
from annotator.core.models.webhooks import (
    DELIVERY_TRANSITIONS,
    DeliveryError,
    DeliveryStatus,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from annotator.crowd.models.crowd import (
    ACTIVE_ASSIGNMENT_STATUSES,
    ASSIGNMENT_TRANSITIONS,
    CHOICES_NEEDING_SHORTCOMINGS,
    FLAG_COLLUSION,
    FLAG_GOLD_FAILED,
    FLAG_LABELS,
    FLAG_LOW_TRUST,
    FLAG_PEER_DISAGREEMENT,
    FLAG_SAME_ANSWER,
    FLAG_TOO_FAST,
    POSITIVE_CHOICES,
    STRICT_POSITIVE_CHOICES,
    Answer,
    Assignment,
    AssignmentEvent,
    AssignmentStatus,
    Choice,
    QualificationAttempt,
    Shortcoming,
    Worker,
    WrongAspect,
)
from annotator.crowd.models.money import PAYOUT_TRANSITIONS, Bonus, PayoutStatus, WorkerMessage
from annotator.crowd.models.standing import TrustAction, WorkerStanding, WorkerTrustEvent
from annotator.datasets.models.categories import Category, ImageCategory
from annotator.datasets.models.dataset import (
    DATASET_TRANSITIONS,
    Caption,
    Dataset,
    DatasetStatus,
    Image,
)
from annotator.finegrained.models.pools import (
    ENLARGEMENT_TRANSITIONS,
    POOL_TRANSITIONS,
    EnlargementStatus,
    GalleryAddition,
    GalleryEnlargement,
    ImagePool,
    PoolImage,
    PoolStatus,
)
from annotator.finegrained.models.refinement import (
    ACTIVE_CORRECTION_STATUSES,
    CORRECTION_TRANSITIONS,
    REFINEMENT_TRANSITIONS,
    CaptionVersion,
    CorrectionAction,
    CorrectionAssignment,
    CorrectionStatus,
    GoldExpect,
    ProposalStatus,
    Refinement,
    RefinementProposal,
    RefinementStatus,
    VersionSource,
)
from annotator.labels.models.cleanup import CleanupKind, CleanupProposal, CleanupStatus
from annotator.labels.models.exports import (
    EXPORT_TRANSITIONS,
    ExportFormat,
    ExportJob,
    ExportStatus,
    ExportVariant,
)
from annotator.labels.models.labels import AggregationMethod, Label
from annotator.labels.models.labelsets import (
    CXC_THRESHOLDS,
    PAIR_KIND_OF_DIRECTION,
    QUERY_SIDE,
    LabelSet,
    LabelSetDirection,
    LabelSetFormat,
    LabelSetKind,
    LabelSetOperand,
    LabelSetOperation,
    LabelSetPair,
    LabelSetPairKind,
    LabelSetQuery,
    QueryRule,
)
from annotator.quality.models.decisions import (
    EXTERNAL_DECISION_TRANSITIONS,
    DecisionKind,
    ExternalDecision,
    ExternalDecisionStatus,
)
from annotator.ranking.models.ranking import (
    RUN_TRANSITIONS,
    SHARD_TRANSITIONS,
    AnnotatorKind,
    Candidate,
    Direction,
    MachineAnnotator,
    RankingRun,
    RankingShard,
    RunStatus,
    ShardStatus,
)
from annotator.research.models.research import EVALUATION_TRANSITIONS, Evaluation, EvaluationStatus

__all__ = [name for name in dir() if not name.startswith("_")]

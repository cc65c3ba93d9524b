from annotator.models.accounts import Profile, Role
from annotator.models.audit import AuditAction, AuditEvent
from annotator.models.campaign import (
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
from annotator.models.categories import Category, ImageCategory
from annotator.models.crowd import (
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
    AggregationMethod,
    Answer,
    Assignment,
    AssignmentEvent,
    AssignmentStatus,
    Choice,
    Label,
    QualificationAttempt,
    Shortcoming,
    Worker,
    WrongAspect,
)
from annotator.models.dataset import DATASET_TRANSITIONS, Caption, Dataset, DatasetStatus, Image
from annotator.models.decisions import (
    EXTERNAL_DECISION_TRANSITIONS,
    DecisionKind,
    ExternalDecision,
    ExternalDecisionStatus,
)
from annotator.models.gold import (
    GoldRetirement,
    GoldRetirementReason,
    QualificationItem,
    QualificationRole,
)
from annotator.models.labelsets import (
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
from annotator.models.money import PAYOUT_TRANSITIONS, Bonus, PayoutStatus, WorkerMessage
from annotator.models.operations import RequeueKind, SweepRequeue, SweepRun
from annotator.models.pools import (
    ENLARGEMENT_TRANSITIONS,
    POOL_TRANSITIONS,
    EnlargementStatus,
    GalleryAddition,
    GalleryEnlargement,
    ImagePool,
    PoolImage,
    PoolStatus,
)
from annotator.models.quality import (
    CleanupKind,
    CleanupProposal,
    CleanupStatus,
    TrustAction,
    WorkerStanding,
    WorkerTrustEvent,
)
from annotator.models.ranking import (
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
from annotator.models.refinement import (
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
from annotator.models.research import (
    EVALUATION_TRANSITIONS,
    EXPORT_TRANSITIONS,
    Evaluation,
    EvaluationStatus,
    ExportFormat,
    ExportJob,
    ExportStatus,
    ExportVariant,
)
from annotator.models.webhooks import (
    DELIVERY_TRANSITIONS,
    DeliveryError,
    DeliveryStatus,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)

__all__ = [name for name in dir() if not name.startswith("_")]

"""The campaign vocabulary (what the engineer writes) and the evidence the agent produces, in rooms: commands.py
(commands and probes), bench.py (the benchmark), campaign.py (the file's other parts and the whole), evidence.py
(findings, assessments, the plan), verification.py (a rollback's verification). Every name is importable from here.

Measurement types live in `tools/`, gate and decision types in `policies/`; these modules use them.
"""

from agent.models.bench import BenchSpec, SearchSpec, SweepSpec, is_known_metric
from agent.models.campaign import (
    OWN_CREDENTIALS,
    STRESS_CHECK_TIMEOUT_S,
    Baseline,
    BrainSpec,
    Campaign,
    CampaignNotifyTarget,
    Fleet,
    Goal,
    Option,
    Price,
    RollbackSpec,
    StressSpec,
    Upload,
)
from agent.models.commands import BUILTIN_VARS, TEMPLATE_VAR, CommandSpec, Expectation, Probe
from agent.models.evidence import Assessment, Finding, Plan
from agent.models.verification import PartialVerification, Settling, Verification

__all__ = [
    "BUILTIN_VARS",
    "OWN_CREDENTIALS",
    "STRESS_CHECK_TIMEOUT_S",
    "TEMPLATE_VAR",
    "Assessment",
    "Baseline",
    "BenchSpec",
    "BrainSpec",
    "Campaign",
    "CampaignNotifyTarget",
    "CommandSpec",
    "Expectation",
    "Finding",
    "Fleet",
    "Goal",
    "Option",
    "PartialVerification",
    "Plan",
    "Price",
    "Probe",
    "RollbackSpec",
    "SearchSpec",
    "Settling",
    "StressSpec",
    "SweepSpec",
    "Upload",
    "Verification",
    "is_known_metric",
]

"""Contracts: what a heinzel keeps true, compiled, versioned and amended.

A contract is a ``.prose.md`` file: YAML frontmatter with an ``hz:`` table
(the machine part the kernel obeys) and a Markdown body (the part the model
reads). ``compile_contract`` turns text into a ``CompiledContract`` or a
``ContractError`` with an ``HZC`` code and a line; ``check_amendment``
refuses a widening written by the heinzel itself; ``ContractVersions`` keeps
every version on disk.
"""

from hz_kernel.contracts.amend import AmendmentCheck, check_amendment
from hz_kernel.contracts.compile import compile_contract, intent_fingerprint
from hz_kernel.contracts.cron import ScheduleChange, compare_schedules, cron_shape
from hz_kernel.contracts.model import (
    CAPABILITIES,
    SOURCES,
    AgentSpec,
    CompiledContract,
    ContractBody,
    ContractError,
    ContractSection,
    HzTable,
    InputSpec,
    OutputSpec,
    PublishSpec,
    duration_seconds,
)
from hz_kernel.contracts.parse import read_contract_file
from hz_kernel.contracts.sentence import (
    ScheduleGuess,
    TemplateInfo,
    TemplateParam,
    choose_template,
    contract_from_sentence,
    list_templates,
    render_template,
    schedule_from_sentence,
)
from hz_kernel.contracts.versions import ContractVersions

__all__ = [
    "CAPABILITIES",
    "SOURCES",
    "AgentSpec",
    "AmendmentCheck",
    "CompiledContract",
    "ContractBody",
    "ContractError",
    "ContractSection",
    "ContractVersions",
    "HzTable",
    "InputSpec",
    "OutputSpec",
    "PublishSpec",
    "ScheduleChange",
    "ScheduleGuess",
    "TemplateInfo",
    "TemplateParam",
    "check_amendment",
    "choose_template",
    "compare_schedules",
    "compile_contract",
    "contract_from_sentence",
    "cron_shape",
    "duration_seconds",
    "intent_fingerprint",
    "list_templates",
    "read_contract_file",
    "render_template",
    "schedule_from_sentence",
]

"""The rules, one module each. Order here is the order of ``pinlint rule --all``."""

from ..rule_docs import RUNTIME_RULES
from .base import CheckContext, Report, Rule
from .pin001 import PageableAsyncCopy
from .pin002 import PinnedAllocInLoop
from .pin003 import WriteCombinedCpuRead
from .pin004 import MappedMemoryReread
from .pin005 import AsyncD2HReadBeforeSync
from .pin006 import AsyncH2DSourceOverwritten
from .pin007 import PageableTransferInLoop
from .pin008 import PinnedForSingleTransfer

ALL_RULES: tuple[Rule, ...] = (PageableAsyncCopy(), PinnedAllocInLoop(), WriteCombinedCpuRead(),
                               MappedMemoryReread(), AsyncD2HReadBeforeSync(), AsyncH2DSourceOverwritten(),
                               PageableTransferInLoop(), PinnedForSingleTransfer())
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}
# PIN000 is not a rule over facts: it is how a file that cannot be parsed is reported. The runtime
# rules (PIN009) are what `pinlint trace` observes, with no static check; they can be named all the same.
ALL_CODES = ("PIN000",) + tuple(RULES_BY_CODE) + tuple(rule.code for rule in RUNTIME_RULES)

__all__ = ["ALL_CODES", "ALL_RULES", "RULES_BY_CODE", "RUNTIME_RULES", "CheckContext", "Report", "Rule"]

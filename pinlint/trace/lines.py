"""Which lines of the user's files ran (Python 3.12+, ``sys.monitoring``).

Each code location reports once and is then disabled, so the cost is one callback per line of
code that runs, not per execution. It lets ``--check`` tell a static finding whose line never ran
("not exercised") from one whose line ran without the copy it predicts. On older Pythons, and
when every free tool id is taken (a coverage tool is running), nothing is recorded and the join
falls back to the lines that made CUDA calls.
"""

from __future__ import annotations

import sys
from typing import Optional

from .frames import Attributor

MAX_FILES = 10_000
_TOOL_IDS = (4, 3)  # ids no standard tool claims (0-2 and 5 are named in sys.monitoring)


class ExecutedLines:
    def __init__(self, attributor: Attributor) -> None:
        self.attributor = attributor
        self.lines: dict = {}  # absolute path -> set of line numbers
        self.tool: Optional[int] = None
        self.started = False

    def start(self) -> bool:
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is None:
            return False
        for tool in _TOOL_IDS:
            try:
                monitoring.use_tool_id(tool, "pinlint-trace")
            except ValueError:
                continue
            self.tool = tool
            self.started = True
            monitoring.register_callback(tool, monitoring.events.LINE, self._line)
            monitoring.set_events(tool, monitoring.events.LINE)
            return True
        return False

    def _line(self, code, line: int):
        path = self.attributor.user_file(code.co_filename)
        if path is not None:
            found = self.lines.get(path)
            if found is None and len(self.lines) < MAX_FILES:
                found = self.lines[path] = set()
            if found is not None:
                found.add(line)
        return sys.monitoring.DISABLE

    def stop(self) -> None:
        if self.tool is not None:
            monitoring = sys.monitoring
            monitoring.set_events(self.tool, 0)
            monitoring.register_callback(self.tool, monitoring.events.LINE, None)
            monitoring.free_tool_id(self.tool)
            self.tool = None

    def to_dict(self) -> Optional[dict]:
        if not self.started:
            return None
        return {path: sorted(lines) for path, lines in self.lines.items()}

"""Which lines of the user's files ran, and how often the lines that made CUDA calls ran
(Python 3.12+, ``sys.monitoring``).

Library code costs one callback per code object: a global PY_START event, disabled for that code
object at once. A user code object gets local LINE events, each line reporting once and then
disabled. So ``--check`` can tell a static finding whose line never ran ("not exercised") from
one whose line ran without the copy it predicts. On older Pythons, and when every free tool id is
taken (a coverage tool is running), nothing is recorded and the join falls back to the lines that
made CUDA calls.
"""

from __future__ import annotations

import sys
from typing import Optional

from .frames import Attributor

MAX_FILES = 10_000
_TOOL_IDS = (4, 3)  # ids no standard tool claims (0-2 and 5 are named in sys.monitoring); LineRuns takes the other


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
            monitoring.register_callback(tool, monitoring.events.PY_START, self._started)
            monitoring.register_callback(tool, monitoring.events.LINE, self._line)
            monitoring.set_events(tool, monitoring.events.PY_START)
            return True
        return False

    def _started(self, code, offset: int):
        if self.attributor.user_file(code.co_filename) is not None:
            sys.monitoring.set_local_events(self.tool, code, sys.monitoring.events.LINE)
        return sys.monitoring.DISABLE

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
            for event in (monitoring.events.PY_START, monitoring.events.LINE):
                monitoring.register_callback(self.tool, event, None)
            monitoring.free_tool_id(self.tool)
            self.tool = None

    def to_dict(self) -> Optional[dict]:
        if not self.started:
            return None
        return {path: sorted(lines) for path, lines in self.lines.items()}


class LineRuns:
    """How many times each line that made a CUDA call has run (Python 3.12+).

    A function is watched (local LINE events on its code object only) from its first copy or
    pinned allocation on; a copy then carries the count of its line. Thirty copies made by one
    call (``model.to("cuda")``, ``torch.save``) share one count; a line run thirty times in a loop
    has thirty. That is what tells a loop's repeated copies (PIN007) from one call copying many
    buffers. The function's other lines are disabled the first time they run, so a loop pays for
    its copying lines only; a disabled line that starts copying later is switched back on.
    """

    def __init__(self) -> None:
        self.counts: dict = {}     # (code, line) -> times the line started
        self.counted: set = set()  # (code, line) that made a CUDA call
        self.disabled: set = set()
        self.watched: set = set()
        self.tool: Optional[int] = None

    def start(self, tool_ids=(3, 4)) -> bool:
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is None:
            return False
        for tool in tool_ids:
            try:
                monitoring.use_tool_id(tool, "pinlint-trace-runs")
            except ValueError:
                continue
            self.tool = tool
            monitoring.register_callback(tool, monitoring.events.LINE, self._line)
            return True
        return False

    def _line(self, code, line: int):
        key = (code, line)
        if key in self.counted:
            self.counts[key] = self.counts.get(key, 0) + 1
            return None
        self.disabled.add(key)
        return sys.monitoring.DISABLE

    def run_of(self, frame) -> int:
        if self.tool is None:
            return -1
        code = frame.f_code
        key = (code, frame.f_lineno)
        if key not in self.counted:
            self.counted.add(key)
            if code not in self.watched:
                self.watched.add(code)
                try:
                    sys.monitoring.set_local_events(self.tool, code, sys.monitoring.events.LINE)
                except ValueError:
                    pass
            elif key in self.disabled:
                self.disabled.discard(key)
                sys.monitoring.restart_events()  # this line was switched off before it copied
        return self.counts.get(key, 0)

    def stop(self) -> None:
        if self.tool is not None:
            monitoring = sys.monitoring
            for code in self.watched:
                try:
                    monitoring.set_local_events(self.tool, code, 0)
                except ValueError:
                    pass
            monitoring.register_callback(self.tool, monitoring.events.LINE, None)
            monitoring.free_tool_id(self.tool)
            self.tool = None

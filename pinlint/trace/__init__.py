"""``pinlint trace``: what a program's copies and pinned allocations really did, per source line.

The modules that run inside the traced program (``events``, ``frames``, ``recorder``, ``aggregate``,
``lines``, ``child``) use the standard library only, and CUPTI where it is installed, so the
program loads nothing of pinlint's linter. The parent side (``session``, ``observe``, ``join``,
``report``, ``plot``, ``command``) reads what they wrote.
"""

"""What a failed run prints last: each failed stage's one sentence, read back from its log.

A failing stage logs its sentence (a :class:`~audiobook_rl.errors.UserError`) as the last ERROR
record of its log file; Snakemake then reports the failure in some seventy lines of its own. The
workflow prints :func:`summary` after all of that, so the sentence is the last thing a user sees
and the full log stays in ``logs/``.
"""

from __future__ import annotations

import re
from pathlib import Path

# A record as audiobook_rl.stage.setup_logging writes it: "12:34:56 ERROR audiobook_rl: message";
# a message of several lines (a list of problems, a traceback) continues on lines without this head.
_HEAD = re.compile(r"^\d\d:\d\d:\d\d ([A-Z]+) [\w.]+: (.*)$")


def sentences(log_text: str) -> list[str]:
    """The lines of the last ERROR record of a stage log; for an unexpected exception, its message
    and the exception's last line. Without an ERROR record, the log's last line (a killed job)."""
    records: list[tuple[str, list[str]]] = []
    for line in log_text.splitlines():
        head = _HEAD.match(line)
        if head:
            records.append((head.group(1), [head.group(2)]))
        elif records and line.strip():
            records[-1][1].append(line)
    errors = [lines for level, lines in records if level in ("ERROR", "CRITICAL")]
    if not errors:
        last = [line for line in log_text.splitlines() if line.strip()]
        return [f"stopped without an error message; its log ends with: {last[-1].strip()}"] if last else []
    lines = errors[-1]
    if len(lines) > 1 and lines[1].startswith("Traceback"):
        return [f"{lines[0]}: {lines[-1].strip()}"]
    return lines


def summary(failed: list[tuple[str, str | Path | None]]) -> str:
    """``Error in <job>: <sentence> (full log: <path>)`` for each (job name, log file) of ``failed``."""
    out = []
    for job, log in sorted(failed, key=lambda item: item[0]):
        try:
            lines = sentences(Path(log).read_text(encoding="utf-8", errors="replace")) if log else []
        except OSError:
            lines = []
        lines = lines or ["failed before writing its log; see Snakemake's messages above"]
        out += [f"Error in {job}: {line}" for line in lines]
        if log:
            out[-1] += f" (full log: {log})"
    return "\n".join(out)

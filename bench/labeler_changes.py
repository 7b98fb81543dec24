"""Every quote of a novel as the rule labeler reads it, and what a rule change does to them.

    python bench/labeler_changes.py --novel shuihuzhuan.txt --save before.json
    (edit the rules)
    python bench/labeler_changes.py --novel shuihuzhuan.txt --against before.json [--save after.json]

Labels each paragraph of the novel that holds a quote, where it stands (the labeler reads the novel
before it, as ``label_slices`` does), with the lexicon of the whole novel. ``--save`` writes every
quote's speaker (keyed by the paragraph's offset and the segment's index) with the first characters of
the quote. ``--against`` compares with a saved run and prints each quote whose speaker changed, with
the text just before it, for a reader to judge: a rule written from a few errors of a check set shows
here how often it fires on the whole book, and where it goes wrong. Hand-labelled sets
(``check_labeler.py --set``) measure accuracy; this shows reach.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from audiobook_rl.corpus import Slice
from audiobook_rl.labeling.lexicon import build_lexicon
from audiobook_rl.labeling.rules import RuleLabeler
from audiobook_rl.script import NARRATOR


def quote_speakers(text: str) -> dict[str, list[str]]:
    """``{"<paragraph offset>.<segment index>": [speaker, first characters]}`` for every quote."""
    labeler = RuleLabeler(build_lexicon(text))
    paragraphs = [Slice(f"{m.start()}", m.group(), m.start(), m.end()) for m in re.finditer(r"[^\n]*“[^\n]*", text)]
    found = {}
    for paragraph, script in zip(paragraphs, labeler.label(paragraphs)):
        for i, segment in enumerate(script):
            if segment.speaker != NARRATOR:
                found[f"{paragraph.id}.{i}"] = [segment.speaker, segment.content[:24]]
    return found


def changes(before: dict, after: dict, text: str, context: int = 80):
    """Yield (key, old speaker, new speaker, the text before the quote) for each quote that changed."""
    for key, (speaker, head) in before.items():
        new = after.get(key, [None])[0]
        if new != speaker:
            start = int(key.split(".")[0])
            at = text.find("“" + head, start)
            at = at if at >= 0 else start
            yield key, speaker, new, text[max(start, at - context) : at].replace("\n", "⏎")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--novel", required=True, help="plain text of the novel (UTF-8)")
    parser.add_argument("--save", help="write every quote's speaker to this JSON file")
    parser.add_argument("--against", help="a file written by --save: print the quotes whose speaker changed")
    parser.add_argument("--context", type=int, default=80, help="characters of text shown before a changed quote")
    args = parser.parse_args()
    text = Path(args.novel).read_text(encoding="utf-8")
    began = time.perf_counter()
    found = quote_speakers(text)
    print(f"{len(found)} quotes labelled with {RuleLabeler.model} in {time.perf_counter() - began:.1f} s")
    if args.save:
        Path(args.save).write_text(json.dumps(found, ensure_ascii=False), encoding="utf-8")
    if args.against:
        before = json.loads(Path(args.against).read_text(encoding="utf-8"))
        changed = list(changes(before, found, text, args.context))
        for key, old, new, context in changed:
            print(f"{key:>12}  {old} → {new}  | {context}")
        print(f"{len(changed)} of {len(before)} quotes changed speaker")


if __name__ == "__main__":
    main()

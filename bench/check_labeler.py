"""The rule labeler on a seeded draw of excerpts: structural checks, and every quote for hand-checking.

    python bench/check_labeler.py --seed 7 [--n 80] [--all] [--novel PATH] [--context 200] [--answers FILE]

Excerpts are cut by the pipeline's own slicer (``slice_text``, default lengths); those without a
quote are dropped unless ``--all`` is given (they have no speaker to check). They are labeled with the
lexicon of the whole novel, as ``label_slices`` does. For every excerpt it checks that the contents,
joined, give back the excerpt, and that narration and dialogue are told apart: no segment mixes
quoted and unquoted text, every segment outside quotes is narration, and a quote is given to the
narrator only when it is not speech (an inscription, a quoted name); those are counted apart. Then it
prints each excerpt (with the text just before it, for the reader) and its quotes as
``s003.1  speaker  | quote``.

Speaker accuracy is measured by a person reading those lines. ``--answers`` scores a file of their
verdicts: one line per quote, ``s003.1 name[|alias…]`` (``#`` starts a comment); a quote is right when
its predicted speaker is one of the names given.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

DEFAULT_NOVEL = Path(__file__).resolve().parents[1] / "corpus" / "story.txt"  # the README's figures: --novel 水浒传


def quote_mask(text: str) -> list[bool]:
    """For each character read aloud (see ``reading_text``): True when it lies inside “…”."""
    from audiobook_rl.script import SCENE_BREAK, reading_text

    mask = []
    depth = 0
    for line in text.split("\n"):
        if SCENE_BREAK.match(line):
            continue
        for ch in line:
            if ch == "“":
                depth += 1
            elif ch == "”":
                depth = max(0, depth - 1)
            elif reading_text(ch):
                mask.append(depth > 0)
    return mask


def quoted_segments(text: str, script) -> list | None:
    """The segments inside quote marks, in order; None when a segment mixes quoted and unquoted
    text or a segment outside quotes is not narration."""
    from audiobook_rl.script import NARRATOR, reading_text

    mask = quote_mask(text)
    pos = 0
    quoted = []
    for seg in script:
        n = len(reading_text(seg.content))
        inside = mask[pos : pos + n]
        pos += n
        if not inside or len(set(inside)) != 1 or (not inside[0] and seg.speaker != NARRATOR):
            return None
        if inside[0]:
            quoted.append(seg)
    return quoted if pos == len(mask) else None


def read_answers(path: str) -> dict[str, set[str]]:
    answers = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            key, names = line.split(maxsplit=1)
            answers[key] = set(names.split("|"))
    return answers


def main() -> None:
    from audiobook_rl.corpus import has_dialogue, read_text, slice_text
    from audiobook_rl.labeling.lexicon import build_lexicon
    from audiobook_rl.labeling.rules import RuleLabeler
    from audiobook_rl.script import NARRATOR, joined_content, reading_text

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--novel", default=str(DEFAULT_NOVEL))
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--n", type=int, default=80, help="excerpts to draw")
    parser.add_argument("--all", action="store_true", help="keep excerpts without dialogue")
    parser.add_argument("--min-chars", type=int, default=100)
    parser.add_argument("--max-chars", type=int, default=200)
    parser.add_argument("--context", type=int, default=200, help="characters shown before each excerpt")
    parser.add_argument("--answers", help="verdict file to score (see above)")
    parser.add_argument("--quiet", action="store_true", help="print the summary only")
    args = parser.parse_args()

    text, _ = read_text(args.novel)
    started = time.perf_counter()
    lexicon = build_lexicon(text)
    lexicon_s = time.perf_counter() - started
    slices = slice_text(text, n=args.n, min_chars=args.min_chars, max_chars=args.max_chars, seed=args.seed)
    if not args.all:
        slices = [s for s in slices if has_dialogue(s.text)]
    labeler = RuleLabeler(lexicon)
    started = time.perf_counter()
    scripts = labeler.label(slices)
    label_s = time.perf_counter() - started

    answers = read_answers(args.answers) if args.answers else {}
    rebuilt = agreed = n_quotes = right = scored = narrated = 0
    wrong = []
    for item, script in zip(slices, scripts):
        ok_text = joined_content(script) == reading_text(item.text)
        quotes = quoted_segments(item.text, script)
        ok_dialogue = quotes is not None
        rebuilt += ok_text
        agreed += ok_dialogue
        if not args.quiet:
            before = text[max(0, item.start - args.context) : item.start].replace("\n", "⏎")
            print(f"\n=== {item.id} @{item.start}  reconstructs={ok_text}  dialogue={ok_dialogue}")
            print(f"[before] …{before}")
            print(item.text.strip())
        for k, seg in enumerate(quotes or [], 1):
            narrated += seg.speaker == NARRATOR
            key = f"{item.id}.{k}"
            n_quotes += 1
            mark = ""
            if key in answers:
                scored += 1
                good = seg.speaker in answers[key]
                right += good
                mark = "  ok" if good else f"  WRONG (want {'|'.join(sorted(answers[key]))})"
                if not good:
                    wrong.append(f"{key}  {seg.speaker} → {'|'.join(sorted(answers[key]))}  | {seg.content[:30]}")
            if not args.quiet:
                print(f"  {key:8s} {seg.speaker:8s} | {seg.content[:60]}{mark}")

    print(f"\nseed {args.seed}: {len(slices)} excerpts, {n_quotes} quotes")
    print(f"reconstructs: {rebuilt}/{len(slices)}  narration/dialogue agrees: {agreed}/{len(slices)}")
    print(f"quotes read by the narrator as not speech: {narrated}")
    print(f"lexicon of the novel: {len(lexicon.names)} names, {lexicon_s:.2f} s; labeling: {label_s * 1000:.1f} ms")
    if answers:
        print(f"speakers right: {right}/{scored} = {right / max(scored, 1):.1%} ({n_quotes - scored} quotes without a verdict)")
        for line in wrong:
            print("  wrong:", line)


if __name__ == "__main__":
    main()

"""The rule labeler on a seeded draw of excerpts: structural checks, and every quote for hand-checking.

    python bench/check_labeler.py --seed 7 [--n 80] [--all] [--novel PATH] [--context 200] [--answers FILE]
    python bench/check_labeler.py --set bench/labeler_sets/check.json --novel PATH [--quiet]
    python bench/check_labeler.py --set … --novel PATH --backend claude [--config config/seed.yaml]

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

``--set`` scores a hand-labelled set instead of a draw (``bench/labeler_sets/*.json``: excerpts by
their offsets in the novel, and per quote its first characters, the names that are right for it, the
phenomenon it stands for and a note saying why). It reports accuracy per phenomenon with counts, and
the voice accuracy (:func:`audiobook_rl.judging.voice.voice_accuracy`) of the labeler's scripts
against reference scripts built from the labels: the labeler's own segments with each quote given the
first right name, the other right names folded into it as aliases of that excerpt; a quote left
unlabelled (``"speaker": null``) keeps the labeler's speaker there and is not counted per quote.

The sets up to ``check16`` and ``check21`` to ``check30`` hold 水浒传 excerpts: offsets into the
public-domain plain-text copy ``shuihuzhuan.txt`` (pass it with ``--novel``; each set records its
checksum, and the novel itself is not in the repository). ``tuning.json`` (even chapters) is what the rules were written
on. ``check.json`` (odd chapters), ``check2.json`` to ``check16.json`` were each drawn apart from every
excerpt looked at before and labelled by reading the novel around them before the labeler ran on them;
each was held out until its first measurement, after which the errors of the first three were read and
rules written from them (``rules-v3``), then those of ``check4`` and ``check5`` (``rules-v4``), then
those of ``check6`` (``rules-v5``), of ``check7`` (``rules-v6``), of ``check8`` (``rules-v7``), of
``check9`` (``rules-v8``), of ``check10`` (``rules-v9``), of ``check11`` (``rules-v10``) and of
``check12`` (``rules-v11``), each drawn after the rule change before it and measured once; ``check13``
and ``check14`` (the latter 500 characters or more from every earlier excerpt) were drawn after that
rule change and measured once, and their errors and those of ``check11`` and ``check12`` gave
``rules-v12``; ``check15`` (500 characters or more away too) was drawn and labelled before those rules
were written and measured once after them, and its errors gave ``rules-v13``, before which ``check16``
(500 characters or more from every earlier excerpt, ``check15`` included) was drawn and labelled in
the same way; its errors gave ``rules-v14``. ``check21`` (the excerpts of the text left 100 to 300
characters from every earlier excerpt and seeded draw) was measured once with ``rules-v18``, and its
errors gave ``rules-v19``; ``check22`` (100 characters or more from all of them, check21 included,
picked for descriptor tags) was labelled while ``rules-v19`` was frozen, measured once with it, and its
errors gave ``rules-v20``; ``check23`` and ``check24`` (the excerpts with descriptor tags that overlap no
earlier excerpt or seeded draw) were labelled while ``rules-v21`` and ``rules-v22`` were written, each
measured once with them, and their errors gave ``rules-v22`` to ``rules-v24``. ``check25`` (the text left
between all of them and the seeded draws, picked for descriptor tags), ``check26`` (the excerpts of the
seeded draws never scored with a verdict file) and ``check27`` (the text left again, picked for two names
in a tag, names with words before the verb and quotes with next to no tag) were labelled while
``rules-v25``, ``rules-v26`` and ``rules-v27`` were written from the set before, and each was measured
once with them; so were ``check28`` to ``check30`` (100 windows each of the text left, picked for two
names in a tag, and for names with words or quotes with next to no tag) with ``rules-v28`` to
``rules-v30``. Quoted words nobody says are their own kind there, ``not speech`` (docs/labeler.md gives
every set's numbers; the README, the held-out totals).

``--backend claude`` measures the Claude labeler the same way (``ANTHROPIC_API_KEY`` in the environment;
the ``label`` and ``llm`` sections of ``config/config.yaml`` and any ``--config`` overlay: model,
prompt, ``label.context_chars``, and the reply cache, so a second run of a set costs nothing). Its
scripts are its own: an excerpt it never gives a valid script, or whose quotes it splits or joins
otherwise than the labels, counts every labelled quote of that excerpt wrong (listed as such). A
speaker written with a leading 那 or 这 (那汉子) is read without it, for every backend: the labels
give descriptors bare. The summary ends with the requests, tokens and cost.

``check17`` to ``check20`` hold excerpts of four other novels, to measure the labeler on text it was not
written on: 西游记, 红楼梦, 三国演义 and 隋唐演义, the plain-text files ``data/<name>.txt`` of the same
repository and commit as the 水浒传 copy (each set records the file's name, length and checksum; pass the
file with ``--novel``). Each was labelled before the rules it measures were frozen and measured once;
``rules-v15`` was written from check18's errors, ``rules-v16`` from check17's, ``rules-v17`` and ``rules-v18`` from those of
check19 and check20 (docs/labeler.md, "Other novels"). Excerpts were picked by text alone (a tag with a
descriptor, no subject, two names, a name with words after it), never by what the labeler answered.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from audiobook_rl.judging.speaker_key import quoted_segments, reference_script

DEFAULT_NOVEL = Path(__file__).resolve().parents[1] / "corpus" / "story.txt"  # the figures in docs/labeler.md: --novel 水浒传


def read_answers(path: str) -> dict[str, set[str]]:
    answers = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            key, names = line.split(maxsplit=1)
            answers[key] = set(names.split("|"))
    return answers


def read_set(path: str, text: str) -> tuple[dict, list]:
    """A labelled set and its excerpts as slices (ids ``c<start>``); warns when the novel given is not
    the one the set's offsets were taken from."""
    import hashlib
    import json

    from audiobook_rl.corpus import Slice

    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    novel = doc.get("novel", {})
    if novel.get("sha256") and hashlib.sha256(text.encode()).hexdigest() != novel["sha256"]:
        print(f"warning: {path} was labelled on another copy of {novel.get('name', 'the novel')} "
              f"({novel.get('chars')} characters); offsets may not match")
    slices = [Slice(f"c{e['start']}", text[e["start"] : e["end"]], e["start"], e["end"]) for e in doc["excerpts"]]
    return doc, slices


def right_speaker(speaker: str, names) -> bool:
    """``speaker`` is one of ``names``, read without a leading 那/这 (那汉子 is 汉子)."""
    if speaker in names:
        return True
    for lead in ("那个", "这个", "那", "这"):
        if speaker.startswith(lead) and len(speaker) > len(lead) and speaker[len(lead) :] in names:
            return True
    return False


def aligned(item, script, labels) -> list | None:
    """The quote segments of ``script`` when they are the labelled quotes (same count, each starting
    as labelled), else None."""
    from audiobook_rl.script import reading_text

    quotes = quoted_segments(item.text, script) if script is not None else None
    if quotes is None or len(quotes) != len(labels):
        return None
    if any(not reading_text(seg.content).startswith(reading_text(label["head"])) for seg, label in zip(quotes, labels)):
        return None
    return quotes


def score_set(args, text, lexicon, labeler, lexicon_s) -> None:
    from collections import Counter

    from audiobook_rl.judging.voice import VoiceAccuracy, voice_accuracy
    from audiobook_rl.script import joined_content, reading_text

    doc, slices = read_set(args.set, text)
    # A labeler whose excerpts can fail one by one (a model) is measured on what it gives; the rules'
    # scripts always keep the quotes as the text has them, so a mismatch there is a broken set.
    strict = not hasattr(labeler, "try_label")
    started = time.perf_counter()
    scripts = getattr(labeler, "try_label", labeler.label)(slices)
    label_s = time.perf_counter() - started
    right, total, wrong, reach = Counter(), Counter(), [], Counter()
    voices = VoiceAccuracy()
    structural = unaligned = 0
    for item, script, excerpt in zip(slices, scripts, doc["excerpts"]):
        labels = excerpt["quotes"]
        quotes = aligned(item, script, labels)
        structural += quotes is not None and joined_content(script) == reading_text(item.text)
        if quotes is None and strict:
            found = quoted_segments(item.text, script) or []
            raise SystemExit(f"{item.id}: {len(found)} quotes found, {len(labels)} labelled (or a quote starts otherwise)")
        if not args.quiet:
            print(f"\n=== {item.id} (chapter {excerpt.get('chapter')})")
            print(item.text.strip())
        if quotes is None:
            unaligned += 1
            why = "no valid script" if script is None else "its quotes are not the labelled ones"
            if not args.quiet:
                print(f"  {why}: every labelled quote counts wrong")
            for k, label in enumerate(labels, 1):
                if label["speaker"] is not None:
                    for kind in (label["kind"], "all"):
                        total[kind] += 1
                    wrong.append(f"{item.id}.{k} [{label['kind']}] ({why}) → {'|'.join(label['speaker'])}  | {label['note']}")
                    reach[reachable(label, item, text, lexicon)] += 1
            continue
        for k, (seg, label) in enumerate(zip(quotes, labels), 1):
            if label["speaker"] is None:
                mark = "  (not scored)"
            else:
                good = right_speaker(seg.speaker, label["speaker"])
                for kind in (label["kind"], "all"):
                    total[kind] += 1
                    right[kind] += good
                mark = "  ok" if good else f"  WRONG (want {'|'.join(label['speaker'])})"
                if not good:
                    want = "|".join(label["speaker"])
                    wrong.append(f"{item.id}.{k} [{label['kind']}] {seg.speaker} → {want}  | {label['note']}")
                    reach[reachable(label, item, text, lexicon)] += 1
            if not args.quiet:
                print(f"  {item.id}.{k:<3d} {seg.speaker:8s} | {seg.content[:40]}{mark}")
        reference, aliases = reference_script(script, quotes, labels)
        voices += voice_accuracy(reference, script, {**lexicon.aliases, **aliases}, item.text)

    print(f"\n{doc.get('title', args.set)}: {len(slices)} excerpts, {total['all']} quotes scored "
          f"({labeler.backend}, {labeler.model})")
    print(f"reconstructs and splits narration from dialogue: {structural}/{len(slices)}")
    if unaligned:
        print(f"excerpts without a script whose quotes are the labelled ones: {unaligned} (their quotes count wrong; "
              "voice accuracy leaves them out)")
    print(f"lexicon of the novel: {len(lexicon.names)} names, {lexicon_s:.2f} s; labeling: {label_s * 1000:.1f} ms")
    for kind in sorted(k for k in total if k != "all") + ["all"]:
        print(f"  {kind:14s} {right[kind]:4d}/{total[kind]:<4d} = {right[kind] / total[kind]:6.1%}")
    print(f"voice accuracy of the scripts against the references: {voices.overall:.1%} "
          f"(narration {voices.narration:.1%}, quotes {voices.quotes:.1%}; {voices.reason()})")
    if wrong:
        print(f"wrong quotes by where the text names the right speaker: {', '.join(f'{what} {reach[what]}' for what in REACH)}")
    for line in wrong:
        print("  wrong:", line)


# Where a wrongly labelled quote's right speaker is to be found (reachable): what a labeler reading
# the excerpt and the text before it could know.
REACH = ("in sight", "named elsewhere", "never named", "doubtful")


def reachable(label: dict, item, text: str, lexicon, before: int = 1500) -> str:
    """``in sight``: a right name the lexicon knows (a group: each of its names) stands in the excerpt or
    the ``before`` characters before it; ``named elsewhere``: a known name, not there (further back, or
    only after); ``never named``: a role or group word no list knows as a name; ``doubtful``: the
    label's note says so."""
    if "doubt" in label["note"].lower():
        return "doubtful"
    names = [n for n in label["speaker"] if all(part in lexicon.names for part in n.split("、"))]
    if not names:
        return "never named"
    window = text[max(0, item.start - before) : item.end]
    return "in sight" if any(all(part in window for part in n.split("、")) for n in names) else "named elsewhere"


def main() -> None:
    from audiobook_rl import backends, llm
    from audiobook_rl.config import load_config
    from audiobook_rl.corpus import read_text
    from audiobook_rl.labeling.lexicon import build_lexicon
    from audiobook_rl.paths import CONFIG

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--novel", default=str(DEFAULT_NOVEL))
    parser.add_argument("--seed", type=int, help="draw excerpts with this seed")
    parser.add_argument("--set", help="score a hand-labelled set (see above) instead of a draw")
    parser.add_argument("--n", type=int, default=80, help="excerpts to draw")
    parser.add_argument("--all", action="store_true", help="keep excerpts without dialogue")
    parser.add_argument("--min-chars", type=int, default=100)
    parser.add_argument("--max-chars", type=int, default=200)
    parser.add_argument("--context", type=int, default=200, help="characters shown before each excerpt")
    parser.add_argument("--answers", help="verdict file to score (see above)")
    parser.add_argument("--quiet", action="store_true", help="print the summary only")
    parser.add_argument("--backend", default="rules", choices=sorted(backends.REGISTRY["label"]),
                        help="the labeler to measure (default: rules)")
    parser.add_argument("--config", action="append", default=[], metavar="FILE",
                        help="config overlay for the backend's label and llm settings (repeatable)")
    args = parser.parse_args()
    if (args.seed is None) == (args.set is None):
        parser.error("give either --seed or --set")

    text, _ = read_text(args.novel)
    started = time.perf_counter()
    lexicon = build_lexicon(text)
    lexicon_s = time.perf_counter() - started
    config = load_config(CONFIG, overlays=args.config)
    settings = {**config["label"], "backend": args.backend}
    with llm.session(config["llm"], stage="check_labeler") as session:
        labeler = backends.get("label", args.backend).load()(settings, lexicon)  # as label_slices builds it
        if args.set:
            score_set(args, text, lexicon, labeler, lexicon_s)
        else:
            draw(args, text, lexicon, labeler, lexicon_s)
    if backends.get("label", args.backend).provider:  # a paid backend: what the measurement cost
        usage = session.usage.summary()
        cost = "unknown (no price for the model in llm.prices_per_mtok)" if usage["cost_usd"] is None else f"{usage['cost_usd']:.2f} USD"
        print(f"{usage['requests_sent']} requests sent, {usage['cache_hits']} from the cache; "
              f"{usage['input_tokens']} tokens in, {usage['output_tokens']} out; cost {cost}")


def draw(args, text, lexicon, labeler, lexicon_s) -> None:
    from audiobook_rl.corpus import has_dialogue, slice_text
    from audiobook_rl.script import NARRATOR, joined_content, reading_text

    slices = slice_text(text, n=args.n, min_chars=args.min_chars, max_chars=args.max_chars, seed=args.seed)
    if not args.all:
        slices = [s for s in slices if has_dialogue(s.text)]
    started = time.perf_counter()
    scripts = getattr(labeler, "try_label", labeler.label)(slices)
    label_s = time.perf_counter() - started

    answers = read_answers(args.answers) if args.answers else {}
    rebuilt = agreed = n_quotes = right = scored = narrated = 0
    wrong = []
    for item, script in zip(slices, scripts):
        script = script or []  # no valid script: nothing reconstructs
        ok_text = joined_content(script) == reading_text(item.text)
        quotes = quoted_segments(item.text, script) if script else None
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
                good = right_speaker(seg.speaker, answers[key])
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

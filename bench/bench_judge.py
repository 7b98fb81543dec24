"""Benchmark of the judges.

1. Rubric judge throughput (scores per second, one core) on realistic scripts: the references in
   results/labels.jsonl (build them with `snakemake --cores 2 results/labels.jsonl`; without the
   file, the bundled story is rule-labeled here) against damaged copies of them: the copy itself,
   a dropped segment, a line of dialogue given to the narrator, every quote given to another
   character, flattened tones, all segments merged, the first half only, broken JSON, the script
   wrapped in prose and a code fence, a stub (a speech tag and one invented line), the same
   output for every input (another excerpt's script), and the voice hacks: everything in one
   character's voice, every speaker a speech tag, every speaker a fragment of the text, the
   narration read by characters (quotes right). Prints the mean score of each and checks that
   every damaged copy scores below the copy.
2. LLM judge wall time vs the ideal ⌈n/concurrency⌉ × latency against a loopback chat-completions
   server with injected latency, for the glm (zhipuai SDK) and openai backends.

    python bench/bench_judge.py [--labels results/labels.jsonl] [--cases 200] [--latency 0.3] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from loopback.damage import (  # noqa: E402
    break_json,
    characters_read_narration,
    drop_segment,
    dumps,
    flatten_tones,
    half_text,
    merge_all,
    one_voice,
    speech_tags,
    story_cases,
    stub,
    swap_speaker,
    text_fragments,
    wrong_speakers,
)
from loopback.remote import Remote  # noqa: E402

from audiobook_rl.files import read_jsonl  # noqa: E402
from audiobook_rl.config import section  # noqa: E402
from audiobook_rl.judging.llm_judge import LLMJudge  # noqa: E402
from audiobook_rl.judging.rubric import RubricJudge  # noqa: E402
from audiobook_rl.script import from_dicts  # noqa: E402


def references(path: Path) -> tuple[list[dict], str]:
    if path.is_file():
        rows = read_jsonl(path)
        return [{**r, "script": from_dicts(r["script"])} for r in rows], str(path)
    return story_cases(20), "the bundled story, rule-labeled (no results/labels.jsonl)"


NAMES = [
    "copy", "drop", "swap speaker", "wrong speakers", "flatten tones", "merge all", "half text",
    "broken JSON", "prose+fence", "stub", "same output for every input",
    "one character's voice", "speech tags as speakers", "text fragments as speakers", "characters read narration",
]


def candidates(ref: dict, other: dict) -> list[str]:
    """The candidates of NAMES, in order, for one reference (``other``: another excerpt's)."""
    script = ref["script"]
    text = dumps(script)
    return [
        text,
        dumps(drop_segment(script)),
        dumps(swap_speaker(script)),
        dumps(wrong_speakers(script, ref.get("aliases"))),
        dumps(flatten_tones(script)),
        dumps(merge_all(script)),
        dumps(half_text(script)),
        break_json(text),
        f"好的，下面是脚本：\n```json\n{text}\n```\n希望有帮助。",
        dumps(stub(script)),
        dumps(other["script"]),
        dumps(one_voice(script, ref.get("aliases"))),
        dumps(speech_tags(script)),
        dumps(text_fragments(script)),
        dumps(characters_read_narration(script, ref.get("aliases"))),
    ]


def bench_rubric(refs: list[dict], seconds: float) -> None:
    judge = RubricJudge(section("judge")["weights"])
    k = len(NAMES)
    cases = [
        (r["text"], r["script"], c, r.get("aliases"))
        for i, r in enumerate(refs)
        for c in candidates(r, refs[(i + 1) % len(refs)])
    ]
    chars = sum(len(r["text"]) for r in refs) / len(refs)
    segs = sum(len(r["script"]) for r in refs) / len(refs)
    n, started = 0, time.process_time()
    while time.process_time() - started < seconds:
        for case in cases:
            judge.score(*case)
        n += len(cases)
    cpu = time.process_time() - started
    print(
        f"rubric judge: {n} scores in {cpu:.2f} s CPU on one core = {n / cpu:,.0f} scores/s "
        f"({len(refs)} references, {chars:.0f} chars and {segs:.1f} segments on average, {k} candidates each)"
    )
    verdicts = [judge.score(*c) for c in cases]
    print(f"  {'mean of':28s} {'overall':>8s} {'speaker':>8s} {'emotion':>8s} {'segment.':>8s}")
    for i, name in enumerate(NAMES):
        rows = verdicts[i::k]
        means = [sum(v.overall for v in rows)] + [sum(v.scores[d] for v in rows) for d in ("speaker", "emotion", "segmentation")]
        print(f"  {name:28s} " + " ".join(f"{m / len(rows):8.3f}" for m in means))
    # A damage that changes nothing (no quote to give away, tones already flat) is not a damage.
    damaged = [j for j in range(len(cases)) if j % k and cases[j][2] != cases[j - j % k][2]]
    below = sum(verdicts[j].overall < verdicts[j - j % k].overall for j in damaged)
    print(f"  damaged copies scoring below their reference's copy: {below}/{len(damaged)}")


def bench_llm(refs: list[dict], n_cases: int, latency: float, concurrency: int) -> None:
    os.environ.setdefault("ZHIPUAI_API_KEY", "glm-bench-0123456789")
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-0123456789")
    cases = []
    for i in range(n_cases):
        r = refs[i % len(refs)]
        cases.append(
            {
                "id": f"c{i}",
                "source": r["text"],
                "reference": r["script"],
                "candidate": candidates(r, r)[i % len(NAMES)] + f"\n#{i}",
                "aliases": r.get("aliases"),
            }
        )
    for backend, provider, suffix in (("glm", "zhipuai", "/api/paas/v4"), ("openai", "openai", "/v1")):
        # The server runs in its own process, so that it does not compete for this one's interpreter lock.
        with tempfile.TemporaryDirectory() as cache, Remote("judge", latency) as server:
            llm = {
                "base_url": {provider: server.url + suffix},
                "cache_dir": cache,
                "concurrency": concurrency,
                "rate_limit_per_minute": {provider: 0},
            }
            judge = LLMJudge(section("judge", {"backend": backend, "model": "bench"}), llm)
            started = time.perf_counter()
            verdicts = judge.score_many(cases)
            wall = time.perf_counter() - started
            assert all(v.overall == 0.5 for v in verdicts), "unexpected verdicts"
            ideal = math.ceil(n_cases / concurrency) * latency
            stats = server.stats()
            print(
                f"{backend} judge: {n_cases} cases, concurrency {concurrency}, latency {latency * 1000:.0f} ms: "
                f"wall {wall:.2f} s, ideal {ideal:.2f} s, ratio {wall / ideal:.3f}; "
                f"max in flight {stats['max_in_flight']}, requests {stats['count']}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=Path("results/labels.jsonl"))
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU seconds of rubric scoring")
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    refs, where = references(args.labels)
    print(f"references: {where}")
    bench_rubric(refs, args.seconds)
    bench_llm(refs, args.cases, args.latency, args.concurrency)


if __name__ == "__main__":
    main()

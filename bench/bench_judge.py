"""Benchmark of the judges.

1. Rubric judge throughput (scores per second, one core) on realistic scripts: the references in
   results/labels.jsonl (build them with `snakemake --cores 2 results/labels.jsonl`; without the
   file, the bundled story is rule-labeled here) against damaged copies of them: the copy itself,
   a dropped segment, a swapped speaker, flattened tones, all segments merged, broken JSON, and
   the script wrapped in prose and a code fence.
2. LLM judge wall time vs the ideal ⌈n/concurrency⌉ × latency against a loopback chat-completions
   server with injected latency, for the glm (zhipuai SDK) and openai backends.

    python bench/bench_judge.py [--labels results/labels.jsonl] [--cases 200] [--latency 0.3] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from loopback.damage import (  # noqa: E402
    break_json,
    drop_segment,
    dumps,
    flatten_tones,
    merge_all,
    story_cases,
    swap_speaker,
)
from loopback.remote import Remote  # noqa: E402

from audiobook_rl.files import read_jsonl  # noqa: E402
from audiobook_rl.judging import SEED_WEIGHTS, make_judge  # noqa: E402
from audiobook_rl.script import from_dicts  # noqa: E402


def references(path: Path) -> tuple[list[dict], str]:
    if path.is_file():
        rows = read_jsonl(path)
        return [{**r, "script": from_dicts(r["script"])} for r in rows], str(path)
    return story_cases(20), "the bundled story, rule-labeled (no results/labels.jsonl)"


def candidates(script) -> list[str]:
    text = dumps(script)
    return [
        text,
        dumps(drop_segment(script)),
        dumps(swap_speaker(script)),
        dumps(flatten_tones(script)),
        dumps(merge_all(script)),
        break_json(text),
        f"好的，下面是脚本：\n```json\n{text}\n```\n希望有帮助。",
    ]


def bench_rubric(refs: list[dict], seconds: float) -> None:
    judge = make_judge({"backend": "rubric"})
    cases = [(r["text"], r["script"], c, r.get("aliases")) for r in refs for c in candidates(r["script"])]
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
        f"({len(refs)} references, {chars:.0f} chars and {segs:.1f} segments on average, 7 candidates each)"
    )
    means = [sum(judge.score(*c).overall for c in cases[i::7]) / len(refs) for i in range(7)]
    names = ["copy", "drop", "swap speaker", "flatten tones", "merge all", "broken JSON", "prose+fence"]
    print("  mean overall: " + ", ".join(f"{k} {v:.3f}" for k, v in zip(names, means)))


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
                "candidate": candidates(r["script"])[i % 7] + f"\n#{i}",
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
            judge = make_judge({"backend": backend, "model": "bench", "weights": SEED_WEIGHTS}, llm)
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

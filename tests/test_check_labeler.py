"""``bench/check_labeler.py --backend claude``: the Claude labeler scored on a hand-labelled set as the
rule labeler is, through the real anthropic SDK against a loopback Messages API server. A tiny novel
and set of its own stand in for 水浒传 and its sets (which are not in the repository)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import yaml
from loopback import Loopback, Reply, anthropic_message
from loopback.scripts import excerpt_of, fast_client_settings

from audiobook_rl.script import Segment
from helpers import REPO

NOVEL = (
    "第一回 林青夜访\n"
    "城东桥头有个卖酒的汉子，姓王名七，平日里只在桥头摆摊。\n"
    "这一日天色将晚，林青推门进来，冷笑道：“你还敢来？”那汉子吓得后退一步，颤声道：“小人只是路过。”\n"
    "林青道：“路过便罢。”那汉子又道：“多谢官人。”\n"
    "次日，两人又在桥头相遇。林青问道：“昨夜可曾睡好？”王七答道：“托官人的福。”\n"
)
LIN = ["林青"]
WANG = ["王七", "王"]


def paragraph(k: int) -> tuple[int, int]:
    start = sum(len(line) + 1 for line in NOVEL.split("\n")[:k])
    return start, start + len(NOVEL.split("\n")[k])


def labelled_set() -> dict:
    def quote(head, kind, speaker):
        return {"head": head, "kind": kind, "speaker": speaker, "note": "test"}

    excerpts = [
        [quote("你还敢来", "plain", LIN), quote("小人只是", "descriptor", WANG)],
        [quote("路过便罢", "plain", LIN), quote("多谢官人", "descriptor", WANG)],
        [quote("昨夜可曾", "plain", LIN), quote("托官人的", "plain", WANG)],
    ]
    return {
        "title": "tiny set",
        "novel": {"name": "tiny", "chars": len(NOVEL), "sha256": hashlib.sha256(NOVEL.encode()).hexdigest()},
        "excerpts": [{"start": a, "end": b, "chapter": 1, "quotes": q} for (a, b), q in zip(map(paragraph, (2, 3, 4)), excerpts)],
    }


def script(text: str, speakers: list[str]) -> str:
    """A valid reference for ``text``: narration by 旁白, its quotes by ``speakers`` in order."""
    segments, rest = [], text
    for speaker in speakers:
        before, _, after = rest.partition("“")
        quote, _, rest = after.partition("”")
        segments += [Segment("旁白", before, "平静", 1, 300), Segment(speaker, quote, "平静", 2, 500)]
    if rest:
        segments.append(Segment("旁白", rest, "平静", 1, 800))
    return json.dumps([s.to_dict() for s in segments], ensure_ascii=False)


def respond(kind, body, n):
    text = excerpt_of(body)
    if text.startswith("这一日"):  # right, the man named before the excerpt by his name
        return Reply(body=anthropic_message(script(text, ["林青", "王七"])))
    if text.startswith("林青道"):  # the descriptor written as the text has it: wrong, and "那" read away
        return Reply(body=anthropic_message(script(text, ["那林青", "那汉子"])))
    return Reply(body=anthropic_message("抱歉，我无法完成。"))  # never a valid script


def run_bench(tmp_path: Path, server: Loopback) -> subprocess.CompletedProcess:
    novel, answers, overlay = tmp_path / "tiny.txt", tmp_path / "set.json", tmp_path / "overlay.yaml"
    novel.write_text(NOVEL, encoding="utf-8")
    answers.write_text(json.dumps(labelled_set(), ensure_ascii=False), encoding="utf-8")
    client = fast_client_settings(server.url, tmp_path / "cache")
    overlay.write_text(yaml.safe_dump({"label": {"model": "claude-opus-test", "max_attempts": 2}, "llm": client}))
    env = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": "sk-ant-loopback-0123456789", "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, str(REPO / "bench" / "check_labeler.py"), "--set", str(answers), "--novel", str(novel),
         "--backend", "claude", "--config", str(overlay), "--quiet"],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip


def test_the_claude_labeler_is_scored_per_phenomenon_with_what_it_cost(tmp_path):
    with Loopback(respond) as server:
        run = run_bench(tmp_path, server)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    assert "tiny set: 3 excerpts, 6 quotes scored (claude, claude-opus-test)" in out
    # plain: 林青 once right; 那林青 is read as 林青; the third excerpt never gets a script
    assert "  plain             2/4    =  50.0%" in out
    # descriptor: 王七 right (named before the excerpt); 那汉子 → 汉子 is not the named man
    assert "  descriptor        1/2    =  50.0%" in out
    assert "excerpts without a script whose quotes are the labelled ones: 1" in out
    assert "(no valid script) → 林青" in out and "[descriptor] 那汉子 → 王七|王" in out
    assert "4 requests sent, 0 from the cache" in out  # 1 + 1 + 2 tries of the one that never validates
    # where the right speakers of the three wrong quotes stand: 林青 and 王七 in the last excerpt are in
    # sight; the 汉子 of the second is 王七, whom the text before it gives only as 姓王名七
    assert "wrong quotes by where the text names the right speaker: in sight 2, named elsewhere 1, never named 0, doubtful 0" in out
    # the text before each excerpt went with it: the man's name is there
    assert all("姓王名七" in r["body"]["messages"][0]["content"] for r in server.requests)


def test_a_second_run_of_the_set_costs_nothing(tmp_path):
    with Loopback(respond) as server:
        run_bench(tmp_path, server)
    with Loopback(respond) as server:
        again = run_bench(tmp_path, server)
    assert again.returncode == 0, again.stderr[-3000:]
    assert server.count == 0 and "0 requests sent, 4 from the cache" in again.stdout


def test_a_wrong_quote_is_counted_by_where_the_text_names_its_speaker():
    import importlib.util

    from audiobook_rl.corpus import Slice
    from audiobook_rl.labeling.lexicon import build_lexicon

    spec = importlib.util.spec_from_file_location("check_labeler", REPO / "bench" / "check_labeler.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    lexicon = build_lexicon(NOVEL)
    start, end = paragraph(4)
    item = Slice("c", NOVEL[start:end], start, end)
    label = lambda speaker, note="test": {"speaker": speaker, "note": note}  # noqa: E731
    assert bench.reachable(label(LIN), item, NOVEL, lexicon) == "in sight"
    assert bench.reachable(label(["林青、王七"]), item, NOVEL, lexicon) == "in sight"  # a group: each of its names
    assert bench.reachable(label(LIN), item, NOVEL, lexicon, before=0) == "in sight"  # (in the excerpt itself)
    start, end = paragraph(1)
    first = Slice("c", NOVEL[start:end], start, end)
    assert bench.reachable(label(WANG), first, NOVEL, lexicon) == "named elsewhere"  # (姓王名七 here; 王七 after)
    assert bench.reachable(label(["卖酒的"]), item, NOVEL, lexicon) == "never named"
    assert bench.reachable(label(LIN, "DOUBTFUL: could be 王七"), item, NOVEL, lexicon) == "doubtful"

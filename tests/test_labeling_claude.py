"""The Claude labeler through the real anthropic SDK against a loopback Messages API server:
validation retries, failures naming the slice, resumable and free reruns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loopback import Loopback, Reply, anthropic_message
from loopback.scripts import excerpt_of, fast_client_settings, slices, valid_label_reply

from audiobook_rl import backends, llm
from audiobook_rl.corpus import Slice
from audiobook_rl.errors import UserError
from audiobook_rl.labeling import label_slices
from audiobook_rl.labeling.claude import ClaudeLabeler
from audiobook_rl.labeling.lexicon import build_lexicon
from helpers import settings

LABEL = settings("label", backend="claude", model="claude-opus-test", max_attempts=3)


def llm_settings(server: Loopback, tmp_path: Path, **overrides) -> dict:
    return fast_client_settings(server.url, tmp_path / "cache", **{"max_tries": 3, **overrides})


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-loopback-0123456789")


def valid(kind, body, n) -> Reply:
    return Reply(body=anthropic_message(valid_label_reply(body)))


def refuses_the_second(kind, body, n) -> Reply:
    """Valid replies, except for the second slice (第2回), which never gets a script."""
    if "第2回" in body["messages"][0]["content"]:
        return Reply(body=anthropic_message("抱歉，我不能完成。"))
    return valid(kind, body, n)


def test_labels_record_backend_model_and_prompt_hash(tmp_path):
    items = slices(3)
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path)):
            lexicon = build_lexicon("".join(s.text for s in items))
            records = label_slices(items, ClaudeLabeler(LABEL), lexicon)
    assert [r["id"] for r in records] == ["s000", "s001", "s002"]
    for r in records:
        assert (r["backend"], r["model"]) == ("claude", "claude-opus-test")
        assert (r["start"], r["end"]) == (items[int(r["id"][1:])].start, items[int(r["id"][1:])].end)
        assert len(r["prompt_hash"]) == 16
        assert "".join(seg["content"] for seg in r["script"]).startswith("第")
    assert server.count == 3


def test_malformed_reply_is_retried_with_the_validation_error_shown(tmp_path):
    def respond(kind, body, n):
        if n == 1:
            return Reply(body=anthropic_message('[{"speaker": "旁白", "content": "x", "tone": "开心"}]'))
        return valid(kind, body, n)

    with Loopback(respond) as server:
        with llm.session(llm_settings(server, tmp_path)):
            [script] = ClaudeLabeler(LABEL).label(slices(1))
    assert script and server.count == 2
    retry = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert "lacks 'intensity'" in retry[2]["content"]  # the parser's problem, shown to the model


def test_reply_that_drops_text_is_not_a_reference(tmp_path):
    def respond(kind, body, n):
        partial = json.loads(valid_label_reply(body))[:2]  # a valid array that omits most of the excerpt
        return Reply(body=anthropic_message(json.dumps(partial, ensure_ascii=False)))

    with Loopback(respond) as server:
        with llm.session(llm_settings(server, tmp_path)):
            with pytest.raises(UserError, match="slice s000:.*character F1"):
                ClaudeLabeler(LABEL).label(slices(1))
    assert server.count == 3


def test_reply_that_never_validates_fails_the_stage_naming_the_slice(tmp_path):
    items = slices(3)

    with Loopback(refuses_the_second) as server:
        with llm.session(llm_settings(server, tmp_path, concurrency=1)):
            with pytest.raises(UserError, match=r"slice s001: claude-opus-test gave no valid reference script in 3"):
                ClaudeLabeler(LABEL).label(items)


def test_crash_after_k_of_n_then_rerun_sends_exactly_the_rest(tmp_path):
    n, k = 6, 4

    def crash_after_k(kind, body, i):
        return valid(kind, body, i) if i <= k else Reply(401)  # e.g. the key was revoked mid-run

    with Loopback(crash_after_k) as server:
        with llm.session(llm_settings(server, tmp_path, concurrency=1)):
            with pytest.raises(UserError, match="slice s004"):
                ClaudeLabeler(LABEL).label(slices(n))
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path, concurrency=3)) as s:
            scripts = ClaudeLabeler(LABEL).label(slices(n))
    assert len(scripts) == n
    assert server.count == n - k
    assert s.usage.summary()["cache_hits"] == k


def test_finished_stage_rerun_sends_nothing(tmp_path):
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path)):
            first = ClaudeLabeler(LABEL).label(slices(5))
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path)) as s:
            again = ClaudeLabeler(LABEL).label(slices(5))
    assert again == first
    assert server.count == 0 and s.usage.summary()["requests_sent"] == 0


def test_validation_retries_are_cached_too(tmp_path):
    # A slice that needed a second reply costs nothing on the rerun: both replies are cached.
    def respond(kind, body, n):
        return Reply(body=anthropic_message("not json")) if n == 1 else valid(kind, body, n)

    with Loopback(respond) as server:
        with llm.session(llm_settings(server, tmp_path)):
            ClaudeLabeler(LABEL).label(slices(1))
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path)):
            ClaudeLabeler(LABEL).label(slices(1))
    assert server.count == 0


def test_missing_key_stops_before_any_slice_is_sent(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path)):
            with pytest.raises(
                UserError, match="label.backend 'claude' needs the environment variable ANTHROPIC_API_KEY"
            ):
                ClaudeLabeler(LABEL)
    assert server.count == 0


def test_prompt_is_the_configured_file(tmp_path):
    prompt = tmp_path / "label.md"
    prompt.write_text("=== system ===\nSYSTEM-MARK\n=== user ===\nTEXT: {{text}}\n", encoding="utf-8")

    def respond(kind, body, n):
        text = body["messages"][0]["content"].removeprefix("TEXT: ")
        return valid(kind, {"messages": [{"content": f"<excerpt>\n{text}\n</excerpt>"}]}, n)

    with Loopback(respond) as server:
        with llm.session(llm_settings(server, tmp_path)):
            labeler = ClaudeLabeler({**LABEL, "prompt": str(prompt)})
            labeler.label(slices(1))
            default = ClaudeLabeler(LABEL)  # inside the session: its client's cache is in tmp_path
    assert server.requests[0]["body"]["system"] == "SYSTEM-MARK"
    assert labeler.prompt_hash != default.prompt_hash


NOVEL = (
    "第一回 林青夜访\n"
    "城东桥头有个卖酒的汉子，姓王名七，平日里只在桥头摆摊。\n"
    "这一日天色将晚，林青推门进来，冷笑道：“你还敢来？”那汉子吓得后退一步，颤声道：“小人只是路过。”\n"
)


def novel_slice(novel: str, paragraph: int) -> Slice:
    start = sum(len(line) + 1 for line in novel.split("\n")[:paragraph])
    text = novel.split("\n")[paragraph]
    return Slice(f"s{paragraph:03d}", text, start, start + len(text))


def before_block(body: dict) -> str:
    content = body["messages"][0]["content"]
    return content[content.index("<before>\n") + 9 : content.index("\n</before>")]


@pytest.mark.parametrize(
    "context_chars,expected",
    [
        (1500, NOVEL.split("\n", 3)[0] + "\n" + NOVEL.split("\n", 3)[1] + "\n"),  # all of it: the novel starts there
        (30, NOVEL.split("\n")[1] + "\n"),  # from the first paragraph that starts in the last 30 characters
        (0, ""),  # the excerpt alone
    ],
    ids=["whole-start", "from-a-paragraph", "off"],
)
def test_the_request_carries_the_novel_just_before_the_excerpt(tmp_path, context_chars, expected):
    item = novel_slice(NOVEL, 2)
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path)):
            labeler = backends.get("label", "claude").load()(
                settings("label", backend="claude", model="claude-opus-test", context_chars=context_chars),
                build_lexicon(NOVEL),  # as label_slices builds it: the lexicon's text is the novel
            )
            labeler.label([item])
    body = server.requests[0]["body"]
    assert before_block(body) == expected  # the novel as it is (a paragraph that ends before the excerpt ends in a newline)
    assert excerpt_of(body) == item.text  # the excerpt itself, once, and apart


def test_a_slice_that_is_not_cut_from_the_novel_goes_alone(tmp_path):
    elsewhere = Slice("s009", "林青道：“走罢。”", 5, 14)  # offsets that point at other text
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path)):
            ClaudeLabeler(settings("label", backend="claude", model="claude-opus-test"), novel=NOVEL).label([elsewhere])
    assert before_block(server.requests[0]["body"]) == ""


def test_a_prompt_without_the_before_placeholder_is_warned_about(tmp_path, caplog):
    prompt = tmp_path / "label.md"
    prompt.write_text("=== system ===\n只输出 JSON。\n=== user ===\n<excerpt>\n{{text}}\n</excerpt>\n", encoding="utf-8")
    with Loopback(valid) as server:
        with llm.session(llm_settings(server, tmp_path)):
            ClaudeLabeler(settings("label", backend="claude", model="claude-opus-test", prompt=str(prompt)), novel=NOVEL)
    assert "has no {{before}} placeholder" in caplog.text and "label.context_chars" in caplog.text


def test_try_label_keeps_the_other_slices_when_one_never_validates(tmp_path):
    with Loopback(refuses_the_second) as server:
        with llm.session(llm_settings(server, tmp_path, concurrency=1)):
            scripts = ClaudeLabeler(LABEL).try_label(slices(3))
    assert scripts[1] is None and scripts[0] and scripts[2]
    assert server.count == 2 + LABEL["max_attempts"]


def test_try_label_still_stops_on_a_failing_api(tmp_path):
    with Loopback(lambda kind, body, n: Reply(401)) as server:
        with llm.session(llm_settings(server, tmp_path)):
            with pytest.raises(UserError, match="slice s000"):
                ClaudeLabeler(LABEL).try_label(slices(2))


def test_the_label_stage_takes_as_params_only_what_its_backend_reads():
    rules = backends.settings({"label": settings("label")}, "label")
    claude = backends.settings({"label": settings("label", backend="claude", context_chars=800)}, "label")
    assert rules == {"backend": "rules"}  # editing a Claude setting does not redo the rule labeler's references
    assert claude == settings("label", backend="claude", context_chars=800)  # every key of the section
    assert claude["context_chars"] == 800

"""`audiobook-rl judge` (and `label --backend claude`) on the command line, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from loopback import Loopback, Reply, anthropic_message, chat_completion
from loopback.scripts import REFERENCE, REFERENCE_JSON, SOURCE, judge_reply, valid_label_reply

from audiobook_rl.cli import main


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {name: tmp_path / name for name in ("source.txt", "reference.json", "candidate.txt")}
    paths["source.txt"].write_text(SOURCE, encoding="utf-8")
    paths["reference.json"].write_text(REFERENCE_JSON, encoding="utf-8")
    paths["candidate.txt"].write_text(f"好的，脚本如下：\n```json\n{REFERENCE_JSON}\n```", encoding="utf-8")
    return paths


def judge_args(files, *extra) -> list[str]:
    return [
        "judge",
        "--source",
        str(files["source.txt"]),
        "--reference",
        str(files["reference.json"]),
        "--candidate",
        str(files["candidate.txt"]),
        *extra,
    ]


def overlay(tmp_path: Path, **sections) -> str:
    path = tmp_path / "overlay.yaml"
    path.write_text(yaml.safe_dump(sections, allow_unicode=True), encoding="utf-8")
    return str(path)


def test_judge_prints_the_rubric_verdict_of_raw_model_output(files, capsys):
    assert main(judge_args(files)) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert (verdict["backend"], verdict["error"]) == ("rubric", None)
    candidate = files["candidate.txt"].read_text(encoding="utf-8")
    share = len(candidate[candidate.index("```"):]) / len(candidate)  # the preamble costs its share
    assert verdict["scores"]["format"] == pytest.approx(0.8 * share, abs=1e-6)
    assert "removed a code fence" in verdict["reasons"]["format"]
    assert verdict["overall"] == pytest.approx(1 - 0.2 * (1 - 0.8 * share), abs=1e-6)


def test_reference_may_be_a_labels_line(files, capsys):
    files["reference.json"].write_text(
        json.dumps({"id": "s1", "script": REFERENCE}, ensure_ascii=False), encoding="utf-8"
    )
    files["candidate.txt"].write_text(REFERENCE_JSON, encoding="utf-8")
    assert main(judge_args(files, "--compact")) == 0
    assert json.loads(capsys.readouterr().out)["overall"] == 1.0


def test_glm_backend_without_key_says_which_variable(files, capsys, monkeypatch):
    monkeypatch.delenv("ZHIPUAI_API_KEY", raising=False)
    assert main(judge_args(files, "--backend", "glm")) == 1
    err = capsys.readouterr().err
    assert err.startswith("audiobook-rl: error: judge.backend 'glm' needs the environment variable ZHIPUAI_API_KEY")


def test_glm_backend_through_a_config_overlay(files, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ZHIPUAI_API_KEY", "glm-cli-key-0123456789")
    with Loopback(lambda kind, body, n: Reply(body=chat_completion(judge_reply(0.25)))) as server:
        config = overlay(tmp_path, llm={"base_url": {"zhipuai": server.url}, "cache_dir": str(tmp_path / "cache")})
        assert main(judge_args(files, "--backend", "glm", "--config", config)) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert (verdict["backend"], verdict["model"], verdict["overall"]) == ("glm", "glm-4.7", 0.25)


def test_missing_file_is_one_sentence(files, capsys):
    files["reference.json"].unlink()
    assert main(judge_args(files)) == 1
    assert "reference.json: no such file" in capsys.readouterr().err


def test_label_with_the_claude_backend(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-cli-0123456789")
    excerpt = tmp_path / "excerpt.txt"
    excerpt.write_text(SOURCE, encoding="utf-8")
    with Loopback(lambda kind, body, n: Reply(body=anthropic_message(valid_label_reply(body)))) as server:
        config = overlay(tmp_path, llm={"base_url": {"anthropic": server.url}, "cache_dir": str(tmp_path / "cache")})
        assert main(["label", "--backend", "claude", "--config", config, str(excerpt)]) == 0
    script = json.loads(capsys.readouterr().out)
    assert "".join(s["content"] for s in script).startswith("林青推门进来")
    assert server.requests[0]["body"]["model"] == "claude-opus-4-1-20250805"


def test_the_command_line_says_a_full_disk_in_one_sentence_too(tmp_path, monkeypatch, capsys):
    # assemble-qwen writes gigabytes; a full disk there reads as it does in a stage, without a traceback.
    import errno

    from audiobook_rl.policy import gguf

    def full(out_dir, wheels_dir=None, size="0.5b"):
        raise OSError(errno.ENOSPC, "No space left on device", str(out_dir))

    monkeypatch.setattr(gguf, "assemble", full)
    assert main(["assemble-qwen", str(tmp_path / "models" / "qwen")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"audiobook-rl: error: audiobook-rl assemble-qwen stopped because the disk is full ({tmp_path}: ")
    assert err.endswith("free): free some space and run the same command again.") and "Traceback" not in err

    def broken(out_dir, wheels_dir=None, size="0.5b"):
        raise RuntimeError("something else")

    monkeypatch.setattr(gguf, "assemble", broken)
    with pytest.raises(RuntimeError):
        main(["assemble-qwen", str(tmp_path / "models" / "qwen")])


BEFORE = "那清河县里有一个大户人家，有个使女，小名唤做潘金莲，年方二十余岁。\n潘金莲道：“奴家知道了。”\n"
EXCERPT = "那妇人道：“叔叔万福。”"


def test_label_reads_the_text_before_the_excerpt_when_given(tmp_path, capsys):
    excerpt, before = tmp_path / "excerpt.txt", tmp_path / "before.txt"
    excerpt.write_text(EXCERPT, encoding="utf-8")
    before.write_text(BEFORE, encoding="utf-8")

    def speakers(*extra) -> list[str]:
        assert main(["label", *extra, str(excerpt)]) == 0
        return [s["speaker"] for s in json.loads(capsys.readouterr().out) if s["speaker"] != "旁白"]

    assert speakers() == ["妇人"]  # the excerpt alone names nobody
    assert speakers("--before", str(before)) == ["潘金莲"]  # the woman the text before it named
    assert main(["label", "--before", str(tmp_path / "missing.txt"), str(excerpt)]) == 1
    assert capsys.readouterr().err.strip() == f"audiobook-rl: error: {tmp_path / 'missing.txt'}: no such file (the text before the excerpt)."


def test_label_with_claude_sends_the_text_before_the_excerpt(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-cli-0123456789")
    excerpt, before = tmp_path / "excerpt.txt", tmp_path / "before.txt"
    excerpt.write_text(EXCERPT, encoding="utf-8")
    before.write_text(BEFORE, encoding="utf-8")
    with Loopback(lambda kind, body, n: Reply(body=anthropic_message(valid_label_reply(body)))) as server:
        config = overlay(tmp_path, llm={"base_url": {"anthropic": server.url}, "cache_dir": str(tmp_path / "cache")})
        assert main(["label", "--backend", "claude", "--config", config, "--before", str(before), str(excerpt)]) == 0
    content = server.requests[0]["body"]["messages"][0]["content"]
    assert f"<before>\n{BEFORE}\n</before>\n<excerpt>\n{EXCERPT}\n</excerpt>" in content

"""Reading novels in their usual encodings and cutting them into excerpts."""

import pytest

from audiobook_rl.corpus import Sentences, count_slices, quote_balanced, read_text, slice_text
from audiobook_rl.errors import UserError

from helpers import SHUIHU, STORY

SETTINGS = dict(n=20, min_chars=100, max_chars=200, seed=2024)


@pytest.fixture(scope="module")
def story() -> str:
    text, encoding = read_text(STORY)
    assert encoding == "utf-8"
    return text


def test_bundled_story_is_long_and_dialogue_rich(story):
    assert len(story) >= 15_000
    assert story.count("“") >= 200


def test_slicing_is_deterministic_and_seeded(story):
    first = slice_text(story, **SETTINGS)
    again = slice_text(story, **SETTINGS)
    other = slice_text(story, **{**SETTINGS, "seed": 1})
    assert first == again
    assert [s.start for s in first] != [s.start for s in other]


def test_slices_are_sentence_runs_within_bounds(story):
    slices = slice_text(story, **SETTINGS)
    assert len(slices) == 20
    ends = "。！？…”’"
    for s in slices:
        assert 100 <= len(s.text) <= 200
        assert story[s.start : s.end] == s.text
        assert s.text[-1] in ends, s.text
        assert not s.text[0].isspace()
        before = story[: s.start].rstrip(" \u3000")
        assert before == "" or before[-1] in ends + "\n", f"{s.id} starts mid-sentence"
    spans = sorted((s.start, s.end) for s in slices)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])), "slices overlap"


def test_no_slice_cuts_a_quote(story):
    for seed in range(5):
        for s in slice_text(story, **{**SETTINGS, "seed": seed}):
            for paragraph in s.text.split("\n"):
                assert quote_balanced(paragraph), (s.id, paragraph)


def test_windows_with_unbalanced_quotes_are_skipped():
    good = "　　林青道：“走吧。”沈墨白点了点头，转身出门去了。" * 3
    bad = "　　韩七道：“这话说到一半便断了。他又叹了口气，望着窗外。" * 3
    text = "\n\n".join([good, bad] * 30)
    for s in slice_text(text, n=10, min_chars=60, max_chars=120, seed=3):
        assert "韩七" not in s.text


@pytest.mark.parametrize("encoding,bom,newline", [("gbk", b"", "\n"), ("gb18030", b"", "\r\n"), ("utf-8", b"\xef\xbb\xbf", "\r\n"), ("utf-16", b"", "\n")])
def test_encoding_twins_give_identical_slices(tmp_path, story, encoding, bom, newline):
    twin = tmp_path / "twin.txt"
    twin.write_bytes(bom + story.replace("\n", newline).encode(encoding))
    text, _ = read_text(twin)
    assert text == story
    assert slice_text(text, **SETTINGS) == slice_text(story, **SETTINGS)


# The bundled story always; 水浒传 (rarer characters) where the data folder sits beside the repository.
NOVELS = [STORY] + [SHUIHU] * SHUIHU.is_file()


@pytest.mark.parametrize("novel", NOVELS, ids=[p.stem for p in NOVELS])
def test_a_novel_in_gbk_without_declaration_yields_the_same_slices(tmp_path, novel):
    original = novel.read_text(encoding="utf-8")[:200_000]
    (tmp_path / "u.txt").write_text(original, encoding="utf-8")
    (tmp_path / "g.txt").write_bytes(original.encode("gb18030"))
    a, _ = read_text(tmp_path / "u.txt")
    b, encoding = read_text(tmp_path / "g.txt")
    assert encoding == "gb18030"
    assert slice_text(a, **SETTINGS) == slice_text(b, **SETTINGS)


def test_sentences_end_after_closing_quotes():
    text = "　　林青道：“走吧。”沈墨白道：“好！”\n\n　　雪停了。"
    spans = Sentences(text)
    pieces = [text[a:b] for a, b in zip(spans.starts, spans.ends)]
    assert pieces == ["林青道：“走吧。”", "沈墨白道：“好！”", "雪停了。"]


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "no such file"),
        (b"", "empty"),
        (b"   \n\n", "empty"),
        (bytes(range(256)) * 20, "binary"),
        (b"\x81\x30" * 10 + b"\xff\xfe\xfd" * 50, "cannot be read"),
    ],
)
def test_bad_files_get_one_sentence(tmp_path, content, message):
    path = tmp_path / "novel.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError) as err:
        read_text(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_too_short_text_says_how_many_slices_it_can_make(story):
    with pytest.raises(UserError) as err:
        slice_text(story[:1500], **SETTINGS, source="short.txt")
    assert "short.txt: can make only" in str(err.value)
    assert "but 20 were requested" in str(err.value)


@pytest.mark.parametrize("chars", [800, 1500, 2200, 3000, 3600, 5000])
@pytest.mark.parametrize("n", [3, 10, 20])
def test_the_count_says_exactly_when_slicing_fails(story, chars, n):
    # The start-up check counts; the stage slices: they must agree on every text and request.
    text = story[:chars]
    count = count_slices(text, min_chars=100, max_chars=200, enough=n)
    if count >= n:
        assert len(slice_text(text, **{**SETTINGS, "n": n})) == n
    else:
        with pytest.raises(UserError, match=f"can make only {count} slices of 100–200 characters, but {n} were"):
            slice_text(text, **{**SETTINGS, "n": n})


def test_a_draw_that_boxes_itself_in_still_cuts_what_the_text_holds(story):
    # The seeded draw alone finds 16 of these 20 excerpts; the text holds 20 side by side.
    assert count_slices(story[:3000], min_chars=100, max_chars=200, enough=20) == 20
    slices = slice_text(story[:3000], **{**SETTINGS, "seed": 1})
    assert len(slices) == 20
    assert all(a.end <= b.start for a, b in zip(slices, slices[1:]))
    assert all(100 <= len(s.text) <= 200 for s in slices)


def test_counting_a_long_book_reads_only_as_far_as_it_needs(story):
    book = (story + "\n") * 70  # 1.2 million characters: the count grows a prefix past 1 MiB
    assert len(book) > 1 << 20
    every = count_slices(book, min_chars=100, max_chars=200, enough=10**9)
    assert every == 70 * count_slices(story + "\n", min_chars=100, max_chars=200, enough=10**9)
    assert count_slices(book, min_chars=100, max_chars=200, enough=20) == 20
    broken_tail = story + "\n" + "“" * (2 << 20)  # past the first prefix nothing can be cut
    assert count_slices(broken_tail, min_chars=100, max_chars=200, enough=10**9) == count_slices(story, min_chars=100, max_chars=200, enough=10**9)


def test_chapter_headings_are_not_part_of_slices(story):
    for s in slice_text(story, **SETTINGS):
        assert "第" not in s.text.split("\n")[0][:2] or "回" not in s.text.split("\n")[0][:6]


def test_the_text_before_an_excerpt_starts_at_a_paragraph_and_stays_in_the_scene_when_asked():
    from audiobook_rl.corpus import text_before

    novel = "第一回　雪夜\n　　老邓点起灯。\n\n　　＊　＊　＊\n\n　　第二天一早，钱百通上路了。\n　　那汉子道：“走吧。”"
    start = novel.index("　　那汉子")
    text = novel[start:]
    assert text_before(novel, start, text, 200) == novel[:start]  # the whole novel before it, heading included
    assert text_before(novel, start, text, 200, scene=True) == "\n　　第二天一早，钱百通上路了。\n".lstrip("\n")
    assert text_before(novel, start, text, 20) == "　　第二天一早，钱百通上路了。\n"  # from the paragraph that starts in it
    assert text_before(novel, start, text, 0) == "" and text_before(novel, start + 1, text, 200) == ""

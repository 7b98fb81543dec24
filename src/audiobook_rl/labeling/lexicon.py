"""Who speaks in a text: character names and their aliases, found from the text itself.

Names are collected from speech tags (``林青笑道：“…”`` → 林青): the words that start a tag clause
before the first character that cannot belong to a name (a verb, an adverb, a listener marker),
and from lists that join a name no tag holds to known ones (``李逵、鲍旭、项充、李衮``). Aliases come
from phrases such as ``人称“断水刀”的萧断水``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import partial

from .subjects import (
    COMPOUND_SURNAMES,
    LISTENER_MARKERS,
    NOT_NAMES,
    PERSON_HEADS,
    STOP,
    candidate,
    common_noun,
    name_shaped,
    strip_lead,
)

_LONG_HEADS = tuple(h for h in PERSON_HEADS if len(h) > 1)

ALIAS_PATTERNS = (
    # 人称“断水刀”的萧断水 / 江湖上人称断水刀的萧断水
    re.compile(r"(?:人称|号称|绰号|外号|人唤|唤作|叫做)[“‘]?([\u3400-\u9fff]{2,6}?)[”’]?的([\u3400-\u9fff]{2,4})"),
    # 萧断水，人称“断水刀” / 萧断水外号“断水刀”
    re.compile(r"([\u3400-\u9fff]{2,4})[，,]?(?:江湖上)?(?:人称|号称|绰号|外号|人唤)[“‘]([\u3400-\u9fff]{2,6})[”’]"),
)


@dataclass
class Lexicon:
    names: set[str] = field(default_factory=set)
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> the name it stands for
    # The text the names were read from: the labeler reads the story around an excerpt in it.
    text: str = field(default="", repr=False, compare=False)
    _pattern: tuple = field(default=(None, None), repr=False, compare=False)  # (size, regex) of names_in
    _counts: dict = field(default_factory=dict, repr=False, compare=False)  # word -> times in text

    def name_at(self, text: str, pos: int = 0) -> str | None:
        """The longest known name starting at ``pos``."""
        best = None
        for size in (5, 4, 3, 2):
            word = text[pos : pos + size]
            if len(word) == size and (word in self.names or word in self.aliases):
                best = word
                break
        return best

    def names_in(self, text: str):
        """The known names in ``text``, left to right, as regex matches (the longest at each place)."""
        key = (len(self.names), len(self.aliases))
        if self._pattern[0] != key:
            words = sorted(self.names | set(self.aliases), key=len, reverse=True)
            self._pattern = (key, re.compile("|".join(map(re.escape, words)) or "(?!)"))
        return self._pattern[1].finditer(text)

    def trimmed(self, word: str) -> str:
        """``word`` without the verb or object glued to its end (费珍慌忙 read as 费珍慌 → 费珍): the
        longest start of it that the text uses as often on its own."""
        return _trimmed(word, self.text, self._counts)

    def count(self, word: str) -> int:
        """How often ``word`` stands in the text (remembered: the rules ask again and again)."""
        return _counted(self.text, self._counts, word)

    def canonical(self, name: str) -> str:
        return self.aliases.get(name, name)

    def to_dict(self) -> dict:
        return {"names": sorted(self.names), "aliases": dict(sorted(self.aliases.items()))}


def tag_clauses(text: str):
    """Yield (clause, direct) for the subject clause of every speech tag: the first clause of the
    sentence that ends in ``…道：“`` (林青站起身来，笑道：“ → 林青站起身来; direct when it is the
    verb's own clause: 林青笑道：“), and the clause of a tag after a quote (”林青道。, direct)."""
    for match in re.finditer(r"([^。！？!?“”\n]{1,60}?)[：:，,]?(?=“)", text):
        clauses = re.split(r"[，,；;、]", match.group(1).strip())
        if re.search(r"(道|说|问|曰|叫|喝|嚷|喊|想)$", clauses[-1].rstrip("：:，, ")):
            yield clauses[0], len(clauses) == 1
    for match in re.finditer(r"”([^。！？!?“”\n，,]{1,12}?(?:道|说|问))[。，,！!]", text):
        yield match.group(1), True


def build_lexicon(text: str, *, min_count: int = 2) -> Lexicon:
    """Collect speaker names (seen at least ``min_count`` times in tags) and aliases from ``text``."""
    counts: Counter[str] = Counter()
    direct: Counter[str] = Counter()
    for clause, right_before_verb in tag_clauses(text):
        word = candidate(clause)
        stripped = strip_lead(clause)
        after = stripped[stripped.find(word) + len(word) - 1 :] if word else ""
        if word and len(word) > 2 and (after.startswith(_LONG_HEADS) or after[1:].startswith(_LONG_HEADS)):
            continue  # 兀颜小将军道: the word runs into a title (小将军), it is no name
        if word:
            counts[word] += 1
            direct[word] += right_before_verb
    words = {w for w, c in counts.items() if c >= min_count}
    tagged = counts
    # Drop a candidate that is a known name plus leftovers ("林青大" when "林青" is known), or a
    # verb, title or nickname before a known name (看着武松, 军师吴用, 九纹龙史进).
    starts = {w[:k] for w in words for k in range(1, len(w))}
    # Five characters is the length limit of a candidate: such a word is a title or nickname with
    # a name (左丞相娄敏中, 九纹龙史进), kept only to rule out the words inside it.
    names = {w for w in words if len(w) < 5 and not any(part in words for part in _proper_parts(w))}
    # A name tagged fewer times is kept when it stands right before the verb, looks like a name
    # (闻焕章道：“) and is no part of a known name, nor holds one (王定 beside 王定六).
    starts |= {w[:k] for w in names for k in range(1, len(w))}
    names |= {
        w
        for w in direct
        if (len(w) <= 3 or w.startswith(COMPOUND_SURNAMES))  # (耶律得重)
        and name_shaped(w)
        and not any(ch in STOP for ch in w[1:])  # (高声喝道)
        and not (len(w) == 2 and w[0] in LISTENER_MARKERS)  # (只闻人说道)
        and w not in starts
        and not any(part in names for part in _proper_parts(w))
    }
    # A name tagged once may hold the verb after it (周谨先怒道, 廖立挺喝道): the text, which uses the
    # name with other verbs, tells where it ends.
    times: dict = {}
    trimmed = {w: _trimmed(w, text, times) for w in names if tagged[w] < min_count}
    # (a start the text uses only inside longer names, 阮小 of 阮小二 and 阮小七, is none)
    names = {w if w not in trimmed or trimmed[w] in starts else trimmed[w] for w in names}
    lexicon = Lexicon(names=names, text=text)
    lexicon._counts.update(times)
    lexicon.names |= _listed(lexicon)
    lexicon.names -= {w for w in lexicon.names if w in NOT_NAMES or _before_a_name(w, lexicon.names)}
    for pattern in ALIAS_PATTERNS:
        for match in pattern.finditer(text):
            first, second = match.group(1), match.group(2)
            alias, name = (first, second) if pattern is ALIAS_PATTERNS[0] else (second, first)
            name = _known_prefix(name, names)
            if name and alias != name and alias not in lexicon.aliases:
                lexicon.aliases[alias] = name
                lexicon.names.add(name)
    # An alias is a way of naming a speaker too.
    lexicon.names.update(lexicon.aliases)
    return lexicon


def _listed(lexicon: Lexicon, *, min_lists: int = 2, min_count: int = 10) -> set[str]:
    """Names that never tag a quote alone but stand in lists beside known names (李逵、鲍旭、项充、
    李衮; 童贯和酆美、毕胜): a word shaped like a name, joined to a known name by 、 or 和 at least
    ``min_lists`` times, ending where the list goes on or stops, and found ``min_count`` times."""
    text, names = lexicon.text, lexicon.names
    seen: Counter[str] = Counter()
    for match in lexicon.names_in(text):
        if match.group().endswith(PERSON_HEADS):
            continue  # (官人、…: a person noun, not a name in a list)
        end, start = match.end(), match.start()
        if text[end : end + 1] in ("、", "和"):
            seen.update(_listed_word(text, end + 1, after=True))
        if text[start - 1 : start] == "、":
            seen.update(_listed_word(text, start - 1, after=False))
    starts = {name[:k] for name in names for k in range(2, len(name))}
    return {
        word
        for word, lists in seen.items()
        if lists >= min_lists
        and name_shaped(word)
        and not any(ch in STOP for ch in word[1:])
        and not word.endswith("家")  # (阮家: a family, 阮小二、阮小五、阮小七)
        and word not in starts
        and not any(name.startswith(word) or word.startswith(name) for name in names)
        and text.count(word) >= min_count
    }


def _listed_word(text: str, at: int, after: bool) -> list[str]:
    """The word of two or three characters that a list puts right after ``at`` (or right before
    it), where the list goes on or the clause ends; none if there is no such word."""
    for size in (3, 2) if after else (2, 3):
        word = text[at : at + size] if after else text[max(0, at - size) : at]
        edge = _LIST_END.match(text, at + size) if after else _LIST_START.match(text[at - size - 1 : at - size] or "。")
        if len(word) == size and edge and _CJK_WORD.fullmatch(word):
            return [word]
    return []


_CJK_WORD = re.compile(r"[\u4e00-\u9fff]+")
_LIST_END = re.compile("[、，。；和等两三四五六七八九十]")
_LIST_START = re.compile("[、，。；：]")


def _counted(text: str, counts: dict, word: str) -> int:
    """``text.count(word)``, remembered in ``counts``."""
    if word not in counts:
        counts[word] = text.count(word)
    return counts[word]


def _trimmed(word: str, text: str, counts: dict) -> str:
    """The longest start of ``word`` (two characters at least) that ``text`` holds at least a third
    as often as the word itself (a name recurs with other verbs after it; 费珍慌 is 费珍 once)."""
    if len(word) < 3 or not text:
        return word
    count = partial(_counted, text, counts)
    times = count(word)
    for size in range(len(word) - 1, 1, -1):
        shorter = word[:size]
        if shorter in COMPOUND_SURNAMES or not name_shaped(shorter):
            continue  # 耶律得重 is no 耶律
        if count(shorter) >= max(3, 3 * times):
            return shorter
    return word


_BEFORE_NAMES = LISTENER_MARKERS | set("见里")


def _before_a_name(word: str, names: set[str]) -> bool:
    """A listener marker, 见 or 里 before a known name (向宝玉, 见凤姐, 屋里贾母; 向贾 of 向贾母道): the
    word before a listener or a subject, no name."""
    rest = word[1:]
    if common_noun(word) or word[0] not in _BEFORE_NAMES:
        return False
    return any(
        rest.startswith(n) or (len(n) > len(rest) and n.startswith(rest))
        for n in names
        if len(n) >= 2 and n != word
    )


def _proper_parts(word: str):
    """Its starts (林青 in 林青大) and the words inside it from the third character on (武松 in 看着武松)."""
    for end in range(2, len(word)):
        yield word[:end]
    for start in range(2, len(word) - 1):
        for end in range(start + 2, len(word) + 1):
            yield word[start:end]


def _known_prefix(word: str, names: set[str]) -> str | None:
    for size in (4, 3, 2):
        if word[:size] in names:
            return word[:size]
    return None

"""Who speaks in a text: character names and their aliases, found from the text itself.

Names are collected from speech tags (``林青笑道：“…”`` → 林青): the words that start a tag clause
before the first character that cannot belong to a name (a verb, an adverb, a listener marker).
Aliases come from phrases such as ``人称“断水刀”的萧断水``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# Characters that end the subject of a tag clause: verbs of speech and gesture, adverbs, listener
# markers, particles. A name never continues past one of them (a rare name that holds one is cut).
STOP = set(
    "对向问与和跟朝冲同给替把让被将道说曰叫喝骂嚷喊笑叹怒哭惊急喜冷低沉轻柔颤厉苦微暗寻想心"
    "连忙齐也又都便却只才就站转拍看望指盯瞪听见点摇抬回答应走上下起坐伸拱抱躬挥拔提放接端举按"
    "了着过的地在从已仍还正不一这那哪么呢吗吧啊呀哼嘿咳报奏传禀"
)
# Words that open a descriptor used as a speaker (那汉子, 众人, 两个公差, 店小二 …). These may contain
# characters of STOP after the first one.
DESCRIPTOR_OPENERS = ("那个", "这个", "那位", "这位", "那", "这", "众", "两个", "两名", "几个", "一个", "一名", "三个", "二人", "两人", "三人", "诸人")
PRONOUNS = ("他们", "她们", "我们", "你们", "咱们", "他", "她", "我", "你", "它", "二人", "两人", "三人")
# Words that open a clause without being its subject.
LEAD_WORDS = (
    "数内",
    "内中",
    "当时",
    "那时",
    "当日",
    "次日",
    "只听得",
    "只听",
    "忽听得",
    "忽听",
    "但听",
    "听得",
    "只见",
    "却见",
    "忽见",
    "但见",
    "这时",
    "此时",
    "当下",
    "于是",
    "随即",
    "接着",
    "然后",
    "忽然",
    "突然",
    "只是",
    "却",
    "便",
    "又",
    "也",
    "只",
    "忽",
    "但",
    "有",
)
LISTENER_MARKERS = set("对向问与和跟朝冲同给替把让着请叫唤闻")
# Words that start tag clauses often enough to look like names, but never are.
NOT_NAMES = {"起身", "出来", "原来", "后面", "前面", "外面", "里面", "口里", "心里", "便是", "正是", "如今", "回头", "说罢", "听罢", "见了", "看了", "点头", "寻思", "回来", "回话"}
_CJK = re.compile(r"[\u3400-\u9fff]")
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

    def name_at(self, text: str, pos: int = 0) -> str | None:
        """The longest known name starting at ``pos``."""
        best = None
        for size in (5, 4, 3, 2):
            word = text[pos : pos + size]
            if len(word) == size and (word in self.names or word in self.aliases):
                best = word
                break
        return best

    def canonical(self, name: str) -> str:
        return self.aliases.get(name, name)

    def to_dict(self) -> dict:
        return {"names": sorted(self.names), "aliases": dict(sorted(self.aliases.items()))}


def strip_lead(clause: str) -> str:
    clause = clause.lstrip()
    for word in LEAD_WORDS:
        if clause.startswith(word):
            return clause[len(word) :]
    return clause


def subject_candidate(clause: str) -> str | None:
    """The words that start a clause up to the first character that cannot be part of a name."""
    clause = strip_lead(clause)
    if clause[:1] in LISTENER_MARKERS:
        return None  # 与燕青道: the subject was left out, the name is the listener
    for pronoun in PRONOUNS:
        if clause.startswith(pronoun):
            return None
    limit = 4
    i = 0
    for opener in DESCRIPTOR_OPENERS:
        if clause.startswith(opener):
            i, limit = len(opener), 5
            break
    while i < len(clause) and i < limit and _CJK.match(clause[i]) and not _ends_name(clause, i):
        i += 1
    word = clause[:i]
    return word if len(word) >= 2 and word not in NOT_NAMES else None


# Within the first two characters only a speech verb ends a name: 林冲道 is 林冲, 向秀说 is 向秀.
_EARLY_STOP = set("道说曰问笑喝叫骂叹")


def _ends_name(clause: str, i: int) -> bool:
    ch = clause[i]
    return ch in (_EARLY_STOP if i < 2 else STOP)


def tag_clauses(text: str):
    """Yield the subject clause of every speech tag: the first clause of the sentence that ends in
    ``…道：“`` (林青站起身来，笑道：“ → 林青站起身来), and the clause of a tag after a quote (”林青道。)."""
    for match in re.finditer(r"([^。！？!?“”\n]{1,60}?)[：:，,]?(?=“)", text):
        clauses = re.split(r"[，,；;、]", match.group(1).strip())
        if re.search(r"(道|说|问|曰|叫|喝|嚷|喊|想)$", clauses[-1].rstrip("：:，, ")):
            yield clauses[0]
    for match in re.finditer(r"”([^。！？!?“”\n，,]{1,12}?(?:道|说|问))[。，,！!]", text):
        yield match.group(1)


def build_lexicon(text: str, *, min_count: int = 2) -> Lexicon:
    """Collect speaker names (seen at least ``min_count`` times in tags) and aliases from ``text``."""
    counts: Counter[str] = Counter()
    for clause in tag_clauses(text):
        word = subject_candidate(clause)
        if word:
            counts[word] += 1
    words = {w for w, c in counts.items() if c >= min_count} - set(DESCRIPTOR_OPENERS)
    # Drop a candidate that is a known name plus leftovers ("林青大" when "林青" is known).
    names = {w for w in words if not any(w != v and w.startswith(v) for v in words)}
    lexicon = Lexicon(names=names)
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


def _known_prefix(word: str, names: set[str]) -> str | None:
    for size in (4, 3, 2):
        if word[:size] in names:
            return word[:size]
    return None

"""The novel around an excerpt: the text before it, and whom its descriptors stand for.

An excerpt often calls a speaker by a descriptor (``那妇人``, ``那汉``, ``婆子``, ``太公``) for a
person the novel named earlier, sometimes chapters earlier. :class:`Story` reads the whole text once
and answers :meth:`Story.who`: the name a descriptor stands for at a point of the text, or None when
the text has not named that person (the descriptor is then the right voice). A descriptor stands for

- a woman (``妇人``, ``婆娘``) the text named formally (``有个使女，小名唤做潘金莲``,
  ``有个女儿婆惜``) and keeps mentioning in its narration;
- a man (``那汉``, ``那人``) the narration names right after the descriptor
  (``那人不是别人，正是……姓宋名江``) or who names himself in his own line
  (``那汉道：“小人姓刘名唐…”``), also where that name comes only after his lines, within a page
  (``那汉…道`` … ``小人姓石名勇`` → 石勇; ``那和尚…道`` … ``俺是…鲁提辖的便是`` → 鲁提辖);
- whoever was last mentioned by a name that ends the way the descriptor does: ``王婆`` for
  ``婆子``, ``潘公`` or ``金老`` for ``老儿``, ``海阇黎`` for ``和尚``, ``庄主狄太公`` for ``太公``;
- an old woman (``那婆婆``) the narration named by her son (``雷横的母亲正来送饭``).

A binding ends when the text brings in a new person of the same kind (``一个妇人``, ``一条大汉``)
without having spoken of the bound one just before, when a sentence sets the descriptor beside the
bound name as another person (``那妇人因王庆勾搭了娇秀``), or when the name has not come up for a
while.
"""

from __future__ import annotations

import bisect
import re
from typing import Protocol

from ..corpus import HEADING
from .subjects import COMPOUND_SURNAMES, PERSON_HEADS, STOP, SURNAMES, common_noun, is_surname, strip_lead

# Descriptor heads by kind of person; the longest head a descriptor ends with decides its kind.
KINDS = {
    "woman": ("妇人", "婆娘", "女子", "女人", "妇女", "淫妇", "贱人", "女孩儿"),
    "old woman": ("婆子", "老婆子", "婆婆", "虔婆", "老虔婆"),
    "old man": ("老儿", "老子", "老汉", "老头儿", "老头"),
    "monk": ("和尚", "僧人", "贼秃", "秃驴", "秃厮", "阇黎"),
    "man": ("汉子", "大汉", "长汉", "汉", "人", "个人", "后生", "壮士", "好汉", "大将", "上将"),
    "teacher": ("先生",),
    "boatman": ("梢公", "艄公"),
}  # fmt: skip
# Titles that end a name (狄太公, 宿太尉, 蔡九知府, 柴大官人): the title alone stands for the one
# last named with it.
TITLES = (
    "太公", "太尉", "知府", "太守", "侍郎", "都监", "员外", "大官人", "官人", "节级", "团练", "知寨", "丞相", "枢密",
    "先锋", "统制", "头陀", "观察", "押司", "院长", "国舅", "提辖", "教头", "都头", "知县", "长老", "真人", "郡主",
    "虞候", "参谋", "太师",
)  # fmt: skip
_KIND_OF = {head: kind for kind, heads in KINDS.items() for head in heads} | {title: "title" for title in TITLES}
_HEADS = sorted(_KIND_OF, key=len, reverse=True)
_TITLES = sorted(TITLES, key=len, reverse=True)
_HEAD_SIZES = sorted({len(h) for h in _KIND_OF}, reverse=True)
# 人 and 汉 alone are heads only after a demonstrative (那人, 这汉): 客人, 军汉 are other people.
_BARE = re.compile(r"^(?:那|这|此)?(?:个)?(?:人|汉)$")
# Many people (四个好汉, 众人, 那两个): never one named person (also read by the rule labeler).
MANY = re.compile(r"^(?:那|这|此)?(?:[两二三四五六七八九十几数百千]|众|诸)")
# The noun the narration brought a man in by (一个军人, 那报事人, 这个大汉), which a bare 那人 or 那汉
# that the novel never names stands for: one man, not a crowd, a woman or a kin word.
_NOT_ONE_MAN = set(KINDS["woman"] + KINDS["old woman"]) | {
    "众官", "百官", "群臣", "夫妻", "两口儿", "步军", "马军", "前军", "后军", "中军", "道众", "众将", "百姓", "妻子",
    "母亲", "老母", "老娘", "娘子", "夫人", "小姐", "姑娘", "少女", "村姑", "丫头", "丫嬛", "奶子", "妇女", "女孩儿",
    "干人",  # (这干人: these people)
}  # fmt: skip
_MAN_NOUNS = sorted({h for h in PERSON_HEADS if len(h) > 1 and h not in _NOT_ONE_MAN} | {"报事人", "差人"}, key=len, reverse=True)
_BROUGHT_IN = re.compile(
    "(?<![少没无是似像])(?:(?:一个|一条|一位|那)(?:[^，,。！？!?；;：:“”的]{0,8}的|长大|高大|矮|胖|瘦)?|那个|这个|这)(" + "|".join(_MAN_NOUNS) + ")"
    "|(?<![这那此没无])(?:一个|有个|有一个)(?:[^，,。！？!?；;：:“”的]{0,8}的)?人(?![家物马])"  # (一个人, 有个穿白的人: no noun)
)
_NOUN_REACH = 400
# How long (characters of text) a name stays bound without coming up again: a woman named once may
# be 那妇人 for three chapters (潘金莲).
_REACH = {"woman": 25000, "old woman": 4000, "old man": 3000, "monk": 4000, "title": 3000, "man": 3000, "teacher": 3000, "boatman": 3000}
# A new person of a kind ends the binding, unless the bound one came up just before (一个妇人出到
# 帘子下 right after the narration spoke of 潘金莲 is 潘金莲).
_SAME_PERSON = {"woman": 800}
_JUST_BEFORE = 300
# How far after a descriptor's line (characters) the name given next may still be his (a man's or a
# monk's: 那和尚 … 俺是…鲁提辖的便是; for women it was wrong more often than right).
_NAMED_AFTER = {"man": 1500, "monk": 1500, "boatman": 2500}
_ASIDE_FOR = 1500
# What happens to a binding, in the order of events at one place: a name comes up, a new person comes
# in, another man's wife comes in, a sentence tells the descriptor from the name, the story is at
# another household or county (whose 太公 or 知县 is someone else).
_NAMED, _NEW_PERSON, _ASIDE, _NOT, _MENTION, _ELSEWHERE = range(6)
# Kinds whose bare word, coming up again, keeps the binding alive (长老 all through a chapter).
_KEPT_BY_MENTION = ("title", "monk", "old man", "old woman")
_CJK = "\u3400-\u9fff"
_SURNAME = "(?:" + "|".join(COMPOUND_SURNAMES) + "|[" + "".join(sorted(SURNAMES)) + "])"

# Someone new comes in: 只见一个妇人, 当先一个好汉, 抬着的一个妇人 (not 这个妇人, 少一个娘子, 是一个好汉).
_NEW = "(?<![这那此少没无是似像])(?:一个|一条|一位|一员|有个|有一个)(?:[^，,。！？!?“”：:\n]{0,8}?的)?"
# Someone new by what he does (原是一个使枪棒卖膏药的。), which ends a man's binding.
_NEW_BY_TRADE = re.compile(f"(?<![这那此])(?:一个|一条)[{_CJK}]{{2,8}}?的(?=[，,。；;])")
_COMES_OUT = re.compile("(?:走出|转出|闪出|撞出|跳出|出来)(?:那|这)?(?:个)?(?:" + "|".join(KINDS["woman"]) + ")")
# A wife who is the subject of a clause (老婆听的声唤): another woman than the one bound, if that one
# did not come up just before.
_MOTHER = "(?:的)?(?:母亲|老母|娘)(?![子儿亲])"
_WIFE_OF = "的?(?:娘子|浑家)(?![”’])"
_WIFE = re.compile("(?<=[，,。：:；;！？\n　])(?:老婆|浑家|妻子)(?![”’])")
# A woman named formally (有个使女，小名唤做潘金莲; 因此小字唤做巧云; 叫做玉兰) or by her role (有个女儿婆惜,
# 娘子贾氏, 郡主琼英); servants named by their role are left out: the mistress of the house is the 妇人
# of their scenes.
_GIVEN = re.compile(f"(?:小名|小字|乳名)(?:唤做|叫做)?([{_CJK}]{{2,3}})(?=[^{_CJK}]|$)")
_CALLED = re.compile(f"(?:名唤(?!做)|唤做|叫做|名叫)([{_CJK}]{{2,3}})(?=[^{_CJK}]|$)")
_WOMAN_WORDS = re.compile("女儿|女子|使女|女使|妇人|娘子|养娘|行首|角妓|浑家|妻")
_ROLE = re.compile("(?<!男)(?:女儿|娘子|浑家|夫人|郡主|公主|女将|行首)")
# Naming in narration: 那人不是别人，正是……姓宋名江 / 岸上提锄头的那汉，便是阮小二.
_IS = re.compile(r"(?:不是别人|非是别人)?[，,]?(?:正是|便是|却是|乃是|原来是|原来正是)")
_SURNAME_GIVEN = re.compile(f"姓(?![甚什何谁])([{_CJK}]{{1,2}})[，,]?(?:双|单)?(?:名|讳)(?:一个|个)?([{_CJK}](?:(?![的字是也便])[{_CJK}])?)")
_AFTER_DESCRIPTOR = re.compile(
    f"(那|这|此|一个|一员|一位|一条)(?:个)?[{_CJK}]{{0,4}}?(" + "|".join(_HEADS) + ")[^。！？!?\n“”：:]{0,60}"
)
# The narrator asks and answers (说话的，那人是谁？便是吴学究所荐的…节级戴院长戴宗): the name ending the answer.
_WHO_WAS = re.compile(
    f"(?:那|这)(?:个)?[{_CJK}]{{0,4}}?(" + "|".join(_HEADS) + ")(?:是谁|却是谁|是甚人|是甚么人|是何人)[？?]"
    "(?:便是|正是|却是|乃是|原来是|原来便是)([^。！？!?\n“”]{1,40})"
)
_WOMAN_DESCRIPTOR = re.compile("(?:那|这|此)(?:个)?(?:" + "|".join(KINDS["woman"]) + ")")
# A speaker naming himself: 小人姓刘名唐 / 小可便是赤发鬼刘唐 / 小将呼延灼的便是.
_I = "(?:小人|小可|小将|小生|小道|小僧|贫道|洒家|俺|我|某|在下|老汉|奴家|吾|咱|臣)"
_SELF = re.compile(f"^(?:[^。！？!?“”]{{0,10}}[：:，,])?{_I}(?:乃|便|正|就|自|本)?(?:是|复?姓)")
_SELF_NAME = re.compile(f"^(?:[^。！？!?“”]{{0,10}}[：:，,])?{_I}([{_CJK}]{{2,4}}?)(?:的便是|便是|是也)")
_OPENS_WITH_I = re.compile(f"^{_I}")
_I_ANYWHERE = re.compile(_I)
# … or right after the word for himself, as the whole clause (在下钱百通，做些小买卖).
_SELF_APPOSED = re.compile(f"^{_I}([{_CJK}]{{2,4}})(?=[，,。！？!?；;]|$)")
# A speaker's name anywhere in his line, said as his name (小人自己的贱名叫做李鬼).
_MY_NAME = re.compile(f"{_I}(?:自己)?的?(?:贱名|贱姓名|小名|名字|姓名)(?:叫做|唤做|叫|是)([{_CJK}]{{2,4}})")
# … or as what people call him (山东、河北都叫我做没面目焦挺), or at the end of a long 便是 (小弟便是…蒙恩救了性命的
# 赤发鬼刘唐便是).
_CALLED_ME = re.compile(f"(?:叫|唤|呼|称)(?:小弟|{_I})(?:做|作)([{_CJK}]{{2,8}}?)(?=[^{_CJK}]|的便是|便是|是也|$)")
_I_AM = re.compile(f"(?:小弟|{_I})(?:便是|正是|就是)([^。！？!?“”，,；;]{{2,30}}?)(?:的便是|便是|是也)")
# Words before 姓…名… that make it someone else's name (小人的主人姓…, 小人有个哥哥姓…).
_OTHER_PERSON = re.compile("的|他|其|父|母|兄|弟|哥|姐|妹|妻|主|有个|有一个|认得|是")
# … in an earlier clause, only these do, and 的 right after 小人 (小人的主人，姓…); 小人是…林冲的徒弟，姓曹名正
# is his own name.
_OTHER_BEFORE = re.compile("有个|有一个|认得|他|其")
# Someone called by name in the line spoken to them (范全连忙向那女子道：“三娘拜揖。” → 那女子 is 三娘).
_SPOKEN_TO = re.compile(f"(?:向|对|问|与)((?:那|这)(?:个)?[{_CJK}]{{0,3}}?(?:" + "|".join(_HEADS) + "))(?:[说问]?道|[说叫]|答道)$")
_CALLING = re.compile("[，,！!。]|拜揖|万福|请|休|且")
# How people are called by kin or standing rather than by name (大嫂, 哥哥, 娘子, 叔叔, 小子).
_ADDRESS = re.compile("[嫂哥弟叔伯娘姐妹爷公婆兄父母子]$")
# Two guards sent with a prisoner, and their names if the text gives them right after.
_SENT = re.compile("差(?:两个|二)(?:防送)?公人")
_PAIR_NAMED = re.compile(f"[^。“”]{{0,6}}?(?:[。，,]两个人)?(?:无非是|免不得是|乃是|却是|是|叫做|叫|唤做)([{_CJK}]{{2}})、([{_CJK}]{{2}})")
_HERE = re.compile(f"^([{_CJK}]{{2,10}}?)(?:在此|在这里|来也)")
_TAGGED_QUOTE = re.compile("([^。！？!?“”\n]{1,40}?)[：:，,]?“([^”\n]{0,80})")
# A post before a title, as the subject of a speech tag (住持真人向前禀道, 监宫真人道).
_POSTED = re.compile(f"(?![那这此一两二三四五六七八九十几数众诸])([{_CJK}]{{2}})(" + "|".join(_TITLES) + ")(?![{_CJK}]{0,1}[、和])")
_DOING = set("吃喝讨要取买卖拿送请寻问叫")
_GOING = set("到去来往投入进出回奔")  # (径到知县衙内诉告: where one goes, no post before the title)
# A new household (奔到一个大庄院): its master is another 太公 or 员外 than the one of the last.
_NEW_HOUSE = re.compile("(?:一个|一所|一座|一处)大?(?:庄院|庄子|村坊|庄上)")
_MASTERS = ("太公", "员外")
# Counties (郓城县): two characters the text puts before 县 three times or more, not a verb or a
# number (来到县, 十五县). A county's magistrate is the one named as 知县 there, however long the
# story leaves him (时文彬, named at 郓城 in chapter 13, is its 知县 in chapter 22).
_COUNTY = re.compile(f"([{_CJK}]{{2}})县")
_NOT_IN_COUNTY = set("到去来投各近属本州府十五")
_SEAT_REACH = 4000  # how far back the last county named says where the story is
_TITLED = re.compile(f"(?<!、){_SURNAME}(?:[一二三四五六七八九十大小老](?<![、][{_CJK}][二两三]))?(?:" + "|".join(_TITLES) + ")")


class Names(Protocol):
    names: set[str]

    def name_at(self, text: str, pos: int = 0) -> str | None: ...

    def names_in(self, text: str): ...


def head_of(descriptor: str) -> str | None:
    """The head noun a descriptor ends with (``那挑酒的汉子`` → 汉子, ``太公`` → 太公), or None."""
    head = next((descriptor[-n:] for n in _HEAD_SIZES if descriptor[-n:] in _KIND_OF), None)
    return None if head in ("人", "汉") and not _BARE.match(descriptor) else head


def is_descriptor(word: str, names: Names | None = None) -> bool:
    """A descriptor (那妇人, 婆子, 太公), not a name that ends like one (林冲娘子, 刘太公, 真长老)."""
    head = head_of(word)
    if head is None:
        return False
    if names is not None and any(word[i:] in names.names for i in range(1, len(word) - len(head))):
        return False  # 智真长老: the list knows 真长老, a name
    return not (len(word) > len(head) and (is_surname(word) or (names is not None and word in names.names)))


def self_named(content: str, names: Names) -> str | None:
    """The name a line gives its speaker (``小人姓刘名唐，…`` → 刘唐, ``小可便是赤发鬼刘唐`` → 刘唐,
    ``俺是杀人的太岁鲁智深、武松的便是`` → 鲁智深、武松, ``唐斌在此`` → 唐斌), or None. The name must
    end the phrase: ``小人是王都尉亲随`` names the speaker's master, not the speaker. A second sentence
    that speaks of himself again after a first that did (``小人是王头领手下耳目。小人姓朱名贵``), or after a
    first about nobody (``这位小兄弟请了。在下钱百通，…``), may give it."""
    first, second = (re.split(r"[。！？!?]", content, maxsplit=2) + ["", ""])[:2]
    name = _named_in(first, names)
    if name is None and _OPENS_WITH_I.match(second) and (_OPENS_WITH_I.match(first) or _about_nobody(first, names)):
        name = _named_in(second, names)
    return name


def _about_nobody(sentence: str, names: Names) -> bool:
    """No name, no surname first and no word for the speaker himself (这位小兄弟请了, 既是如此，相烦二位)."""
    return not (any(names.names_in(sentence)) or is_surname(sentence) or _I_ANYWHERE.search(sentence))


def _named_in(first: str, names: Names) -> str | None:
    """The name one sentence of a line gives its speaker (see :func:`self_named`)."""
    here = _HERE.match(first)
    if here and not is_descriptor(here.group(1), names):
        name = next((m for m in names.names_in(here.group(1)) if m.end() == len(here.group(1))), None)
        if name and is_surname(name.group()):
            return name.group()  # 唐斌在此, 好汉没遮拦穆弘在此
    opening = _OPENS_WITH_I.match(first)
    given = opening and _SURNAME_GIVEN.search(first, opening.end())
    if given:
        # 姓…名… opening a clause of its own is his name unless an earlier clause brings in someone
        # else (小人是…林冲的徒弟，姓曹名正; not 小人有个哥哥，姓…, 小人的主人，姓…); in one clause, any
        # word of another does.
        clause = max(first.rfind(ch, opening.end(), given.start()) for ch in "，,；;") + 1
        alone = clause > opening.end() and clause == given.start()
        other = (_OTHER_BEFORE if alone else _OTHER_PERSON).search(first, opening.end(), given.start())
        other = other or first[opening.end() : opening.end() + 1] == "的"
        if not other:
            return given.group(1) + given.group(2)  # 小人祖贯河南洛阳人氏，姓薛名永
    for clause_start in [0] + [m.end() for m in re.finditer(r"[，,：:]", first)][:2]:
        clause = first[clause_start:]
        match = _SELF_NAME.match(clause) or _SELF_APPOSED.match(clause)
        if match and names.name_at(match.group(1), 0) == match.group(1) and is_surname(match.group(1)):
            return match.group(1)  # 小将呼延灼的便是, 在下钱百通，
        match = _SELF.match(clause)
        if not match:
            continue
        rest = clause[match.end() - 1 :]
        tail = re.split(r"[，,；;]", rest[1:], maxsplit=1)[0]
        given = _SURNAME_GIVEN.search(rest)
        if given and given.start() <= len(tail):
            return given.group(1) + given.group(2)  # 小人姓刘名唐 / 小人是…教头姓林名冲
        tail = re.sub(r"(?:的便是|便是|是也|也)$", "", tail)
        found = [m for m in names.names_in(tail) if is_surname(m.group()) and not is_descriptor(m.group())]
        if found and found[-1].end() == len(tail):
            group = [found[-1]]
            for m in reversed(found[:-1]):
                if m.end() + 1 == group[0].start() and tail[m.end()] == "、":
                    group.insert(0, m)
            return "、".join(m.group() for m in group)
    return None


class Story:
    """A novel read once: :meth:`before` (the text before an excerpt), :meth:`who` (whom a descriptor
    stands for) and :meth:`full_name` (a name cut short: 四郎 for 赵四郎)."""

    def __init__(self, text: str, names: Names):
        self.text = text
        self.names = names
        self.chapters = [m.start() for m in re.finditer("(?m)" + HEADING.pattern, text)]
        self._timelines: dict[str, list[tuple[int, str | None]]] = {}
        self._scan()

    def before(self, start: int, limit: int = 300) -> str:
        """The text before ``start``: about ``limit`` characters back, but not past the chapter's
        heading, beginning at the start of a paragraph (the whole paragraph that ``limit`` falls in,
        if it is not much longer)."""
        k = bisect.bisect_right(self.chapters, start) - 1
        floor = self.chapters[k] if k >= 0 else 0
        begin = max(floor, start - limit, 0)
        if begin > floor and self.text[begin - 1] != "\n":
            paragraph = self.text.rfind("\n", floor, begin) + 1
            if start - paragraph <= 3 * limit:
                begin = max(paragraph, floor)
            else:
                newline = self.text.find("\n", begin, start)
                begin = newline + 1 if newline != -1 else start
        return self.text[begin:start]

    def who(self, descriptor: str, pos: int) -> str | None:
        """The name ``descriptor`` stands for at ``pos``, if the text named that person."""
        head = head_of(descriptor)
        if head is None or MANY.match(descriptor):
            return None  # (四个好汉, 众军汉: many people, not the one named)
        kind = _KIND_OF[head]
        timeline = self._timelines.get(head if kind == "title" else kind, [])
        k = bisect.bisect_left(timeline, (pos,)) - 1
        at, name = timeline[k] if k >= 0 else (-(10**9), None)
        name = name if pos - at <= _REACH[kind] else None
        if kind in _NAMED_AFTER and k + 1 < len(timeline):
            # Someone the text names only after his lines (那汉…道 … 小人姓石名勇): the next name
            # given, when it comes before any new person and nearer than the last one given.
            then, named = timeline[k + 1]
            if named and then - pos <= _NAMED_AFTER[kind] and (name is None or then - pos < pos - at):
                return named
        return name

    def noun_for(self, descriptor: str, pos: int) -> str | None:
        """The noun a bare 那人 or 那汉 at ``pos`` stands for when the novel never names him: the one
        the narration last brought a man in by (只见一个军人，托着一个盒子入来…那人答道 → 军人;
        请那报事人到堂上问时，那人说道 → 报事人), unless the quote before was his (一个大汉应道：“…”那人道)."""
        nouns = self._brought_in(descriptor, pos)
        if not nouns or not nouns[-1]:
            return None  # (又有一个人走将入来: someone brought in by no noun)
        noun = nouns[-1]
        if "汉" in descriptor:
            # 那汉 is a 汉子 or a 大汉, not the 庄客 spoken of since, nor one of two 汉; the same man goes on
            # after his own line (一个汉子…叫道：“快将些酒肉来！”过卖旋了一角酒。那汉道).
            return noun if "汉" in noun and len({n for n in nouns if n and "汉" in n}) == 1 else None
        answered = self._answered(pos)
        said_by = answered[max(answered.rfind(ch) for ch in "。！？\n") + 1 :]  # (the sentence that tags it)
        answers_him = "汉" in noun and "汉" in answered  # (what answers_a_man asks, from what is read here)
        return None if noun in said_by or answers_him else noun

    def answers_a_man(self, descriptor: str, pos: int) -> bool:
        """Whether a bare 那人 at ``pos`` answers the man the narration last brought in as a 汉 and who
        spoke the quote before (一个大汉应道：“…”那人道; 那大汉慌忙问道：“…”那人道): then he is the other
        one of the two. (庄里走出一个人来…这个吃打伤的大汉道：“…”只见出来的那人说道: the 一个人.)"""
        if "汉" in descriptor:
            return False
        nouns = self._brought_in(descriptor, pos)
        return bool(nouns) and "汉" in (nouns[-1] or "") and "汉" in self._answered(pos)

    def _brought_in(self, descriptor: str, pos: int) -> list[str | None]:
        """The nouns the narration brought men in by before ``pos``, in order, outside quotes, in the
        same chapter and a little before; None for one who came with no noun (走出一个人来)."""
        if not _BARE.match(descriptor) or not descriptor.startswith(("那", "这")):
            return []  # (人说道: anyone, not one brought in)
        k = bisect.bisect_right(self.chapters, pos) - 1
        begin = max(self.chapters[k] if k >= 0 else 0, pos - _NOUN_REACH)
        window = raw = self.text[begin:pos]
        opened, closed = window.find("“"), window.find("”")
        if closed != -1 and (opened == -1 or closed < opened):
            window = "　" * (closed + 1) + window[closed + 1 :]  # (it begins inside a quote)
        window = re.sub("“[^“”]*(?:”|$)", lambda m: "　" * len(m.group()), window)
        here = raw.rfind(descriptor)  # (那个人又和一个汉子两个来: 那个人 is not the one brought in after)
        return [m.group(1) for m in _BROUGHT_IN.finditer(window, 0, here if here != -1 else len(window))]

    def _answered(self, pos: int) -> str:
        """The narration before the quote before the one at ``pos``: where its speaker is named."""
        said = self.text.rfind("“", max(0, pos - _NOUN_REACH), pos - 1 if self.text[pos - 1 : pos] == "“" else pos)
        return self.text[self.text.rfind("”", max(0, pos - _NOUN_REACH), said) + 1 : said] if said != -1 else ""

    def escorts(self, pos: int, reach: int = 15000) -> str | None:
        """The two guards sent with a prisoner, as the text named them when they were sent
        (差两个防送公人，无非是张千、李万 → 张千、李万), if the last two sent before ``pos`` were named and
        sent within ``reach`` characters."""
        k = bisect.bisect_left(self._escorts, (pos,)) - 1
        return self._escorts[k][1] if k >= 0 and pos - self._escorts[k][0] <= reach else None

    def full_name(self, word: str, pos: int, reach: int = 3000) -> str | None:
        """The name ``word`` cuts short at ``pos`` (四郎 → 赵四郎, 邦喜 → 牛邦喜): the last one the text
        spelled out before, a surname and the word."""
        known = [n for n in self.names.names if n.endswith(word) and len(n) > len(word) and is_surname(n)]
        if len(known) == 1:
            return known[0]  # 道清 → 乔道清
        if not _is_name(word, self.names):
            return None  # 起身道: a verb, not a name
        at = self.text.rfind(word, max(0, pos - reach), pos)
        while at > 0:
            if self.text[at - 1] in SURNAMES and not is_surname(word):
                return self.text[at - 1 : at + len(word)]
            at = self.text.rfind(word, max(0, pos - reach), at)
        return None

    def _scan(self) -> None:
        text, names = self.text, self.names
        quoted = [(m.start(), m.end()) for m in re.finditer("“[^“”]*”", text)]
        events: dict[str, list[tuple[int, int, str | None]]] = {}  # key -> (pos, what happens, name)
        add = lambda key, pos, op, name=None: events.setdefault(key, []).append((pos, op, name))  # noqa: E731

        # Women: named formally or by their role, then mentioned by name in the narration.
        women: dict[str, int] = {}
        for match in _GIVEN.finditer(text):
            women.setdefault(match.group(1), match.start())
        for match in _CALLED.finditer(text):
            sentence = max(text.rfind(ch, 0, match.start()) for ch in "。！？\n")
            if _WOMAN_WORDS.search(text, sentence + 1, match.start()):
                women.setdefault(match.group(1), match.start())
        for match in _ROLE.finditer(text):
            name = names.name_at(text, match.end())
            if name:
                women.setdefault(name, match.start())
        women = {w: at for w, at in women.items() if _is_name(w, names)}
        by_key: dict[str, list[str]] = {w: ["woman"] for w in women}
        # Kinds known by how a name ends: 王婆 and 李妈妈 (婆子), 潘公 / 金老 (老儿), 海阇黎 (和尚), 狄太公 (太公,
        # and an old man: 那老儿).
        for name in names.names:
            if is_surname(name) and (len(name) <= 3 and name.endswith("婆") or name[1:] == "妈妈"):
                by_key[name] = ["old woman"]
            elif name.endswith("阇黎") and len(name) > 2:
                by_key[name] = ["monk"]
            else:
                if is_surname(name) and len(name) <= 3 and name.endswith(("公", "老")):
                    by_key.setdefault(name, []).append("old man")
                if any(name.endswith(t) and len(name) > len(t) for t in TITLES) and not is_descriptor(name, names):
                    by_key.setdefault(name, []).append("title")
        for match in _TITLED.finditer(text):
            keys = by_key.setdefault(match.group(), [])
            if "title" not in keys:
                keys.append("title")
            if match.group().endswith("太公") and "old man" not in keys:
                keys.append("old man")
        apart: set[int] = set()  # where a woman's name stands beside 那妇人 as another person
        if women:
            woman_name = re.compile("|".join(map(re.escape, sorted(women, key=len, reverse=True))))
            for match in _WOMAN_DESCRIPTOR.finditer(text):
                if _inside(quoted, match.start()):
                    continue
                start = max(text.rfind(ch, 0, match.start()) for ch in "。！？\n“”") + 1
                end = min((i for i in (text.find(ch, match.end()) for ch in "。！？\n“”") if i != -1), default=len(text))
                sentence = text[start:end]
                if not (_GIVEN.search(sentence) or _CALLED.search(sentence) or _IS.search(sentence)):
                    for other in woman_name.finditer(sentence):
                        add("woman", match.start(), _NOT, other.group())  # 那妇人因王庆勾搭了娇秀: not 娇秀
                        apart.add(start + other.start())
        found = list(re.finditer("|".join(map(re.escape, sorted(by_key, key=len, reverse=True))) or "(?!)", text))
        covered = [match.span() for match in found]
        before: dict[str, list[str]] = {}  # the character before each occurrence of a name
        for match in found:
            if match.start():
                before.setdefault(match.group(), []).append(text[match.start() - 1])
        whole = {name: _whole_name(name, chars) for name, chars in before.items()}  # 真长老 is 智真长老
        for match in found:
            name = match.group()
            for key in by_key[name]:
                if key == "woman" and (_inside(quoted, match.start()) or match.start() in apart):
                    continue  # a woman the people talk about, or one set apart, is not the one in the scene
                if key == "title":
                    title_name = whole.get(name, name)
                    add(next(t for t in _TITLES if title_name.endswith(t)), match.start(), _NAMED, title_name)
                else:
                    add(key, match.start(), _NAMED, name)

        # A title right before a name (正直知县时文彬在厅上): the title alone stands for him next.
        # The name may be one no tag holds: three characters the text repeats as one word (时 is no
        # surname of the list), ending where a verb or a stop begins (知县时文彬在厅上).
        counts: dict[str, int] = {}
        for match in re.finditer("|".join(_TITLES), text):
            if _inside(quoted, match.start()):
                continue
            name = names.name_at(text, match.end())
            if not name:
                w, after = text[match.end() : match.end() + 3], text[match.end() + 3 : match.end() + 4]
                shaped = re.fullmatch(f"[{_CJK}]{{3}}", w) and _is_name(w, names) and (after in STOP or not re.match(f"[{_CJK}]", after))
                shaped = shaped and not any(ch in _DOING for ch in w)  # (太公讨茶吃: what he does, not his name)
                count = lambda word: counts.setdefault(word, text.count(word))  # noqa: E731
                bound = shaped and count(w) >= 3 and max(count(w[:2]), count(w[1:])) <= 2 * count(w)
                name = w if bound else None  # (its parts seldom stand without it: not 出来迎, 随即取)
            elif not is_surname(name):
                name = None
            if name and not is_descriptor(name, names):
                add(match.group(), match.start(), _NAMED, name)

        # A mother named by her son (雷横的母亲正来送饭 … 那婆婆道): the old woman of the scene.
        # A wife named by her husband (只见林冲的娘子号天哭地叫将来 … 那妇人…说道): the woman of the scene.
        sons = sorted((n for n in names.names if is_surname(n) and not is_descriptor(n, names)), key=len, reverse=True)
        kin = f"(?:{'|'.join(map(re.escape, sons))})(?:(?P<mother>{_MOTHER})|{_WIFE_OF})" if sons else "(?!)"
        for match in re.finditer(kin, text):
            if _inside(quoted, match.start()):
                continue
            if match.group("mother"):
                add("old woman", match.start(), _NAMED, match.group())
            else:
                add("woman", match.start(), _NAMED, match.group().replace("的", ""))

        # The bare word again, outside quotes (长老道, 那和尚): the one bound goes on being meant.
        kept = [h for h, kind in _KIND_OF.items() if kind in _KEPT_BY_MENTION]
        for match in re.finditer("|".join(sorted(kept, key=len, reverse=True)), text):
            if not _inside(covered, match.start()) and not _inside(quoted, match.start()):
                add(_key(match.group()), match.start(), _MENTION)

        # Anyone named in narration right after a descriptor, or naming himself in his own line.
        for match in _AFTER_DESCRIPTOR.finditer(text):
            if _inside(quoted, match.start()):
                continue  # (那人，便是小管营: someone the speaker points out, not the one the narration calls 那人)
            head = match.group(2)
            if head_of(text[match.start() : match.end(2)]) is None:
                continue  # 此间人, 军汉: not the one person a bare 那人 or 那汉 stands for
            far = 60 if match.group(1).startswith("一") else 6  # 当先一个好汉，戴熟铜盔，…，乃是…曾魁
            name = _named(text[match.end(2) : match.end()], names, _KIND_OF[head] == "woman", far)
            if name:
                add(_key(head), match.start(), _NAMED, name)
        for match in _WHO_WAS.finditer(text):
            answer = match.group(2)
            name = next((m.group() for m in names.names_in(answer) if m.end() == len(answer)), None)
            if name and is_surname(name) and not _inside(quoted, match.start()):
                add(_key(match.group(1)), match.start(), _NAMED, name)
        spoke: tuple[str | None, int, int] = (None, -1, -1)  # the last tagged quote: its descriptor, tag end, quote
        for match in _TAGGED_QUOTE.finditer(text):
            clause = re.split(r"[，,]", match.group(1))[-1]
            post = _POSTED.match(strip_lead(clause))
            if post and not any(ch in STOP or ch in _GOING for ch in post.group(1)) and not is_surname(post.group()) and not names.name_at(post.group(1), 0):
                add(post.group(2), match.end(1), _NAMED, post.group())  # 住持真人向前禀道: 真人 is he from then on
            head = next((h for h in _HEADS if re.search(f"(?:那|这)[{_CJK}]{{0,4}}?{h}", clause)), None)
            name = head and self_named(match.group(2), names)
            if head and not name:
                close = text.find("”", match.end(1))
                mine = _MY_NAME.search(text, match.end(1), close if close != -1 else match.end())
                name = mine and names.name_at(mine.group(1), 0)  # …小人自己的贱名叫做李鬼，只在这前村住。
                name = name if name and is_surname(name) and not is_descriptor(name, names) else None
                name = name or _called_me(text[match.end(1) : close if close != -1 else match.end()], names)
            if name:
                add(_key(head), match.end(1), _NAMED, name)
            spoken_to = _SPOKEN_TO.search(clause)
            called = spoken_to and _called_by(match.group(2), names)
            if called and head_of(spoken_to.group(1)) and not MANY.match(spoken_to.group(1)):
                add(_key(head_of(spoken_to.group(1))), match.end(1), _NAMED, called)  # 范全向那女子道：“三娘拜揖。”
            # The answer to a descriptor's line that opens by calling a name names him (那大汉…道：“东家，
            # 天不早了。”⏎钱百通摆摆手，道：“大牛，急什么？” → 大牛), when nothing was said between.
            last_head, last_at, last_quote = spoke
            if last_head and not head and not spoken_to and text.find("“", last_quote + 1, match.start(2) - 1) == -1:
                answered = _called_by(match.group(2), names)
                word = _calling_word(match.group(2), answered)
                if answered and not _ADDRESS.search(word) and not common_noun(word):  # (大嫂, 酒保: how anyone is called)
                    add(_key(last_head), last_at, _NAMED, answered)
            said_by = head and re.search(f"(?:那|这)[{_CJK}]{{0,4}}?{head}", clause)
            spoke = (head if said_by and not MANY.match(said_by.group()) else None, match.end(1), match.start(2) - 1)

        # New people of a kind.
        for kind, heads in KINDS.items():
            for match in re.finditer(_NEW + "(?:" + "|".join(heads) + ")", text):
                add(kind, match.start(), _NEW_PERSON)
        for match in _NEW_BY_TRADE.finditer(text):
            add("man", match.start(), _NEW_PERSON)  # 原是一个使枪棒卖膏药的: someone new, by what he does
        for match in _COMES_OUT.finditer(text):
            add("woman", match.start(), _NEW_PERSON)  # 只见庵里走出那妇人来: whoever the text spoke of before
        for match in _WIFE.finditer(text):
            add("woman", match.start(), _ASIDE)
        for match in _NEW_HOUSE.finditer(text):
            for title in _MASTERS:
                add(title, match.start(), _ELSEWHERE)

        # The magistrate of the county the story is in, named there before (时文彬 of 郓城), or someone
        # else where the story is in another county (阳谷县知县).
        counties = _counties(text)
        magistrates: dict[str, list[tuple[int, str]]] = {}
        for pos, op, name in events.get("知县", []):
            county = _county_at(counties, pos)
            if op == _NAMED and county:
                magistrates.setdefault(county, []).append((pos, name))
        for match in re.finditer("知县", text):
            county = _county_at(counties, match.start())
            if not county or _inside(quoted, match.start()) or _inside(covered, match.start()):
                continue
            named = [name for pos, name in magistrates.get(county, []) if pos < match.start()]
            add("知县", match.start(), *((_NAMED, named[-1]) if named else (_ELSEWHERE,)))

        # Guards sent with a prisoner: named (两个人是董超、薛霸) or not (a later pair unnamed).
        self._escorts = []
        for match in _SENT.finditer(text):
            pair = _PAIR_NAMED.match(text, match.end())
            named = pair and all(is_surname(w) and _is_name(w, names) for w in pair.groups())
            self._escorts.append((match.start(), "、".join(pair.groups()) if named else None))

        for key, found in events.items():
            self._timelines[key] = _timeline(sorted(found, key=lambda e: (e[0], e[1])), _KIND_OF.get(key, key))


def _timeline(events: list[tuple[int, int, str | None]], kind: str) -> list[tuple[int, str | None]]:
    """Where each binding starts, goes on and ends: (pos, name) when the name comes up, (pos, None)
    when a new person or a sentence setting the descriptor beside the name ends it. Another man's
    wife in a scene (老婆哭道) only puts the binding aside for a while."""
    timeline: list[tuple[int, str | None]] = []
    bound, last = None, -(10**9)
    resume: tuple[int, str] | None = None
    for pos, op, name in events:
        if resume and pos >= resume[0]:
            bound, last = resume[1], resume[0]
            timeline.append(resume)
            resume = None
        if op == _NAMED:
            bound, last, resume = name, pos, None
            timeline.append((pos, name))
        elif op in (_NEW_PERSON, _ASIDE) and kind != "title":
            if bound is not None and pos - last <= (_SAME_PERSON.get(kind, _JUST_BEFORE) if op == _NEW_PERSON else _JUST_BEFORE):
                continue
            aside = bound if bound is not None else resume and resume[1]
            resume = (pos + _ASIDE_FOR, aside) if op == _ASIDE and aside else None
            bound = None
            timeline.append((pos, None))
        elif op == _MENTION:
            if bound is not None and pos - last <= _REACH.get(kind, _REACH["title"]):
                last = pos
                timeline.append((pos, bound))
        elif op == _ELSEWHERE and bound is not None:
            bound, resume = None, None
            timeline.append((pos, None))
        elif op == _NOT and bound == name:
            bound, resume = None, None
            timeline.append((pos, None))
    if resume:
        timeline.append(resume)
    return timeline


def _counties(text: str) -> list[tuple[int, str]]:
    """Where each county is named, in order: (position, name)."""
    named = [(m.start(), m.group(1)) for m in _COUNTY.finditer(text)]
    counts: dict[str, int] = {}
    for _, word in named:
        counts[word] = counts.get(word, 0) + 1
    known = {w for w, n in counts.items() if n >= 3 and not any(ch in STOP or ch in _NOT_IN_COUNTY for ch in w)}
    return [(pos, word) for pos, word in named if word in known]


def _county_at(counties: list[tuple[int, str]], pos: int) -> str | None:
    """The county the story is in at ``pos``: the last one named, if within ``_SEAT_REACH`` before it."""
    k = bisect.bisect_left(counties, (pos,)) - 1
    return counties[k][1] if k >= 0 and pos - counties[k][0] <= _SEAT_REACH else None


def _key(head: str) -> str:
    return head if _KIND_OF[head] == "title" else _KIND_OF[head]


def _named(rest: str, names: Names, woman: bool, far: int = 6) -> str | None:
    """A name the words after a descriptor give it: 不是别人，正是…姓宋名江 / ，便是阮小二 /
    (a woman) …小字唤做巧云. A man 唤做 something gets a nickname, not his name."""
    given = (_GIVEN.search(rest) or _CALLED.search(rest)) if woman else None
    if given and _is_name(given.group(1), names):
        return given.group(1)
    full = _SURNAME_GIVEN.match(rest, next((i for i in range(4) if rest[i : i + 1] in ("姓", "")), 0))
    if full and full.start() <= 3:
        return full.group(1) + full.group(2)  # 那知府复姓慕容，双名彦达 / 这个是北京上将，姓索名超
    match = _IS.search(rest[: 30 if far <= 6 else len(rest)])
    if not match and not woman:
        return _apposed(rest, names)  # 那梢公船火儿张横拜罢
    if not match or match.start() > far:
        return None
    after = rest[match.end() :]
    full = _SURNAME_GIVEN.search(after)
    if full:
        return full.group(1) + full.group(2)
    name = next(iter(names.names_in(after[:12])), None)
    if name and re.match(f"[{_CJK}]{{3}}", after[name.end() :]):
        return None  # 正是蒋门神初来孟州新娶的妾: his concubine, not 蒋门神
    return name.group() if name and is_surname(name.group()) and not is_descriptor(name.group()) else None


def _called_me(line: str, names: Names) -> str | None:
    """The name a line says people call its speaker by, or that ends a long 便是 (see _CALLED_ME)."""
    for match in (*_CALLED_ME.finditer(line), *_I_AM.finditer(line)):
        phrase = match.group(1)
        found = [m for m in names.names_in(phrase) if is_surname(m.group()) and not is_descriptor(m.group(), names)]
        if found and found[-1].end() == len(phrase):
            return found[-1].group()
    return None


def _called_by(content: str, names: Names) -> str | None:
    """The name a line opens by calling, then a pause or a greeting (“三娘拜揖。” → 三娘): a name the
    lexicon knows, or the end of one it knows with a surname (三娘 of 段三娘 and of 扈三娘), the whole
    name where only one ends so."""
    name = names.name_at(content, 0)
    if name is None:
        word = next((content[:k] for k in (3, 2) if _CALLING.match(content, k)), "")
        whole = [n for n in names.names if len(n) > len(word) and n.endswith(word) and is_surname(n)] if _is_name(word, names) else []
        name = (whole[0] if len(whole) == 1 else word) if whole else None
        return name if name and not is_descriptor(name, names) else None
    if "、" in name or is_descriptor(name, names):
        return None
    return name if _CALLING.match(content, len(name)) else None


def _calling_word(content: str, name: str | None) -> str:
    """The word ``content`` opens with to call ``name`` (大牛 for 卢大牛); "" for none."""
    if not name:
        return ""
    return name if content.startswith(name) else next((content[:k] for k in (3, 2) if name.endswith(content[:k])), "")


def _apposed(rest: str, names: Names) -> str | None:
    """A name set right after a descriptor, a nickname allowed before it (那梢公船火儿张横拜罢 → 张横;
    not 那汉见王婆, where a verb comes first)."""
    found = list(names.names_in(rest[:12]))
    count = getattr(names, "count", None)
    gap = rest[: found[0].start()] if found else ""
    nickname = 2 <= len(gap) <= 4 and count and count(gap + found[0].group()) >= 3 and count(gap) <= 2 * count(gap + found[0].group())
    if not found or gap and not nickname:
        return None  # (a nickname no list holds is one the novel writes mostly before that name, 3 times or more)
    last = found[0]
    for match in found[1:]:
        if match.start() != last.end():
            break
        last = match  # (船火儿 is a nickname of the list, 张横 the name after it)
    return last.group() if is_surname(last.group()) and not is_descriptor(last.group()) else None


def _whole_name(name: str, before: list[str]) -> str:
    """``name`` with the character the text nearly always writes before it (``before``: the one
    before each occurrence; 真长老 → 智真长老)."""
    top = max(set(before), key=before.count, default="")
    if top and re.match(f"[{_CJK}]", top) and top not in STOP and not is_surname(name) and before.count(top) * 4 >= len(before) * 3:
        return top + name
    return name


def _is_name(word: str, names: Names) -> bool:
    return len(word) >= 2 and not any(ch in STOP for ch in word) and not is_descriptor(word, names)


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    k = bisect.bisect_right(spans, (pos, float("inf"))) - 1
    return k >= 0 and spans[k][0] <= pos < spans[k][1]

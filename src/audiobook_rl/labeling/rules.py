"""The rule-based labeler: the embedded backend of ``label_slices``.

It reads an excerpt paragraph by paragraph, splits quotes from narration, and decides:

- **speaker** of a quote: the subject of its tag clause (``林青笑道：``; how a subject is read is
  :mod:`.subjects`), skipping listeners (``那汉子对林青道`` → 汉子, ``分付戴宗道``) and, when the
  verb's clause has none, the subject of the nearest clause before it in the sentence
  (``林青站起身来，笑道：`` → 林青); a tag after the quote (``“…”林青道。``); for an untagged
  quote, the subject of the narration just before it, or else turn-taking between the last two
  speakers; pronouns resolve to the last subject, group words (``二人``) to the last group of names
  (a counted one, ``三个``, to the last that many names the narration joined).
  When nothing before the quote tells, the narration after it does (the one the next quote answers,
  or the next speaker); quoted words nobody says (inscriptions, a quoted name) go to the narrator;
- **tone and intensity** from the verb of the tag (喝道 → 愤怒) and the punctuation (！, ？, ……);
- **delay** from the punctuation that ends a segment, longer at paragraph ends and scene breaks.

Contents are copied from the text, so joined they give back the excerpt (quote marks and whitespace
aside).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from ..script import NARRATOR, SCENE_BREAK, Segment
from .lexicon import Lexicon, build_lexicon
from .story import MANY, TITLES, Story, head_of, is_descriptor, self_named
from .subjects import (
    COMPOUND_SURNAMES,
    COLLECTIVES,
    LISTENER_MARKERS,
    NOT_NAMES,
    PERSON_HEADS,
    PRONOUNS,
    STOP,
    TOGETHER_AFTER,
    common_noun,
    is_surname,
    kin_word,
    name_before_verb,
    name_shaped,
    names_at_start,
    strip_lead,
    subject,
)

UNKNOWN_SPEAKER = "某人"
_SENTENCE = re.compile(r".*?(?:[。！？!?．]+|…+)[”’）)]*|.+$", re.S)
_TAG_END = re.compile(r"(?:道|说|问|曰|叫|喝|骂|嚷|喊|想|答|应|言)?[：:]$|(?:道|说|问|曰)[，,]$|(?:道|说|问|曰)$")
_AFTER_TAG = re.compile(r"^([^。！？!?“”，,]{1,14}?(?:道|说|问|曰))[。，,！!]")
_CLAUSE = re.compile(r"[，,；;：:]")
_HEARD = re.compile(r"(?<=.)(?:听得|听见|听的)")
# Quoted words that nobody says: what is written (号旗上写的分明：“…”), verses and sayings the
# narrator quotes, and a name or phrase quoted inside a sentence (听了“宿世姻缘”四字).
_WRITTEN = re.compile(
    r"(?:(?:写着|写道|写的|写得|上写|上书|大书|题着|题道|刻着|书着)[\u4e00-\u9fff]{0,4}?(?:分明|明白|字)?道?"
    r"|大字道|小字道|字道|[》图书榜牌碑旗匾]上道|诗曰|诗云|词曰|正是|有诗为证|常言道|俗语道|自古道|古人道"
    r"|唤做|叫做|名唤|号为|称为|招做|都做|写做|(?<!中)书道|书道云|字[，,]?道是"
    r"|(?:文|状|书|信|帖|榜|告示)[，,]?[上中内尾](?:说|写|云)道?"
    r"|(?:看|读|念|开读|拆开|看罢)了?[^，,。：:]{0,6}(?:申状|文书|公文|书信|家书|书札|帖子|状子|表文|诏书|圣旨|来书|回书|榜文|告示))[：:，,]?$"
)
_SPEECH_BEFORE = re.compile(r"(?:[：:]|道|说|问|曰|叫|喝|骂|嚷|喊|声|云|言)$")
_PUNCTUATED = re.compile(r"[，。！？!?、；;：:…—,.]")
# A given name alone before the verb, or before one word of manner (俊义喜道 → 卢俊义), after 那 too
# (那师师笑道 → 李师师).
_SHORT_NAME = re.compile(r"^那?([\u4e00-\u9fff]{2})(?:道|说|曰|问|答道|应道|禀道|喝道|叫道|笑道|骂道|[喜怒惊叹哭急冷笑]道)[：:，,]?$")
# One character of a given name before 曰, as classical prose names people (操曰, 布怒曰, 操谓宫曰):
# where the text often writes that character before 曰, it stands for the full name that ends in it.
_GIVEN_ALONE = re.compile(r"^([\u4e00-\u9fff])[\u4e00-\u9fff]{0,4}?曰[：:，,]?$")
_ANSWER = re.compile(r"(?:答|应|回道|回答|回话|回言|回复|还言)")
# 问 and whom it asks, to the end of the clause (not 问道, 动问: a question in speech).
_ASKED = re.compile("(?<![动请借])问(?:了|着)?(?:那|这)?(?:个)?([\u4e00-\u9fff]{2,8})$")
# Names joined into one group: 童贯和酆美、毕胜, 朱武并跳涧虎陈达 (a nickname may come between).
_JOINED = re.compile("^(?:、|和|与|并|及|同)([\u4e00-\u9fff]{0,4})$")
_GATHERING = re.compile("会集|聚集|召集|唤集|宣召|请集")
_UNNAMED_GROUP = re.compile("[两二三](?:个|人|位)")
_KIN_GROUPS = ("弟兄两个", "夫妻两个")
# The person nouns of two characters or more, longest first, as one regex alternation.
_LONG_NOUNS = "|".join(sorted((h for h in PERSON_HEADS if len(h) > 1), key=len, reverse=True))
# All at once (都道, 齐声叫道, 一齐喊道), and a group a sentence brings in (叫众庄客, 救得两个公人).
_TOGETHER = re.compile("都|齐声|一齐|齐齐")
_AS_ONE = re.compile("齐声|同声|一齐|齐齐")
_GROUP_OBJECT = re.compile(
    "(众|群|[一二两三四五六七八九十几数百千]+(?:个|名|位|员))([\u4e00-\u9fff]{0,3}?(?:"
    + _LONG_NOUNS
    + "|臣))"
)
_QUOTED = re.compile("“[^”]*”?")
# 问 someone, at that moment (问他老婆时): the one asked answers in the tag that follows.
_ASKED_WHEN = re.compile("问(?:了|着)?(?:那|这|他|其)?(?:个)?([\u4e00-\u9fff]{2,6})时$")
_THINKING = re.compile(r"寻思|暗想|心想|想道|思量|思忖|忖道|沉吟")
# A tag sentence that is a two-character word and the verb alone (都寺便道：, 老小说道：).
_ROLE_TAG = re.compile(r"^([\u4e00-\u9fff]{2})(?:便|又|也|却|只)?(?:说|问|答|应|禀|告)?道[：:]$")
_NOT_IN_ROLE = (STOP - set("小老头主人客公军")) | set("罢毕了时间然即声里中日")
_NOT_FIRST_IN_ROLE = set("又也便却只再还亦其他你我")  # adverbs and pronouns (其妻: someone's wife, not a role)
_ASKS_AGAIN = re.compile("^(?:[便却]?又|再)(?:问|动问)道?[：:]?$")
# A decree that speaks (圣旨问道, 殿上法旨道): the sovereign of the scene, the last one the text named.
_DECREE = re.compile("^(?:[\u4e00-\u9fff]{1,2}[上前中])?(?:圣旨|法旨|玉旨|懿旨|敕旨)(?:[便又也却])?(?:问|说|宣|传|答)?道?[：:]?$")
_SOVEREIGNS = ("上皇", "天子", "皇帝", "官家", "圣上", "道君", "娘娘", "玄女", "郎主", "狼主", "国主")
# A shout with no words in the sentence (大叫出厅前来, 叫喊起来): the words come in the next paragraph.
_SHOUTING = re.compile("(?:大叫|大喊|叫喊|嚷|大喝)(?:着|了|一声)?(?:出|入|进|上|下|过|起|将|道)?[\u4e00-\u9fff]{0,4}[。！]$")
_ALL_AT_ONCE = re.compile("(?:一齐|齐声|齐齐)(?:都|的|地)?(?:说|叫|应|答|喊|道)")
_GREETED = re.compile("(?:拜罢|拜了|拜见了?|参见了?|参拜了?)([\u4e00-\u9fff]{2,4})$")  # and whom a clause bows to
_WHO_IT_IS = re.compile("^(?:不是别人|非是别人|不是别个)?(?:正是|便是|却是|乃是|原来是|原来正是|却原来是)")
_LOOKING = ("看时", "看了", "看", "认时", "见时", "看那人时")
_STORY_TURN = re.compile(r"(?:再说|却说|且说|话说|只说)$")  # the narrator's "now", not a speech verb
# A descriptor right before the speech verb inside a clause that opened with someone else, the comma
# left out (石秀兀自把木鱼敲响那和尚悄悄喝道): the nearer one speaks, unless a verb makes it an object.
_INNER_DESCRIPTOR = re.compile(
    "(?:那|这)(?:个)?[\u4e00-\u9fff]{0,3}?("
    + _LONG_NOUNS
    + ")[\u4e00-\u9fff]{0,4}?(?:道|说|问|叫|喝|骂)[：:，,]?$"
)
_INSTRUCTING = re.compile("(?:分付|吩咐|嘱咐|嘱付|叮嘱)")
_RESULT = set("起住")  # after a verb of handling (扶起那两位壮士道: whom one helps up is no speaker)
_TWO_ESCORTS = re.compile("(?:两个|二|两)(?:防送)?公人")
_OBJECT_BEFORE = LISTENER_MARKERS | set("见看望骂打扶揪拖带引押拿捉杀踢推摇")
# Before a name in a sentence with no commas, what makes it an object (扯住晋王, 追赶夏主, 禀萧后,
# 待贾润甫, 是自己母亲, 为蒲州刺史, 知杨义臣) or part of a group (童佩之、金国俊).
_BEFORE_AN_OBJECT = _OBJECT_BEFORE | set("住着了赶追遇随禀奏告谓劝谢拜请唤叫命差令教使知待为是、")
# Orders given to people named after the verb (教黄信、孙立…在营俟候, 先令黄信领三千兵, 再调杜迁扮做客人):
# the one who gives them goes on speaking when a quote follows with no tag.
_COMMAND = re.compile("教|令|命|调|差|分付|吩咐|传令|拨|点|加封")
_ORDERS = re.compile("传(?:下)?(?:将令|号令|军令)|传令")  # (随即传下将令，教三千匹马军…: orders to no one named)
# Someone on a man's side, not the man (宋江阵上一人大叫, 只见卢俊义背后一人大叫): who he is, the text says after.
_BESIDE = re.compile("(?:阵上|阵中|阵里|阵内|背后|身后|身边|队里|军中|手下|部下|帐下)(?:转过|闪出|走出|早有|有)?(一(?:个|员|位|条)?人)(?=[\u4e00-\u9fff]{0,4}$)")
# Someone the tag does not name (一人, 一个人, 有人, 一个客人): the narration right after his words may.
_INDEFINITE = re.compile("^(?:有)?(?:一|一个|一位|一条|一员)?(?:个)?人$|^(?:有)?(?:一个|一位|一条|一员)[\u4e00-\u9fff]{1,3}$")
# A count after a group's noun (部从二百余人), and where one stands before his noun (前头寨兵).
_COUNTED = re.compile("(?<=[\u4e00-\u9fff]{2})[一二三四五六七八九两几数]?[十百千][一二三四五六七八九十]*余?(?:人|个|名)$")
_NUMBERS = re.compile("[一二三四五六七八九十百千两几数]")
_PLACED = re.compile("^(?:前头|后头|前面|后面)(?=[\u4e00-\u9fff]{2})")
_REVEAL = re.compile("(?:却是|正是|原来是|原来却是|原来正是|乃是|见是)([\u4e00-\u9fff]{2,9})[。！，,]|(?<![不])是([\u4e00-\u9fff]{2,4}?)的?声音")
# Two people brought in one after the other (一个是没遮拦穆弘，一个是小遮拦穆春): they act together next.
_PAIR = re.compile("一个(?:是|唤做)([^，,。；;]{2,10})[，,；;]一个(?:是|唤做)([^，,。；;]{2,10})")

# Those who bring news, named by what they are: a troop (却有皇侄败残人马…备细告说), townsfolk (后有百姓
# 报说), scouts (又有两路哨军报道, 番兵报洞仙侍郎道), an official (县官闻的，飞报与两个番将，说道), the one
# who does something (几个打鱼的来报道). In a sentence that reports (报, 告, 禀), a clause that opens
# with one of them says who speaks.
_REPORTERS = ("人马", "军马", "军兵", "军民", "百姓", "哨军", "番兵", "番军", "败军", "残军", "官兵", "县官", "探事人", "报事人", "飞马")
_REPORTER_HEADS = "|".join(sorted(set(_REPORTERS) | {h for h in PERSON_HEADS if len(h) > 1}, key=len, reverse=True))
_REPORTER = re.compile(
    "^(?:[后又却已早先忽]?有)?(?:[一二三四五六七八九十两几数百千]+(?:个|名|路|队|起|伙|骑|处))?"
    f"(?:((?:(?![的之]).){{0,4}}?(?:{_REPORTER_HEADS}))(?![马的之])"
    "|([\u4e00-\u9fff]{2,3}的)(?=(?:又|便|也|都)?(?:回来|前来|到来|入来|进来|入去|来|回)?(?:报|告|禀)))"
)
_NOT_IN_REPORTER = LISTENER_MARKERS | set("见看听闻望说道叫喝了着被吃报告禀")
# A report that names nobody: news comes (又见报道, 忽报, 只听得报道, 报来说道); a messenger speaks.
_NEWS = re.compile(
    "^(?:(?:只|又|忽|却|早|猛|正)?(?:见|闻|听得|听的|听见)|忽|又听得|忽听得|忽听的|[又忽]有(?=飞))(?:人)?(?:飞|又|来)?"
    "(?:报|报道|报说|报来|报称|来报|飞报)(?:说道|说|道)?[：:，,]?$"
)
_NEWS_ALONE = re.compile("^(?:报|报道|报说|报来|报称)(?:说道|说|道)?[：:，,]?$")
# … or from a place (只见东寨边来报道, 城外报来): someone from there brings it.
_NEWS_FROM = re.compile(
    "^(?:次后)?(?:只|又|忽|却)?(?:见|听得|听的)?[\u4e00-\u9fff]{1,3}(?:边|上|外|里)(?:又|飞)?来?(?:报|报道|报说|报来)(?:说道|说|道)?[：:，,]?$"
)
MESSENGER = "报事人"
# Someone sent to come and speak for his master (史文恭使人来说道, 曾长官又使人到来言说, 李俊使人飞报将来，说,
# 朱贵酒店里使人上山来报道): the one sent speaks, by the word the text gives him. Not a reply sent back
# (安道全使人回话道) nor a report sent off (差人申报陈安抚说): the master's words, where nobody comes.
_SENT_TO_SPEAK = re.compile(
    "(?:使|差)(?:了)?(?:个|一个)?人(?:[飞又]?报)?(?:上山|过船|入城|进城|前)?(?:来|到来|将来)(?:对[\u4e00-\u9fff]{1,4})?"
    "(?:说道|言说|报说|报道|禀道|说|道|报)?[：:，,]?$"
)
_REPORTING = re.compile("报|告|禀")
# People the sentence counts out by their noun (三个渔人), of whom a count word goes on (两个…说道).
_COUNTED_HEAD = re.compile(f"[三四五六七八九十几数]+个({_LONG_NOUNS})[，,]")
# … and those the text counted before, of whom a count word goes on (有两个承局叫道…两个又道).
_COUNT_OF = re.compile("^(?:他)?(两|二|三)(?:个|人)$")
_TWO_OF = re.compile(f"(?:两|二)个({_LONG_NOUNS})")
_COUNTED_NOUN = {"两": _TWO_OF, "二": _TWO_OF, "三": re.compile(f"三个({_LONG_NOUNS})")}
# Two of a family the text names by one of them (张青夫妻, 施恩父子; not 宋江弟兄两个…问人道: one asks).
_COUPLE = re.compile("夫妻|夫妇|父子|母子")
_HEARING = re.compile("^(?:又|却|只|忽|正|早)?(?:听得|听的|听见)")
_SPEAKING = re.compile("说|道|叫|喊|称|骂|言|问|笑|哭|唱|嚷")
_BARE_SPEECH = re.compile("^(?:说道|说|道|报说|禀说|言说)[：:，,]?$")

# (pattern in the tag clause, tone, intensity): the first match wins.
VERB_TONES = (
    (r"冷笑|冷冷|冷哼|嗤|哂|不屑", "轻蔑", 3),
    (r"怒|喝|厉声|骂|吼|咆哮", "愤怒", 4),
    (r"哭|哽咽|泣|悲|惨然|黯然", "悲伤", 3),
    (r"叹|苦笑|无奈", "无奈", 2),
    (r"颤声|发抖|害怕|惊恐|战战", "恐惧", 3),
    (r"惊|失声|愕然|诧异", "惊讶", 3),
    (r"急|忙|大叫|叫道|喊|嚷", "焦急", 4),
    (r"寻思|暗想|心想|想道|沉吟|思忖", "沉思", 2),
    (r"得意|傲然|哈哈", "得意", 3),
    (r"柔声|轻声|温言|微笑|柔", "温柔", 2),
    (r"笑|喜", "喜悦", 3),
    (r"低声|压低|悄声", "紧张", 2),
    (r"沉声|正色|肃然|郑重", "严肃", 3),
    (r"问", "疑惑", 2),
)
_TENSE_NARRATION = re.compile(r"杀|刀光|剑光|血|惨叫|厮杀|劈|砍|刺|扑|猛|危")


@dataclass
class _State:
    story: Story | None = None  # the novel around the text: whom its descriptors stand for
    pos: int = 0  # where the piece being read starts in the story's text
    after_quote: bool = False  # nothing but one sentence, the tag, stands between the last quote and this one
    last_was_quote: bool = False  # the piece just read was a spoken quote
    recent: list[str] = field(default_factory=list)  # distinct quote speakers, most recent last
    last_subject: str | None = None  # one person: what 他 and an omitted subject refer to
    earlier_subject: str | None = None  # the one before it
    group: str | None = None  # the last names seen together (宋江、吴用): what 二人 refers to
    topic: str | None = None  # the last subject seen, one person or a group: a verb without one goes on with it
    mentioned: str | None = None  # the last name seen anywhere in an earlier sentence
    mentioned_now: str | None = None  # … and in the sentence just read
    asked: str | None = None  # whom the last sentence of narration asked (便问那当村住的人。): he answers next
    thought: bool = False  # the last quote was a thought (寻思道), not a turn of the exchange
    asker: str | None = None  # who asked the last question: 又问道 is him asking again …
    since_question: int = 0  # … when only the answer to it came between (quotes read since it)
    commander: str | None = None  # who gave orders in the narration since the last one named (教黄信…)
    preceding: str = ""  # the narration right before an excerpt that opens with a quote mid-paragraph
    shouted: str | None = None  # who shouted in the last sentence read (…大叫出厅前来。): a quote opening the next paragraph is his

    def spoke(self, speaker: str) -> None:
        self.asked = None
        self._spoke(speaker)

    def _spoke(self, speaker: str) -> None:
        if speaker == UNKNOWN_SPEAKER:
            return
        if speaker in self.recent:
            self.recent.remove(speaker)
        self.recent.append(speaker)
        if speaker != MESSENGER:
            self.saw(speaker)  # (one who only brings news is not whom the narration goes on about)

    def saw(self, subject: str) -> None:
        self.topic = subject
        if "、" in subject:
            self.group = subject
        elif subject != self.last_subject:
            self.earlier_subject, self.last_subject = self.last_subject, subject

    def other_speaker(self) -> str | None:
        return self.recent[-2] if len(self.recent) >= 2 else None


def labeler(settings: dict, lexicon: Lexicon | None) -> "RuleLabeler":
    """The ``rules`` backend of label_slices (it has no settings of its own)."""
    return RuleLabeler(lexicon)


class RuleLabeler:
    """Deterministic labeler; ``lexicon`` holds the names found in the whole novel, if known, and
    the novel itself, which the labeler reads around each excerpt."""

    backend = "rules"
    model = "rules-v32"
    prompt_hash = None  # reads no prompt

    def __init__(self, lexicon: Lexicon | None = None):
        self.lexicon = lexicon
        self._story: Story | None = None

    def label(self, slices, progress=None) -> list[list[Segment]]:
        out = []
        for item in slices:
            out.append(self.label_text(item.text, start=getattr(item, "start", None)))
            if progress:
                progress(1)
        return out

    def story(self) -> Story | None:
        """The novel of the lexicon, read once (None without one)."""
        if self._story is None and self.lexicon is not None and self.lexicon.text:
            self._story = Story(self.lexicon.text, self.lexicon)
        return self._story

    def label_text(self, text: str, start: int | None = None) -> list[Segment]:
        """Label ``text``; when it is the lexicon's novel from ``start`` on, the novel before it
        tells who speaks where the excerpt does not (a speaker named just before it, a descriptor
        for a person named earlier)."""
        lexicon = self.lexicon or build_lexicon(text, min_count=1)
        story = self.story() if start is not None else None
        if story is None or story.text[start : start + len(text)] != text:
            story, start = Story(text, lexicon), 0
        state = _State(story=story)
        before = story.before(start)
        _read(before, start - len(before), lexicon, state)  # who spoke and was named before
        # An excerpt that starts in the middle of a paragraph, with a quote: the narration just before
        # it in the paragraph is its tag (…先令黄信、孙立…埋伏。|“今夜五鼓…”).
        last = before.rsplit("\n", 1)[-1]
        pieces = _pieces(last.strip()) if last.strip() and text[:1] == "“" else []
        state.preceding = pieces[-1][1] if pieces and pieces[-1][0] == "narration" else ""
        # An excerpt that ends in the middle of a paragraph, with a quote: the narration just after it
        # in the paragraph is its tag (“孤雁不回头。”|陆青崖喃喃道。).
        end = start + len(text)
        paragraph_end = story.text.find("\n", end)
        following = story.text[end : len(story.text) if paragraph_end < 0 else paragraph_end]
        return _read(text, start, lexicon, state, following=following if text[-1:] != "\n" else "")


def _read(text: str, at: int, lexicon: Lexicon, state: _State, following: str = "") -> list[Segment]:
    """The segments of ``text`` (which starts at ``at`` in the story), paragraph by paragraph;
    ``following`` is the rest of the story's paragraph that ``text`` ends in."""
    segments: list[Segment] = []
    offset = 0
    lines = text.split("\n")
    for k, line in enumerate(lines):
        line_at, offset = at + offset, offset + len(line) + 1
        if not line.strip():
            continue
        if SCENE_BREAK.match(line):
            if segments:
                segments[-1] = _with_delay(segments[-1], 1500)
            story = state.story
            state.__init__(story=story)  # a new scene: earlier speakers are gone
            continue
        lead = len(line) - len(line.lstrip())
        part = _label_paragraph(line.strip(), lexicon, state, line_at + lead, following if k == len(lines) - 1 else "")
        if part:
            part[-1] = _with_delay(part[-1], max(part[-1].delay, 800))
        segments.extend(part)
    return segments


def _with_delay(segment: Segment, delay: int) -> Segment:
    return Segment(segment.speaker, segment.content, segment.tone, segment.intensity, delay)


def _pieces(paragraph: str) -> list[tuple[str, str, int]]:
    """Split a paragraph into ('narration', text, offset) and ('quote', inner text, offset) pieces."""
    pieces: list[tuple[str, str, int]] = []
    i = 0
    while i < len(paragraph):
        start = paragraph.find("“", i)
        if start == -1:
            pieces.append(("narration", paragraph[i:], i))
            break
        if start > i:
            pieces.append(("narration", paragraph[i:start], i))
        end = _closing_quote(paragraph, start)
        pieces.append(("quote", paragraph[start + 1 : end], start + 1))
        i = end + 1
    return [piece for piece in pieces if piece[1].strip("”“ \t　")]


def _closing_quote(paragraph: str, start: int) -> int:
    """Index of the ” closing the quote opened at ``start`` (nested “ ” allowed); the end if none."""
    depth = 0
    for i in range(start, len(paragraph)):
        if paragraph[i] == "“":
            depth += 1
        elif paragraph[i] == "”":
            depth -= 1
            if depth == 0:
                return i
    return len(paragraph)


def _label_paragraph(paragraph: str, lexicon: Lexicon, state: _State, at: int = 0, following: str = "") -> list[Segment]:
    """The segments of one paragraph; ``following`` is the story's text after it in the same
    paragraph, when the excerpt ends there (it is read, never labelled)."""
    pieces = _pieces(paragraph)
    segments: list[Segment] = []
    for k, (kind, text, offset) in enumerate(pieces):
        state.pos = at + offset
        if kind == "narration":
            sentences = [s for s in _SENTENCE.findall(text) if s.strip()]
            for sentence in sentences:
                segments.append(_narration(sentence.strip("　 \t"), lexicon, state))
            # A quote, then one sentence of tag: the tag's verb may leave its subject to the quote.
            state.after_quote, state.last_was_quote = state.last_was_quote and len(sentences) <= 1, False
            continue
        before = pieces[k - 1][1] if k > 0 and pieces[k - 1][0] == "narration" else state.preceding if k == 0 else ""
        state.preceding = ""
        after = pieces[k + 1][1] if k + 1 < len(pieces) and pieces[k + 1][0] == "narration" else ""
        if k == len(pieces) - 1 and following:
            after = following.split("“", 1)[0]  # up to the story's next quote, as within the paragraph
        if _not_speech(before, text, after):
            segments.append(Segment(NARRATOR, text, "平静", 1, _delay(text)))
            state.after_quote = state.last_was_quote = False
            continue
        speaker, tag = _speaker(before, after, lexicon, state)
        speaker = _unjoined(speaker, lexicon)
        if speaker == UNKNOWN_SPEAKER:
            speaker = _named_after(after, lexicon)
        if speaker == UNKNOWN_SPEAKER:
            speaker = state.mentioned or UNKNOWN_SPEAKER
        if speaker == UNKNOWN_SPEAKER or is_descriptor(speaker, lexicon) or not _proper(speaker, lexicon):
            # Someone not named yet names himself (那人禀道：“小人是三都缉捕使臣何涛。”).
            speaker = self_named(text, lexicon) or speaker
        # Someone the tag brings in by a noun (一个客人走到面前): the narration right after may say who he is.
        brought_in = len(speaker) >= 2 and "一" in tag and re.search(f"(?:一个|一员|一位|一条)(?:[\u4e00-\u9fff]{{0,2}}){re.escape(speaker)}", tag)
        if not re.search(f"(?:[两二三四五六七八九十几数众诸][个位名员条对起伙群队班彪簇枝支筹]?|们){re.escape(speaker)}|{re.escape(speaker)}们", tag):
            speaker = _identify(speaker, state)  # (四个好汉齐答道: many, not the one named)
        if _INDEFINITE.match(speaker) or brought_in:
            speaker = _revealed(state, len(text), lexicon) or speaker  # 只见阶下走过一人道：“…”众人看时，却是鼓上蚤时迁
        listener = _listener(_clauses(tag)[-1] if _clauses(tag) else "", lexicon)
        if "、" in speaker and listener in speaker.split("、"):
            speaker = "、".join(p for p in speaker.split("、") if p != listener)  # 戴宗、李逵…问李逵道 → 戴宗
        if speaker in (_vocative(text, lexicon), _listener(_clauses(tag)[-1] if _clauses(tag) else "", lexicon)):
            # Nobody calls himself by name at the start of his own line (“郓哥，你把去…”), nor
            # speaks to himself in his own tag (便问庄客：“…”).
            others = (state.other_speaker(), state.last_subject, state.earlier_subject)
            speaker = next((s for s in others if s and s != speaker), UNKNOWN_SPEAKER)
        state.spoke(speaker)
        state.commander = speaker if speaker == state.commander else None
        state.shouted = None
        state.last_was_quote = True
        state.thought = bool(_THINKING.search(tag))
        if "问" in tag or text.rstrip("”’ 　").endswith(("？", "?")):
            state.asker, state.since_question = speaker, 0
        else:
            state.since_question += 1
        tone, intensity = _tone(tag, text)
        segments.append(Segment(speaker, text, tone, intensity, _delay(text)))
    return segments


def _unjoined(speaker: str, lexicon: Lexicon) -> str:
    """Names the text runs together with no 、 (宝钗袭人都来扶起, 贾母众人听了) as a group: a word no
    list knows made only of two or more known names of different people, none a person noun or kin
    (空空道人 is one 道人, 刘知寨老婆 his wife)."""
    if speaker in lexicon.names or "、" in speaker:
        return speaker
    parts, i = [], 0
    while i < len(speaker) and (part := lexicon.name_at(speaker, i)):
        parts.append(part)
        i += len(part)
    people = {lexicon.canonical(p) for p in parts}
    nouns = any(p in PERSON_HEADS or kin_word(p) for p in parts)
    if i < len(speaker) or len(parts) < 2 or len(people) < len(parts) or nouns:
        return speaker
    return "、".join(parts)


def _proper(speaker: str, lexicon: Lexicon) -> bool:
    """A speaker given by name (宋江, 安士荣, 宋江、吴用), not by what he is (一将, 二人, 军汉)."""
    return all((p in lexicon.names and not common_noun(p)) or name_shaped(p) for p in speaker.split("、"))


def _identify(speaker: str, state: _State) -> str:
    """The person a descriptor stands for where it is read (那妇人 → 潘金莲), if the novel named
    that person; the descriptor itself otherwise."""
    if state.story is None or not is_descriptor(speaker, state.story.names):
        return speaker
    head = head_of(speaker)
    if head in TITLES and len(speaker) > len(head) and not is_surname(speaker) and not MANY.match(speaker):
        return speaker  # 住持真人, 监宫真人: a post before the title, someone other than the one named with it
    name = state.story.who(speaker, state.pos)
    answered = state.recent[-1] if state.recent else ""
    if name and (answered == name or "汉" in answered) and state.story.answers_a_man(speaker, state.pos):
        return speaker  # 一个大汉应道：“…”那人道: the other one of the two, not the man just named
    return name or state.story.noun_for(speaker, state.pos) or speaker


def _not_speech(before: str, content: str, after: str) -> bool:
    before = before.rstrip(" \t　")
    if _WRITTEN.search(before):
        return True
    # A short quote without punctuation, with no speech verb before it nor a tag after it: a name
    # or phrase being quoted (听了“宿世姻缘”四字, 望“圣水”“神火”军中, 再说“没羽箭”张清).
    spoken_before = _SPEECH_BEFORE.search(before) and not _STORY_TURN.search(before)
    short = len(content) <= 8 and not _PUNCTUATED.search(content)
    if short and before and not before.endswith(("：", ":", "声", "大叫", "急叫", "连叫", "喝", "喊", "嚷")) and after[:1] in ("，", ","):
        return True  # 洪教头怪这柴进说“休小觑他”，便跳起身来: words quoted inside a sentence (not 叫声“…”, 急叫“着”: a shout; but 一个叫“香怜”: a name)
    return bool(short and not spoken_before and not _AFTER_TAG.match(after.lstrip()))


def _narration(sentence: str, lexicon: Lexicon, state: _State) -> Segment:
    name = _sentence_subject(sentence, lexicon)
    commander = _commander(sentence, name, lexicon, state)
    pair = _PAIR.search(sentence)
    ends = pair and [
        next((m.group() for m in lexicon.names_in(part) if m.end() == len(part)), None) or (part[-2:] if name_shaped(part[-2:]) else None)
        for part in pair.groups()
    ]
    if ends and all(ends):
        name = "、".join(ends)  # 一个是没遮拦穆弘，一个是小遮拦穆春
    if name in ("他", "她"):
        # 晁盖叫庄客…，他和公孙胜…杀将出来: 他 is the one the sentence began with.
        clauses = _clauses(sentence)
        k = next((k for k in range(len(clauses) - 1, 0, -1) if subject(clauses[k], lexicon) == name), 0)
        earlier = _sentence_subject(clauses[:k], lexicon) if k else None
        name = earlier if earlier and "、" not in earlier and _proper(earlier, lexicon) else name
    if name and name not in PRONOUNS + COLLECTIVES:
        state.saw(name)
    state.commander = commander
    # A name in the sentence that introduces a quote is most often the listener or an object
    # (走到裴寒山桌前，道): only names of earlier sentences stand in for a missing speaker.
    if re.search(r"[。！？!?]$", sentence):
        state.asked = _asked(sentence, lexicon, state)  # (a tag sentence, …问道：, asks in its own quote)
    state.shouted = (name if name and name not in PRONOUNS + COLLECTIVES else state.topic) if _SHOUTING.search(sentence) else None
    state.mentioned = state.mentioned_now or state.mentioned
    state.mentioned_now = _last_name(sentence, lexicon)
    tone, intensity = ("紧张", 3 if sentence.rstrip("”’").endswith("！") else 2) if _TENSE_NARRATION.search(sentence) else ("平静", 1)
    return Segment(NARRATOR, sentence, tone, intensity, _delay(sentence))


def _commander(sentence: str, name: str | None, lexicon: Lexicon, state: _State) -> str | None:
    """Who gives the orders a sentence of narration tells (卢俊义…先令黄信…埋伏 → 卢俊义): the one named
    before the first verb of command that a name follows; for a sentence that orders with no one
    named before it (再调杜迁、宋万…), the one who gave the orders before, or whom the narration was
    about. None when the sentence gives no orders and its subject ``name`` is someone else (李逵领了便去)."""
    clauses = _clauses(sentence)
    for k, clause in enumerate(clauses):
        verbs = [m for m in _COMMAND.finditer(clause) if lexicon.name_at(clause, m.end())] + list(_ORDERS.finditer(clause))
        if not verbs:
            continue
        head = clause[: min(m.start() for m in verbs)]
        own = subject(head, lexicon, first=k == 0) if head.strip() else None
        found = own or (_sentence_subject(clauses[:k], lexicon) if k else None)
        if found and found not in PRONOUNS + COLLECTIVES and "、" not in found:
            return found
        if found is None or found in PRONOUNS:
            return state.commander or (state.topic if state.topic and "、" not in state.topic else None)
        return None
    return state.commander if not name or not _proper(name, lexicon) else None  # (五千步军在后策应: his orders go on)


def _clauses(sentence: str) -> list[str]:
    return [c for c in _CLAUSE.split(sentence.strip("　 \t：:，,")) if c.strip()]


def _sentence_subject(sentence: str | list[str], lexicon: Lexicon, skip: tuple = (), before_verb: bool = False) -> str | None:
    """The subject nearest the end of a sentence (or of its clauses): the last clause that opens
    with one (or with a person seen: 看时，见石秀…), passing over those in ``skip`` and the one a
    clause hears (听得宋江骂时), unless ``before_verb`` (the clauses before a speech verb) says that what
    he is heard doing leads to the words (只听得那妖精敲着锣，…自念自诵道)."""
    clauses = _clauses(sentence) if isinstance(sentence, str) else sentence
    for k in range(len(clauses) - 1, -1, -1):
        clause = clauses[k]
        if k and _WHO_IT_IS.match(clause) and any(c.endswith(_LOOKING) for c in clauses[:k]):
            continue  # 林冲看时，不是别人，却是柴进: the one who looks goes on, not the one he sees
        heard = k and _HEARING.match(clause.strip(" \t　”’"))
        if heard and (clause.endswith("时") or not (before_verb or _SPEAKING.search(clause))):
            # 婆惜也不曾睡着，听得宋江骂时，扭过身回道; 李逵…，听得戴宗齁齁的睡着。: the one heard, not
            # who goes on (but 只听得蒋门神口里称赞不了，只说: his words are what is heard)
            continue
        if k and clause.startswith("见") and clauses[k - 1].endswith(("看时", "看")):
            clause = clause[1:]  # 宋江看时，见石秀拈着口刀，…: the one seen acts next
        name = subject(clause, lexicon, first=k == 0)
        if name and k and clause.rstrip("等").endswith(name) and any(_GATHERING.search(c) for c in clauses[:k]):
            continue  # 会集文武众官，右丞相太师卞祥，…: those gathered, listed, not who acts
        if name and name not in skip:
            return name
    return None


def _speaker(before: str, after: str, lexicon: Lexicon, state: _State) -> tuple[str, str]:
    """Return (speaker, tag clause) for a quote from the narration around it."""
    before = before.rstrip(" \t　")
    last_sentence = _SENTENCE.findall(before)[-1] if before.strip() else ""
    if last_sentence and _TAG_END.search(last_sentence) and not re.search(r"[。！？!?]$", last_sentence):
        return _tag_subject(last_sentence, lexicon, state), last_sentence
    match = _AFTER_TAG.match(after.lstrip())
    if match:
        name = subject(match.group(1), lexicon, verb_clause=True) or name_before_verb(match.group(1), lexicon)
        if name:
            return _resolve(name, state), match.group(1)
    if last_sentence:
        # Narration, then an untagged quote: the person the narration was about speaks, or the one
        # whose orders it told (…先令黄信、孙立埋伏，史进、杨志…埋伏。“今夜五鼓…” → 卢俊义).
        return _resolve(state.commander or _sentence_subject(last_sentence, lexicon) or "他", state), ""
    if state.shouted:
        return _resolve(state.shouted, state), ""  # …大叫出厅前来。⏎“两个鬼我都捉了。”
    return state.other_speaker() or UNKNOWN_SPEAKER, ""


def _tag_subject(sentence: str, lexicon: Lexicon, state: _State) -> str:
    """The speaker of a tag sentence (…笑道：): the subject of the verb's own clause, or else of the
    nearest clause before it (林青站起身来，拍了拍雪，笑道 → 林青), or else the one the paragraph
    was about. Names after a verb of address are listeners (分付戴宗道), and so are the people a
    clause sends or asks to do something (便请军师吴用商议).
    """
    clauses = _clauses(sentence)
    if not clauses:
        return _carried("", state)
    if _commaless(lexicon):
        clauses = _at_names(clauses, lexicon)
    verb = clauses[-1]
    if state.story and _DECREE.match(strip_lead(verb)):
        return _sovereign(state) or _carried(verb, state)
    heard = _HEARD.search(verb)
    name = heard and subject(verb[heard.end() :], lexicon, verb_clause=True)  # 宋江又听得那太公问道
    inner = _INNER_DESCRIPTOR.search(verb)
    held = inner and inner.start() >= 2 and verb[inner.start() - 1] in _RESULT and verb[inner.start() - 2] in _OBJECT_BEFORE
    if not name and inner and inner.start() > 1 and verb[inner.start() - 1] not in _OBJECT_BEFORE and not held:
        name = inner.group(1)
    name = name or _given_alone(verb, lexicon, state)
    name = name or _sent_to_speak(clauses)
    beside = not name and _BESIDE.search(verb)
    name = name or (beside and beside.group(1))
    name = name or _news(clauses) or subject(verb, lexicon, verb_clause=True, first=len(clauses) == 1) or _reporter(clauses[-1:], lexicon, 1) or name_before_verb(verb, lexicon)
    if name in PRONOUNS and len(clauses) > 1:
        # 庞元只道张世开打小厮，他便叫道 → 庞元; 王庆见是个卖卦的，他已有…，他便叫道 → 王庆
        name = _sentence_subject(clauses[:-1], lexicon, skip=PRONOUNS) or name
    counted = name in COLLECTIVES and len(clauses) > 1 and _COUNTED_HEAD.search("，".join(clauses[:-1]) + "，")
    if counted and strip_lead(verb).startswith(name):
        return counted.group(1)  # 上有三个渔人，一个看船，两个上岸来说道: two of the 渔人 the sentence counted
    if name in COLLECTIVES and len(clauses) > 1:
        group = _sentence_subject(clauses[:-1], lexicon)
        name = group if group and "、" in group else name  # 那陆虞候和富安见老都管来问病，两个商量道
    name = name or (len(clauses) > 1 and _asked_then(clauses[-2], lexicon)) or None
    if name and len(clauses) > 1 and _AS_ONE.search(verb) and lexicon.name_at(strip_lead(verb), 0) == name:
        # 文仲容，崔野同声答道 / 鲁智深，武松，刘唐齐声大叫: names listed with commas for 、 speak together
        group = [name]
        for clause in reversed(clauses[:-1]):
            other = strip_lead(clause) if clause is clauses[0] else clause
            if other in group or lexicon.name_at(other, 0) != other or not _proper(other, lexicon):
                break
            group.insert(0, other)
        name = "、".join(group)
    own = name
    name = name or _sentence_subject(clauses[:-1], lexicon, before_verb=True) or _reporter(clauses, lexicon, len(clauses) - 1)
    if name and not own and "、" in name and _INSTRUCTING.match(strip_lead(verb)):
        name = name.split("、")[0]  # 燕青和李逵吃了些早饭，分付道: one of them gives the instructions, the first named
    if name and not own and _TOGETHER.search(verb) and "、" not in name and name not in COLLECTIVES + ("众人",):
        # 李逵随即叫众庄客人等认时，齐声叫道: one person cannot speak all at once; those he called do
        name = _group_object(clauses[:-1]) or name
    name = name or ("众人" if _ALL_AT_ONCE.search(verb) else None)  # 厅上厅下一齐都道: everyone there
    short = not name and state.story and _SHORT_NAME.match(strip_lead(verb))
    name = name or (short and state.story.full_name(short.group(1), state.pos))  # 四郎道 → 赵四郎
    role = not name and len(clauses) == 1 and state.story and _ROLE_TAG.match(sentence.strip(" \t　”’"))
    word = role and role.group(1)
    if word and word not in NOT_NAMES and word[0] not in _NOT_FIRST_IN_ROLE and not any(ch in _NOT_IN_ROLE for ch in word[1:]) \
            and strip_lead(word) in (word, word[1:]) and word + "了" not in state.story.text:
        name = word  # 都寺便道, 老小说道: a sentence that is only a word and the verb (not 又读道, 当日禀道, 发落道)
    if name and name not in lexicon.names:
        counted = _COUNTED.sub("", name)
        name = name if _NUMBERS.search(counted) else counted  # 一行部从二百余人，一齐声喏道 → 部从 (not 三二十人)
        placed = _PLACED.match(name)
        name = name[placed.end() :] if placed and name.endswith(PERSON_HEADS) else name  # 前头寨兵指道 → 寨兵
    couple = name in lexicon.names and next((m.group() for m in _COUPLE.finditer(sentence) if sentence.endswith(name, 0, m.start())), None)
    if couple:
        name = name + couple  # 张青夫妻两个笑道, 施恩父子商议道: the two as the text calls them
    if name == "公人" and state.story and _TWO_ESCORTS.search(verb):
        name = state.story.escorts(state.pos) or name  # 两个公人道 → 张千、李万, named when they were sent
    return _resolve(name, state) if name else _carried(verb, state)


def _commaless(lexicon: Lexicon) -> bool:
    """A text that has lost its commas (隋唐演义 as some copies give it): a sentence is one clause."""
    return lexicon.count("。") > 5 * lexicon.count("，") + 100


def _at_names(clauses: list[str], lexicon: Lexicon) -> list[str]:
    """Clauses for a text with no commas: the verb's clause starts at the last known name in it that
    no verb or marker takes as its object (炀帝念完萧后问道 → 炀帝念完 | 萧后问道; not 敬与玄宗道), nor
    one that goes on a group (童佩之、金国俊)."""
    verb = clauses[-1]
    starts = [
        m.start()
        for m in lexicon.names_in(verb)
        if m.start() and verb[m.start() - 1] not in _BEFORE_AN_OBJECT and m.group()[-1] not in "上下里中前边"
    ]
    return clauses[:-1] + [verb[: starts[-1]], verb[starts[-1] :]] if starts else clauses


def _given_alone(verb: str, lexicon: Lexicon, state: _State, reach: int = 3000) -> str | None:
    """The full name a lone given-name character before 曰 stands for (操大怒曰 → 曹操), where the
    text writes that character before 曰 often: of the surnames and that character spelled out in the
    text just before (曹操, 周瑜; 吴硕 though no tag holds it), the one spelled out most there."""
    alone = state.story and _GIVEN_ALONE.match(strip_lead(verb))
    if not alone or alone.group(1) in STOP or lexicon.count(alone.group(1) + "曰") < 3:
        return None  # (奏曰, 乃曰: a verb or a word of manner, no name)
    window = state.story.text[max(0, state.pos - reach) : state.pos]
    found = [m.group(1) for m in re.finditer(f"(?=([\u4e00-\u9fff]{{1,2}}{alone.group(1)}))", window)]
    found = [w for w in found if is_surname(w) and lexicon.count(w) >= 3]
    found = [w for w in found if not any(o.endswith(w) and o[:-len(w)] + w[0] in COMPOUND_SURNAMES for o in found)]  # 司马懿, not 马懿
    return max(reversed(found), key=found.count, default=None)  # (the nearest of those as often)


def _sent_to_speak(clauses: list[str]) -> str | None:
    """The one a master sends to come and speak (史文恭使人来说道 → 使人), in the verb's clause or the
    one before a verb that stands alone (李俊使人飞报将来，说)."""
    verb = clauses[-1].strip(" \t　”’")
    where = clauses[-2] if len(clauses) > 1 and _BARE_SPEECH.match(verb) else verb
    sent = _SENT_TO_SPEAK.search(where)
    return where[sent.start()] + "人" if sent else None


def _news(clauses: list[str]) -> str | None:
    """A messenger, for a report that names nobody (又见报道, 忽闻报说; a sentence that is only 报来说道)."""
    verb = clauses[-1].strip(" \t　”’")
    return MESSENGER if _NEWS.match(verb) or _NEWS_FROM.match(verb) or (len(clauses) == 1 and _NEWS_ALONE.match(verb)) else None


def _reporter(clauses: list[str], lexicon: Lexicon, upto: int) -> str | None:
    """Who brings the news a reporting sentence tells, when one of the first ``upto`` clauses opens
    with a troop, townsfolk, an official or a doer no name list knows (见西州败残军马回来，报说 →
    西州败残军马). The report comes after them (not 晓谕百姓: the townsfolk are told); a troop named
    for its leader is his (宋江军马), and a title before a name is his (河北降将乔道清)."""
    for k in range(upto - 1, -1, -1):
        clause = strip_lead(clauses[k])
        clause = clause[1:] if clause[:1] == "见" else clause  # (只听见: 只听 is a lead word)
        match = _REPORTER.match(clause)
        found = match and (match.group(1) or match.group(2))
        if not found or any(ch in _NOT_IN_REPORTER for ch in found[:-2]) or any(lexicon.names_in(found)):
            continue
        if lexicon.name_at(clause, match.end()):
            continue
        if _REPORTING.search(clause[match.end() :] + "".join(clauses[k + 1 :])):
            return found
    return None


def _sovereign(state: _State, reach: int = 1500) -> str | None:
    """The sovereign the text last named before the point being read (上皇驾坐文德殿。圣旨问道 → 上皇)."""
    text = state.story.text[max(0, state.pos - reach) : state.pos]
    found = max(((text.rfind(word), word) for word in _SOVEREIGNS), default=(-1, None))
    return found[1] if found[0] >= 0 else None


def _carried(verb: str, state: _State) -> str:
    """Who speaks when the tag names nobody: right after a quote, its speaker goes on (又读道,
    便叫武松) unless the verb answers (答道: the other one) or asks again (又问道: the one who asked
    before); else whom the narration is about."""
    answered = state.asker and state.since_question == 1 and state.recent and state.recent[-1] != state.asker
    if answered and state.after_quote and _ASKS_AGAIN.match(verb.strip(" \t　”’")):
        return state.asker  # 李逵道：“那个是吃打的？”原告道：“…”又问道 → 李逵
    if state.after_quote and state.recent and state.recent[-1] == MESSENGER:
        return _resolve(state.topic or "他", state)  # 又见报道：“宋军到了。”忙与洞仙侍郎道: the one told speaks
    if state.after_quote and state.recent:
        if _ANSWER.match(strip_lead(verb)) and state.other_speaker() and not state.thought:
            # (李逵见问，自肚里寻思道：“…” 答道: the one who was thinking answers)
            return state.other_speaker()
        return state.recent[-1]
    if state.asked:
        return state.asked  # 便问那当村住的人。说道: the one asked answers
    return _resolve(state.topic or "他", state)


def _asked(sentence: str, lexicon: Lexicon, state: _State) -> str | None:
    """Whom a sentence of narration asks (便问那当村住的人, 问他两个时): a name, a group of names
    given in the sentence, or a person noun; None if it asks nobody or something (问了地名)."""
    for clause in reversed(_clauses(sentence.rstrip("。！？!?"))):
        match = _ASKED.search(clause)
        greeted = not match and _GREETED.search(clause)
        if greeted:
            name = names_at_start(greeted.group(1), lexicon)
            if name and "、" not in name and is_surname(name):
                return name  # 燕青…拜罢宋江，吃了酒食。问道: the one bowed to speaks first
            continue
        if not match:
            continue
        asked = re.sub("(?:时|一声|一遍)$", "", match.group(1))
        if asked.startswith("他") and asked[1:] in COLLECTIVES or asked in COLLECTIVES:
            group = _last_group(sentence[: sentence.find(clause)], lexicon)  # 唤到管营、差拨，问他两个时
            return group or _resolve(asked[1:] if asked.startswith("他") else asked, state)
        name = names_at_start(asked, lexicon)
        if name and name == asked:
            return name
        return asked if asked.endswith(PERSON_HEADS) and len(asked) <= 6 else None
    return None


def _group_object(clauses: list[str]) -> str | None:
    """The last group a sentence brings in after its first words (叫众庄客, 会集群臣, 救得两个公人),
    by its noun: 众庄客, 群臣, 公人."""
    text = "，".join(clauses)
    found = [m for m in _GROUP_OBJECT.finditer(text) if m.start() > 0]
    if not found:
        return None
    match = found[-1]
    return match.group(1) + match.group(2) if match.group(1) in ("众", "群") else match.group(2)


def _asked_then(clause: str, lexicon: Lexicon) -> str | None:
    """Whom a clause asks just before a tag that names nobody (问他老婆时，却说道): the one who
    answers; a name, or a person noun of two characters or more."""
    match = _ASKED_WHEN.search(clause)
    if not match:
        return None
    asked = match.group(1)
    name = names_at_start(asked, lexicon)
    if name == asked:
        return name
    return asked if asked.endswith(PERSON_HEADS) and not name else None


def _revealed(state: _State, length: int, lexicon: Lexicon, reach: int = 2) -> str | None:
    """The name the narration right after a quote gives its speaker (…”众人看时，却是鼓上蚤时迁。): in
    the first ``reach`` sentences after it, outside quotes, a name that ends what 却是/正是 introduces."""
    if state.story is None:
        return None
    after = state.story.text[state.pos + length : state.pos + length + 200].lstrip("”’")
    after = after.split("\n")[0]  # (…”⏎蔡福来到楼上看时，却是主管李固: a new paragraph, whom another finds)
    for sentence in _SENTENCE.findall(after)[:reach]:
        if sentence.lstrip().startswith("“"):
            return None  # (someone speaks first: the exchange goes on)
        match = _REVEAL.search(sentence.split("“")[0])
        if match:
            said = match.group(1) or match.group(2)  # (宋江听时，是赵能声音: whose voice it was)
            found = [m for m in lexicon.names_in(said) if m.end() == len(said)]
            name = found[-1].group() if found else None
            return name if name and _proper(name, lexicon) and not is_descriptor(name, lexicon) else None
    return None


def _resolve(name: str, state: _State) -> str:
    if name in COLLECTIVES:
        # 二人 are the last names seen together, or the last group described (两个牌军…。两个道);
        # when that group has just spoken, the other group of the exchange answers.
        described = state.last_subject and state.last_subject.endswith(PERSON_HEADS)
        if state.group and state.recent and state.recent[-1] == state.group:
            other = next((s for s in reversed(state.recent[:-1]) if "、" in s), None)
            return other or state.group
        # (not 那弟兄二人大惊道…那二人道: a group the text has not named has just spoken)
        unnamed = any("、" not in s and _UNNAMED_GROUP.search(s) for s in state.recent[-3:])
        counted = (state.group or not described) and not unnamed and name not in _KIN_GROUPS and _counted_group(name, state)
        return counted or state.group or (state.last_subject if described else _counted_noun(name, state) or name)
    if name in PRONOUNS:
        return state.last_subject or state.other_speaker() or UNKNOWN_SPEAKER
    return name


def _counted_noun(word: str, state: _State, reach: int = 400) -> str | None:
    """The noun of the people the text last counted as many as a count word says (只听得门首有两个承局
    叫道…两个又道 → 承局), where it names nobody else for them."""
    count = _COUNT_OF.match(word)
    if not count or state.story is None:
        return None
    text = state.story.text[max(0, state.pos - reach) : state.pos]
    found = list(_COUNTED_NOUN[count.group(1)].finditer(text))
    return found[-1].group(1) if found else None


def _counted_group(word: str, state: _State, reach: int = 600) -> str | None:
    """The people a counted group word stands for (三个 → 朱武、陈达、杨春) when the last group seen
    has another count: the last names the narration before joins that many together (童贯和酆美、
    毕胜; 朱武并跳涧虎陈达, a nickname the novel puts before the name), in this chapter, not inside
    quotes. A group with a person noun in it (管营、差拨) or cut off by the window is no group."""
    count = 2 if any(ch in word for ch in "两二") else 3 if "三" in word else 0
    if not count or state.story is None or (state.group and state.group.count("、") + 1 == count):
        return None
    story = state.story
    k = bisect.bisect_right(story.chapters, state.pos) - 1
    begin = max(story.chapters[k] if k >= 0 else 0, state.pos - reach)
    text = _QUOTED.sub("。", story.text[begin : state.pos])
    def joined(gap: str, name: str) -> bool:
        match = _JOINED.match(gap)  # (a nickname between: one the novel puts before that name)
        return bool(match) and (not match.group(1) or story.text.count(match.group(1) + name) >= 2)

    groups = _name_runs(text, story.names, joined)
    whole = [g for g in groups if text[g[0].start() - 1 : g[0].start()] not in ("、", "")]  # (not cut by the window)
    found = next((g for g in reversed(whole) if len(g) == count), None)
    if not found or any(common_noun(m.group()) for m in found) or len({m.group() for m in found}) < count:
        return None
    return "、".join(m.group() for m in found)


def _name_runs(text: str, lexicon: Lexicon, joined) -> list[list]:
    """The known names in ``text`` in runs: a name joins the run before it when ``joined(gap, name)``
    holds for the text between them."""
    runs: list[list] = []
    for match in lexicon.names_in(text):
        if runs and joined(text[runs[-1][-1].end() : match.start()], match.group()):
            runs[-1].append(match)
        else:
            runs.append([match])
    return runs


def _last_group(text: str, lexicon: Lexicon) -> str | None:
    """The last names in ``text`` joined by 、 (唤到管营、差拨 → 管营、差拨)."""
    groups = _name_runs(text, lexicon, lambda gap, name: gap == "、")
    last = next((g for g in reversed(groups) if len(g) > 1), None)
    return "、".join(m.group() for m in last) if last else None


def _last_name(sentence: str, lexicon: Lexicon) -> str | None:
    """The last known name in a sentence that is not spoken to (日光照在裴寒山脸上 → 裴寒山)."""
    found = [m.group() for m in lexicon.names_in(sentence) if not m.start() or sentence[m.start() - 1] not in LISTENER_MARKERS]
    return found[-1] if found else None


def _named_after(after: str, lexicon: Lexicon) -> str:
    """A speaker nothing before the quote tells, from the narration after it: the one the next
    quote answers (花荣便对黄信说道 → 黄信), or else the speaker of the next quote, who goes on
    (…公孙胜双脚踏在上面。罗真人把袖一拂，喝声道 → 罗真人), or else whoever the narration is about."""
    sentences = [s for s in _SENTENCE.findall(after) if s.strip()]
    if sentences and _TAG_END.search(sentences[-1]) and not re.search(r"[。！？!?]$", sentences[-1]):
        clauses = _clauses(sentences[-1])
        speaker = _tag_subject(sentences[-1], lexicon, _State())
        listener = _listener(clauses[-1], lexicon) if clauses else None
        if listener or speaker != UNKNOWN_SPEAKER:
            return listener or speaker
    for sentence in sentences:
        name = _sentence_subject(sentence, lexicon)
        if name and name not in PRONOUNS + COLLECTIVES:
            return name
    return UNKNOWN_SPEAKER


def _vocative(content: str, lexicon: Lexicon) -> str | None:
    """The name a quote opens by calling (“郓哥，…” → 郓哥, “黑旋风李逵，…” → 李逵)."""
    name = names_at_start(content, lexicon)
    if not name or "、" in name:
        return None
    end = content.find(name) + len(name)
    return name if content[end : end + 1] in ("，", "！", ",", "!") else None


def _listener(clause: str, lexicon: Lexicon) -> str | None:
    clause = strip_lead(clause)
    for i in range(1, len(clause) - 1):
        name = lexicon.name_at(clause, i)
        if name and clause[i - 1] in LISTENER_MARKERS:
            if clause[i - 1] in "和同与" and TOGETHER_AFTER.match(clause[i + len(name) :]):
                continue  # 阮小五和阮小七都道: the two speak as one
            return name
    return None


def _tone(tag: str, content: str) -> tuple[str, int]:
    tone, intensity = "平静", 2
    for pattern, verb_tone, verb_intensity in VERB_TONES:
        if re.search(pattern, tag):
            tone, intensity = verb_tone, verb_intensity
            break
    else:
        if "？" in content or "?" in content:
            tone, intensity = "疑惑", 2
        elif "！" in content or "!" in content:
            tone, intensity = "焦急", 3
    bangs = content.count("！") + content.count("!")
    if bangs >= 2 or "！！" in content:
        intensity += 1
    elif bangs == 0 and tone in ("愤怒", "焦急"):
        intensity -= 1
    if "……" in content and tone in ("悲伤", "无奈", "恐惧"):
        intensity += 1
    return tone, max(1, min(5, intensity))


def _delay(text: str) -> int:
    text = text.rstrip("”’）) \t　")
    if text.endswith(("……", "…", "——")):
        return 700
    if text.endswith(("！", "？", "!", "?")):
        return 500
    if text.endswith(("。", ".")):
        return 400
    if text.endswith(("：", ":")):
        return 200
    return 300

"""Who a clause is about: the speaker word at the start of a clause, with clean boundaries.

A clause of narration opens with its subject, if it has one: a name (``宋江``), a descriptor
(``那挑酒的汉子`` → 挑酒的汉子, ``两个公人`` → 公人), a pronoun (``他``) or a group (``二人``,
``宋江、吴用``). Lead words (``只见``, ``当下``) come first and are skipped. A clause that opens with
a verb of address (``分付戴宗道``) has no subject of its own: the name after the verb is a listener.
"""

from __future__ import annotations

import re
from typing import Protocol

_CJK = re.compile(r"[\u3400-\u9fff]")

# Characters that end the subject of a tag clause: verbs of speech and gesture, adverbs, listener
# markers, particles. A name never continues past one of them (a rare name that holds one is cut).
STOP = set(
    "对向问与和跟朝冲同给替把让被将道说曰叫喝骂嚷喊笑叹怒哭惊急喜冷低沉轻柔颤厉苦微暗寻想心"
    "连忙齐也又都便却只才就站转拍看望指盯瞪听见点摇抬回答应走上下起坐伸拱抱躬挥拔提放接端举按"
    "了着过的地在从已仍还正不一这那哪么呢吗吧啊呀哼嘿咳报奏传禀并亦乃遂再自声竟像拜是"
)
# Verbs that may follow a name directly without a stop character (黄达大怒骂道, 凌振谢道).
_VERBS_AFTER_NAME = ("大怒", "大喜", "大惊", "大笑", "大叫", "大骂", "大哭", "大喝", "大呼", "谢道", "谢了")
# Within the first two characters only a speech verb ends a name: 林冲道 is 林冲, 向秀说 is 向秀.
_EARLY_STOP = set("道说曰问笑喝叫骂叹报禀")
# Function words and verbs that no given name holds in its first two characters (因又, 见他, 接着,
# 自己): the words before a verb in a tag whose subject was left out.
_NOT_IN_GIVEN_NAMES = set("的着想思见对与跟朝自抱坐接抬低走不才又便也却只就因刚已毕完要此往及话无底半唱口许")
_NOT_SECOND_IN_NAMES = _NOT_IN_GIVEN_NAMES | {"了"}  # (想了, 坐了; but a monk's name may open with it: 了尘)
_SPEECH_AFTER = ("应道", "答道", "说道", "问道", "便道", "又道", "笑道", "喝道", "叫道")
# After these a word is a subject even when no name list knows it (王观察又捉了… → 王观察).
_AFTER_SUBJECT = set("又便却也都就只才已正仍还再先亦乃遂听见看自把")
# Perception right after a word makes it a subject even without a surname (皇叔方垕听了大怒).
_PERCEIVING = set("听见看")
# Words that open a clause without being its subject; stripped again and again (当下只见 …).
LEAD_WORDS = (
    "数内", "内中", "其中", "当时", "那时", "当日", "当晚", "当夜", "次日", "次早", "至晚", "少刻", "须臾",
    "只听得", "只听的", "只听", "只管", "忽听得", "忽听", "但听得", "但听", "听得", "只见", "却见", "忽见", "但见", "猛见",
    "这时", "此时", "当下", "于是", "随即", "然后", "忽然", "突然", "猛然", "只是", "只闻", "乃是", "却是",
    "且说", "却说", "话说", "再说", "只说", "原来", "正是", "随后", "对阵", "阵前", "阵上", "对面", "当有", "一面",
    "这边", "那边", "两边", "中间", "席间", "当先", "部下", "手下", "帐下", "麾下", "却好", "恰好", "正好", "已自",
    "吓得", "惊得", "唬得", "諕得", "慌得", "吓的", "惊的", "唬的", "慌的", "这里", "因此", "一时", "互相", "彼此",
    "却", "便", "又", "也", "只", "忽", "但", "且", "遂", "乃", "就", "再", "亦", "还", "都", "早", "先", "因", "偏",
)  # fmt: skip
_STORY_TURNS = ("且说", "却说", "话说", "再说", "只说")  # the narrator's "now": what follows is whom he turns to
# Any run of lead words that leaves something after it.
# (and an ordinal that counts off who comes: 第二拨豹子头林冲已到阵前)
_LEADS = re.compile("(?:(?:" + "|".join(sorted(LEAD_WORDS, key=len, reverse=True)) + "|第[一二三四五六七八九十]+(?:拨|队|阵))(?=.))*")
# One character before a name that makes the name a listener (对林青道, 问沈墨白道).
LISTENER_MARKERS = set("对向问与和跟朝冲同给替把让着请叫唤闻回")
# … but not where what follows says the two act as one (罗真人同公孙胜都…, 宋江和吴用两个…).
TOGETHER_AFTER = re.compile("(?:也|又|便)?(?:都|俱|一齐|齐声|齐|两个|二人|同声)")
# Verbs of address: a name right after them is spoken to, not speaking (目视雷横说道).
ADDRESS_VERBS = (
    "分付", "吩咐", "嘱咐", "嘱付", "申复", "禀复", "回复", "埋怨", "大骂", "痛骂", "带领", "率领", "引领", "引着", "目视", "看着", "望着", "指着", "瞅着", "叫过", "唤过", "唤", "叫", "请",
    "劝", "谢", "拜", "告", "禀", "骂", "喝骂", "喝", "问", "谓", "对", "向", "与", "和", "跟", "朝", "同",
    "把", "教", "令", "着", "差", "使", "命", "扶起", "拖过", "揪住", "推开", "邀请", "留住", "送与", "见了", "看了",
    "听了",
)  # fmt: skip
_SURNAME_LIKE = set("谢向和同令朝教使差命")
PRONOUNS = ("他们", "她们", "我们", "你们", "咱们", "他", "她", "我", "你", "它")
# A group speaking together; resolved to the names of the last group in the paragraph, if any.
COLLECTIVES = (
    "他两个", "他二人", "他三个", "他三人", "弟兄两个", "夫妻两个", "二人", "两人", "两个", "三人", "三个", "二位", "三位",
)  # fmt: skip
# Demonstratives and quantities that open a descriptor (那汉子, 两个公人, 那七个客人, 那伙人).
_OPENER = re.compile(r"(?:有|那|这)?(?:[一二三四五六七八九十两几数百千]+[余来多]?(?:个|名|位|员|条|对|起|伙|群|队|班|彪|簇|枝|支|筹|家|行)?|个|位|伙|些)?")
_NUMERAL = "一二三四五六七八九十两几数百千"
_OPENER_FIRST = set("有那这个位伙些" + _NUMERAL)
# After a number, what makes it a count or a phrase (一个, 三人, 一面, 一齐, 两下), not a name (三藏, 八戒).
_COUNTING = set(_NUMERAL + "个名位员条对起伙群队班彪簇枝支筹家行人面齐同时直发路边下般样些声片阵连旁心口头手身日年月夜更次回遍把匹只件句言语话字")
# Nouns for people: a descriptor ends with one of them (那个壮士穿一身红 → 壮士).
PERSON_HEADS = (
    "汉子", "大汉", "壮士", "妇人", "女子", "婆子", "婆娘", "婆婆", "老儿", "老子", "老汉", "老人", "后生", "和尚",
    "道人", "先生", "客人", "客官", "客商", "庄客", "庄家", "公人", "军汉", "军士", "军校", "小校", "喽啰", "酒保",
    "店家", "酒家", "小二", "主人", "梢公", "艄公", "渔人", "樵夫", "官人", "员外", "太公", "丫嬛", "虞候", "差拨",
    "牢子", "节级", "都头", "头领", "好汉", "将军", "伴当", "门子", "道士", "长老", "行者", "近侍", "内侍", "童子",
    "秀士", "娘子", "使者", "探子", "军人", "头目", "猎户", "观察", "提辖", "教头", "知县", "知府", "太守", "太尉",
    "公差", "掌柜", "伙计", "少年", "少女", "姑娘", "小姐", "夫人", "公子", "书生", "捕头", "捕快", "衙役", "大侠",
    "丫头", "孩子", "胖子", "瘦子", "矮子", "小子", "邻舍", "街坊", "探马", "哨马", "细作", "家丁", "奶子",
    "主人家", "都管", "女孩儿", "孔目", "妻子", "官员", "牙将", "百姓", "大户", "上将", "大王", "国舅", "侍郎", "樵叟",
    "老叟", "村姑", "火家", "两口儿", "夫妻", "秀才", "小军", "丞相", "原告", "被告", "群臣", "众官", "百官", "使臣", "牌军", "店主", "官家", "庄主", "寨主", "家人", "亲随", "从人", "军健", "水手", "舵手", "大臣", "大将", "副将", "贼将", "降将", "番将", "战将", "首将", "偏将", "猛将", "众将", "承局", "道众", "报马", "渔翁", "都督", "先锋", "步军", "马军",
    "母亲", "老母", "老娘", "禁军", "保正", "前军", "后军", "中军", "都监", "道童", "头陀", "贼秃", "秃驴", "秃厮",
    "虔婆", "老虔婆", "淫妇", "贱人", "女人", "老头儿", "老头", "院公", "侍者", "管营", "干人", "吏员", "官吏",
    # Every title the story binds to a name (story.TITLES) and every head of its kinds is a person noun.
    "大官人", "团练", "知寨", "枢密", "统制", "押司", "院长", "真人", "郡主", "参谋", "太师", "妇女", "老婆子", "阇黎",
    "长汉", "汉", "厮", "人",
    "者", "官", "吏", "卒", "兵", "僧", "童", "女", "婆", "保", "客", "士", "使", "妖", "魔",
)  # fmt: skip
# A noun for a person only when it stands alone after a demonstrative (那怪道; not 嗔怪, 怪事).
_ALONE_HEADS = set("怪")
# Verbs of going that open a clause whose subject was left out (又去街坊问道).
_GOING = set("去往投")
# Reasons counted off (一者…；二者…): not people.
_REASONS = re.compile("^[一二三四]者")
# Words that start tag clauses often enough to look like names, but never are.
NOT_NAMES = {
    "起身", "出来", "原来", "后面", "前面", "外面", "里面", "口里", "心里", "便是", "正是", "如今", "回头", "说罢",
    "听罢", "见了", "看了", "点头", "寻思", "回来", "回话", "转念", "回身", "用手", "认得", "看时", "拜罢", "拜舞",
    "天明", "天晚", "这里", "那里", "船上", "背后", "次后", "约莫", "少顷", "自古", "连忙", "为头", "一头", "一日",
    "两字", "数中", "人应", "人指", "张得", "不多时", "没多时", "无移时", "临出门", "见没人", "搭上箭", "看看天色",
    "后来", "许多", "主意", "好容易", "外头", "里头", "上头", "门上", "旁边", "傍边", "底下", "自己", "半天", "半晌",
    "无奈", "接着", "上前", "应声",
}  # fmt: skip
_TIME_PHRASE = re.compile(r"(?:时|间|罢|时分|日)$|^(?:酒至|正在|第)")
_LOCATIVE = set("里上中前后边外内下面处")
_BODY_OR_PLACE = set("身背面旁手眼心脸口家")
# Two-character places before a subject (外面有人叫道); longer ones are recognised by their last
# character, shorter ones could be a verb and its direction (脱下王班直身上锦袄).
_PLACES = {"外面", "里面", "后面", "前面", "背后", "门外", "门前", "门里", "门首", "门口", "帐前", "帐下", "阶下", "堂上", "厅上", "楼上", "楼下",
           "城上", "城中", "两边", "身边", "身后", "身旁", "旁边", "阵上", "阵前", "树上", "岸上", "船上", "江边", "路边", "窗外", "屋里", "殿上",
           "城里", "城内", "城外", "寨里", "寨中", "庄上", "庄里", "山上", "山下", "店里", "府里", "府中", "县里",
           "正南上", "正北上", "正东上", "正西上", "东南上", "西南上", "东北上", "西北上"}  # fmt: skip
# Nouns of places that take a locative (关前, 寨里, 船头上): with it they set the scene before a subject.
_PLACE_NOUNS = set("关寨营城门阵殿庄山岭桥江河船店庙寺堂厅楼帐林坡岸树路窗屋府县街巷")
# A bare 人 as the subject of a speech verb: whoever was asked, or people there (人指道, 只见人都道, 人应道).
_SOMEONE = re.compile("人(?:都|皆|也|便|就|却|多)?(?:指|应|答|回|说|叫|喝)?(?:道|说)")
_PICKED = re.compile(rf"^[^，,]{{0,6}}?(?:中|内)(?=[{_NUMERAL}]+(?:个|名|位))")
# What is left of a clause after its subject when the subject stands right before the verb, a
# doubled sound allowed before it (卞祥呵呵大笑道).
_VERB_ONLY = re.compile(r"^(?:([\u4e00-\u9fff])\1)?[\u4e00-\u9fff]{0,3}?(?:道|说|问|曰|奏|禀|叫|喝|报)[：:，,]?$|^[\u4e00-\u9fff]{1,3}?来(?:说道|报道|叫道)[：:，,]?$")
# What follows a name in a speech tag: an adverb, or a listener, then the verb (邬梨对全灵说道).
_AFTER_NAME = re.compile(
    r"^(?:[又便却也都就只才已正仍还再亦乃遂][\u4e00-\u9fff]{0,2}?|[对向与问和][\u4e00-\u9fff]{1,5}?)"
    r"(?:道|说|问|曰|奏|禀|叫|喝|报)[：:，,]?$"
)
_PASSIVE = set("被吃")
_STIRRED = re.compile("惊动(?:了)?|惊起(?:了)?|惊醒(?:了)?")  # (惊动了宋江: whom it stirs is the one who acts next)
_ASKING = "问对向与跟朝同给替让叫唤请"  # (问烧香的道: the one who burns incense is asked, not asking)
_MOVING = set("奔跑走赶回来进入")  # a descriptor that comes or goes is the one acting (逃难军士奔回来报)
_SEEING = set("见看说叫问骂打听")  # (a longer place before a verb of appearing: 官道旁边酒店里钻出施恩来)
_THERE = re.compile(f"^[^，,。]{{1,5}}?[{''.join(sorted(_LOCATIVE))}](?:却|又|也|早|只)?有")  # 随军内却有公孙胜
_COURT_VERB = re.compile("^(?:出班|上前|向前)?(?:启奏|奏|禀|告)(?:道|曰|说)[：:，,]?$")  # (after a title: 左丞相娄敏中出班启奏道)
_TAKES_OBJECT = set("怕恐等寻杀打拿捉赶骂")  # verbs before a descriptor that make it their object
_VERB_CHARS = set("认得知晓识拿捉杀打请拜使差令教随跟引领带遇逢迎送邀诉咐")  # verbs that take a name as object
_NUMBERED_PAIR = re.compile(r"([\u4e00-\u9fff][一二三四五六七八九十])、([\u4e00-\u9fff][一二三四五六七八九十])(?![\u4e00-\u9fff]?[、和])")
_UNKNOWN_GROUP = re.compile(r"([\u4e00-\u9fff]{2,3}?)、([\u4e00-\u9fff]{2,3}?)(?=[\u4e00-\u9fff]{0,3}?(?:道|说|问|曰|奏|禀|叫|喝|报)[：:，,]?$)")
_KIN = set("娘爹妈")  # one character that names a speaker on its own (娘道：“…”)
# One of a few people, with no noun (两个跪在厅前，这个告道：… 那个告：…).
_DEMONSTRATIVE_ALONE = re.compile("^([这那]个)(?:[便又也却])?(?:说|问|答|应|告|禀|叫|喝|骂|哭|笑)?道?[：:，,]?$")
# Kin who speak together (父子两个告道, 母子二人哭道); 夫妻两个 and 弟兄两个 are groups of names.
_KIN_PAIR = re.compile("(?:父子|母子|父女|母女|叔侄|姑嫂|娘儿|爷儿|公婆|兄妹|姊妹|姐妹)(?:两个|二人|两人|三个|三人|俩)")
# The last character of a word for a person (小猴子, 小厮儿): after 只见 it is someone who comes in.
_PERSON_END = set("子儿汉人婆娘公郎童")
# Kin after a name: the kin is the person (雷横娘, 雷横的母亲; his wife: 周瑞家的, 旺儿媳妇), unless
# the name goes on.
_KIN_AFTER = re.compile("的?(?:母亲|老母|老娘|浑家|老婆|妻子|女儿|孩儿|儿子|父亲|老父|娘|爹|家的|媳妇儿?)(?![\u4e00-\u9fff]?[子儿])")
# Verbs of appearing: the one who appears is the subject (又转过玉麒麟卢俊义来).
_APPEARING = ("转过", "转出", "转上", "闪出", "走出", "跳出", "撞出", "赶出", "奔出", "抢出", "拥出", "走过", "赶上", "钻出", "走入", "抢入", "闯入")
_HEAD_CHARS = set("".join(PERSON_HEADS))
_HEAD_SET = set(PERSON_HEADS) | _ALONE_HEADS
_HEAD_SIZES = sorted({len(h) for h in PERSON_HEADS}, reverse=True)


# Someone's man (王庆手下一个近侍): the man, not his master.
_UNDER = re.compile("(?:手下|部下|帐下|麾下|门下)的?(?=一个|一员|有个)")


def _noun(word: str) -> str:
    """The longest person noun ``word`` ends with (it ends with one)."""
    return next(word[-n:] for n in _HEAD_SIZES if word[-n:] in _HEAD_SET)


_LONG_HEADS = tuple(h for h in PERSON_HEADS if len(h) > 1)
# A word no name list knows is taken for a name only when it starts with a surname (浦文英说道),
# so that manner words before the verb are not (哽咽道, 合十道, 得意道).
SURNAMES = set(
    "赵钱孙李周吴郑王冯陈褚卫蒋沈韩杨朱秦尤许何吕施张孔曹严华金魏陶姜戚谢邹喻柏窦章苏潘葛奚范彭"
    "郎鲁韦昌马苗凤花方俞任袁柳酆鲍史唐费廉岑薛雷贺倪汤滕殷罗毕郝邬卞齐伍顾孟黄穆萧尹姚邵湛汪祁毛"
    "狄米贝臧戴宋茅庞熊纪舒屈项祝董梁杜阮蓝闵席季麻贾娄颜郭梅林刁钟徐邱骆高夏蔡田樊胡凌霍虞万柯"
    "管卢莫裘缪解宣邓郁单杭洪包左石崔吉钮龚程嵇邢裴陆荣翁荀甄芮储靳段富焦巴侯全班仲伊宁仇栾"
    "甘厉武符刘詹龙叶黎蓟宿白蒲邰鄂索赖卓蔺屠蒙乔胥翟谭姬申冉郦雍濮牛寿扈燕冀浦柴瞿阎慕茹艾"
    "容向易廖庾衡耿寇阙欧聂晁辛阚饶曾沙鞠关蒯荆游竺桓丘闻晏安余童"
)
COMPOUND_SURNAMES = (
    "欧阳", "公孙", "呼延", "慕容", "司马", "上官", "诸葛", "皇甫", "尉迟", "东方", "令狐", "宇文", "长孙", "独孤",
    "夏侯", "耶律", "兀颜", "完颜", "西门", "南宫", "太史",
)  # fmt: skip


def is_surname(word: str) -> bool:
    """Whether ``word`` opens with a surname (one character, or two: 欧阳, 公孙)."""
    return bool(word) and (word[0] in SURNAMES or word.startswith(COMPOUND_SURNAMES))


# Last characters of titles that stand before a name (军师, 太尉, 都头, 皇叔, 将军).
_TITLE_ENDS = set("师尉帅侯王公相爷叔伯兄哥头领官将军使监辖察管锋督")


class Names(Protocol):
    def name_at(self, text: str, pos: int = 0) -> str | None: ...


def strip_lead(clause: str) -> str:
    """The clause without the lead words that open it (当下只见宋江 → 宋江)."""
    clause = clause.strip(" \t　”’")
    end = _LEADS.match(clause).end()
    if end and clause[end - 1 : end + 1] in _LONG_HEADS:
        end -= 1  # 都管道, 都头道: a person, not the adverb 都
    return clause[end:]


def candidate(clause: str) -> str | None:
    """The words that start a clause up to the first character that cannot be part of a name.

    Used to collect names from speech tags. Openers are dropped (那张三 → 张三, 两个公人 → 公人);
    a clause that opens with a verb of address or a pronoun gives nothing.
    """
    clause = strip_lead(clause)
    if clause.startswith(PRONOUNS + COLLECTIVES) or _addressed(clause):
        return None
    opener = _opener(clause)
    rest = clause[len(opener) :]
    head = _head_prefix(rest) if opener else None
    if head:
        return head if len(head) >= 2 and "的" not in head else None  # 那妇人 → 妇人, not 那人便 → 人便
    word = _span(rest, 5)
    if rest[len(word) : len(word) + 1] == "的" or _adverbial(rest, len(word)):
        return None  # 那挑酒的汉子: a descriptor, read when labeling; 郑重地道: an adverb
    return word if _plausible(word) else None


def _addressed(clause: str) -> bool:
    """The clause opens with a verb of address, so a name in it is spoken to. Some of these are
    also surnames: a name right before the speech verb that starts with one speaks (谢宁道)."""
    if not clause.startswith(ADDRESS_VERBS):
        return False
    verb = next(v for v in ADDRESS_VERBS if clause.startswith(v))
    if verb not in _SURNAME_LIKE:
        return True
    word = _span(clause)
    return len(word) < 2 or not _VERB_ONLY.match(clause[len(word) :])


def _opener(clause: str, pos: int = 0) -> str:
    """The demonstrative or number that opens a descriptor at ``pos``. A number without a measure
    word counts only before a person noun (三五百人, but 三阮 is a name)."""
    opener = _OPENER.match(clause, pos).group(0)
    after = clause[pos + len(opener) :]
    if opener and opener[-1] in _NUMERAL + "余来多" and not _head_prefix(after) and after[:1] != "将":
        opener = opener[:1] if opener[0] in "有那这" else ""  # (but 关前一将: one general)
    return opener


def _span(text: str, limit: int = 4, title: bool = False) -> str:
    """The start of ``text`` up to a stop character (``title``: 将 may end a title, 先锋将韩滔).

    Within the first two characters only a speech verb stops it (向秀说 is 向秀), or, in a word that
    does not open with a surname (宝玉, 行者), a word no given name holds (因又问道, 想了一想, 接着:
    no name at all)."""
    i = 0
    early = (_EARLY_STOP,) * 2 if is_surname(text) else (_EARLY_STOP | _NOT_IN_GIVEN_NAMES, _EARLY_STOP | _NOT_SECOND_IN_NAMES)
    while i < len(text) and i < limit and _CJK.match(text[i]):
        stop = (text[i] in (early[i] if i < 2 else STOP) and not _inner_verb(text, i)) or _strong_verb(text, i)
        if stop and not (title and (text[i] == "将" or text.startswith(_LONG_HEADS, i))):
            break  # (兵马都监闻达: 都 begins a title there)
        i += 1
    return text[:i]


def _strong_verb(text: str, i: int) -> bool:
    """A verb such as 大怒 or 谢道 starts at ``i``, after a name (黄达大怒骂道, 凌振谢道)."""
    return i >= 2 and text.startswith(_VERBS_AFTER_NAME, i)


def _inner_verb(text: str, i: int) -> bool:
    """道 or 说 second in a name, with the name going on after it (乔道清道 is 乔道清)."""
    if i == 1 and text[i] == "道" and (text[i + 1 : i + 2] == "道" or text.startswith(_SPEECH_AFTER, i + 1)):
        return True  # 胡道应道: the name ends in 道, the verb follows
    return i == 1 and text[i] in "道说" and i + 2 < len(text) and _CJK.match(text[i + 1]) is not None and text[i + 1] not in STOP


def _plausible(word: str) -> bool:
    return (
        len(word) >= 2
        and (word[0] not in _NUMERAL or word[1] in SURNAMES or word[1] not in _COUNTING)  # (三阮: the three Ruan brothers; 三藏, 八戒: names)
        and not (len(word) > 2 and word[0] == word[1])  # 看看天色, 慢慢地: adverbs (but 娘娘, 哥哥)
        and not (len(word) > 2 and word[-1] in "里中上下边处")  # 班部丛中: a place (but 小衙内)
        and word not in NOT_NAMES
        and not _TIME_PHRASE.search(word)
        and not (word[-1] in "来去" and word[-2] in "出入回进过上下起")  # 入去, 回来: a verb and its direction
    )


def subject(clause: str, names: Names, *, verb_clause: bool = False, first: bool = False) -> str | None:
    """The speaker word a clause opens with, or a pronoun or group word, or None.

    ``verb_clause``: the clause ends in the speech verb, so an unknown word right before a short
    verb phrase is a name (殿头官喝道). ``first``: the clause opens its sentence, so an unknown word
    followed by an adverb is a name (王观察又捉了… → 王观察). A clause that says who someone is
    gives the name (那天使是…引进使冯喜 → 冯喜, 乃是曾家第四子曾魁 → 曾魁), and two names joined by
    和 outside the verb's clause act together (那陆虞候和富安见老都管来问病 → 陆虞候、富安); a pronoun
    stays alone (他和公孙胜…: 他 is resolved where it is read).
    """
    named = _identified(clause.strip(" \t　”’。！？"), names)
    if named:
        return named
    if _REASONS.match(clause):
        return None  # 一者是天罡之数；二者见宋江礼貌甚恭: his reasons, not people
    found = _subject(clause, names, verb_clause=verb_clause, first=first)
    if found and "、" not in found and found not in PRONOUNS and found in clause:
        after = clause[clause.find(found) + len(found) :]
        partner = after[:1] in "和同与" and names.name_at(after, 1)
        if partner and is_surname(partner) and not common_noun(partner) and after[1 + len(partner) : 2 + len(partner)] != "的":
            together = TOGETHER_AFTER.match(after[1 + len(partner) :])  # 罗真人同公孙胜都打个稽首，道
            if together or (not verb_clause and after[:1] == "和"):
                return f"{found}、{partner}"
    return found


# Who someone is: 那天使是方腊面前引进使冯喜, 当案却是黄孔目, 乃是曾家第四子曾魁 (not 不是, 是个).
_IS = re.compile("(?<!不)(?:乃|正|便|却|原来|原来正)?是(?![个一谁甚那这])")


def _identified(clause: str, names: Names) -> str | None:
    """The name a clause gives someone after 是, where the words before it name nobody."""
    match = _IS.search(clause)
    who = strip_lead(clause[: match.start()]).lstrip("那这此个") if match else ""
    if not match or (not who and match.group() == "是") or match.start() > 6 or any(ch in STOP for ch in who) or who.endswith(tuple("得知识晓")) or any(is_surname(m.group()) for m in names.names_in(who)):
        return None  # (认得是鲁提辖, 见是…: the one seen, not who the subject is)
    rest = clause[match.end() :]
    if not 2 <= len(rest) <= 12 or not all(_CJK.match(ch) for ch in rest):
        return None
    known = [m.group() for m in names.names_in(rest) if m.end() == len(rest)]
    text = getattr(names, "text", "") or ""
    shaped = [rest[-k:] for k in (3, 2) if name_shaped(rest[-k:]) and text.count(rest[-k:]) >= 2]  # (a name no tag holds)
    for name in known[-1:] + shaped:
        if is_surname(name) and not common_noun(name) and not any(ch in STOP for ch in rest[: -len(name)]):
            return name
    return None


def _subject(clause: str, names: Names, *, verb_clause: bool = False, first: bool = False) -> str | None:
    whole = clause.strip(" \t　”’")
    clause = strip_lead(clause)
    lead = whole[: len(whole) - len(clause)]
    if verb_clause and clause[:1] in _GOING and not names.name_at(clause, 0):
        return None  # 时迁看了一回，又去街坊问道: where he goes (街坊), not who asks
    introduced = lead.endswith(("有", "见"))  # 当有本州官员: someone is there
    first = first or lead.endswith(("正是", "乃是", "却是", "便是"))  # 正是没羽箭张清: who it is
    if lead.endswith(_STORY_TURNS) and 2 <= len(clause) <= 6 and all(_CJK.match(ch) for ch in clause) and clause not in NOT_NAMES:
        ending = [m.group() for m in names.names_in(clause) if m.end() == len(clause) and not common_noun(m.group())]
        return _names_at(clause, names) or (ending[-1] if ending else clause)  # 且说道君天子，… (宛州守将刘敏 → 刘敏)
    if clause[:1] in _PASSIVE and (names.name_at(clause, 1) or clause[1:2] in "那这"):
        if not verb_clause and clause.endswith(("不过", "不住")):
            return None  # 宋江…，吃那婆子缠不过，便道: the one who could not withstand it goes on
        clause = clause[1:]  # 吃那婆子拦住道: the one who does it speaks
    stirred = _STIRRED.match(clause)
    if stirred and names.name_at(clause, stirred.end()):
        return _names_at(clause[stirred.end() :], names)  # 众人都大笑，却惊动了宋江，走出来问道: he acts next
    if clause[:1] == "众" and clause[1:2] in "皆都齐各尽一":
        return "众人"  # 众皆起身道
    if verb_clause and _SOMEONE.match(clause):
        return "人"  # 路傍借问州衙在那里，人指道: someone there, no one named
    seeing = next((w for w in ("又见", "早见", "见") if verb_clause and clause.startswith(w)), "")
    clause = clause[len(seeing) :]  # 又见殿帅孙安上殿启奏
    place = next((i + 1 for i in range(1, 10) if clause[i : i + 1] in _LOCATIVE and clause[i + 1 :].startswith(_APPEARING)
                  and not any(ch in (STOP if i < 4 else _SEEING) for ch in clause[:i])), 0)
    clause = clause[place:]  # 帐前走过燕青禀道, 班部中转出兀颜统军
    if clause.startswith(_APPEARING):
        appearing = _names_at(clause[2:], names) or _titled_name(clause[2:], names, strict=False)
        appearing = appearing or _descriptor(clause[2:], names, verb_clause=False, introduced=True)
        if appearing:
            return appearing  # 转过玉麒麟卢俊义, 转过一人
    if not clause or not _CJK.match(clause[0]):
        return None
    there = _THERE.match(clause)
    if there and not any(names.name_at(clause, i) for i in range(there.end())):
        named = _names_at(clause[there.end() :], names)
        if named and is_surname(named):
            return named  # 随军内却有公孙胜: the one who is there acts next
    alone = _DEMONSTRATIVE_ALONE.match(clause) if verb_clause else None
    if alone:
        return alone.group(1)  # 只见这个应道, 那个告: one of the people just spoken of, not named
    kin = _KIN_PAIR.match(clause)
    if kin and clause[kin.end() : kin.end() + 1] not in _VERB_CHARS | LISTENER_MARKERS:
        return kin.group()  # 父子两个告道: the father and daughter of the scene
    if clause[:1] in "那这" and clause[1:].startswith(COLLECTIVES):
        clause = clause[1:]  # 那两个道: the two just spoken of
    for word in COLLECTIVES if clause.startswith(COLLECTIVES) else ():
        after = clause[len(word) :]
        head = _head_prefix(after)
        described = head and (after[:1] not in _VERB_CHARS | LISTENER_MARKERS or len(head) >= 2 and head in PERSON_HEADS)
        if clause.startswith(word) and not (names.name_at(clause, len(word)) or described or _PICKED.match(clause)):
            return word  # 二人道 (but 两个公人道, 两个教头道 are descriptors; 两个邀老都管…: a verb and its object)
    pronoun = next((p for p in PRONOUNS if clause.startswith(p)), None) if clause.startswith(PRONOUNS) else None
    if pronoun and clause[len(pronoun) : len(pronoun) + 1] not in _BODY_OR_PLACE:
        return pronoun  # (but 他身后那大汉道: behind him, the big man speaks)
    known = clause[:1] in "那这" and names.name_at(clause, 1)
    if known and not common_noun(known):
        clause = clause[1:]  # 那阎婆因来谢宋江: the one the text has named, not whom he thanks
    name = _names_at(clause, names)
    if name and "、" not in name and clause[len(name) : len(name) + 1] in _LOCATIVE and (
        _opener(clause, len(name) + 1) or _head_prefix(clause[len(name) + 1 :])
    ):
        name = None  # 胡梯上一个年小的后生: a place (which the names may hold), then the one there
    if name and "、" not in name:
        kin = _KIN_AFTER.match(clause, len(name))
        if kin and not (names.name_at(clause, len(name)) or "").startswith(kin.group()):
            return clause[: kin.end()]  # 雷横娘道, 雷横的母亲…骂道: his mother speaks, not 雷横
        owned = clause[len(name) : len(name) + 1] == "的" and _head_prefix(clause[len(name) + 1 :])
        if owned:
            return _shortened(owned, names)  # 童贯的步军…问道: the soldiers, not 童贯
        under = _UNDER.match(clause, len(name))
        follower = under and _descriptor(clause[under.end() :], names, verb_clause=verb_clause, introduced=True)
        if follower and not names.name_at(follower, 0):
            return _noun(follower) if follower.endswith(PERSON_HEADS) else follower  # 王庆手下一个有智量近侍说道 → 近侍
    longer = name and (common_noun(name) or not is_surname(name)) and _head_prefix(clause)
    noun = longer and _noun(longer)
    if longer and len(longer) > len(name) and longer.startswith(name) and len(longer) - len(noun) < len(name):
        return longer  # 众军汉道 (the list holds 众军; the noun 军汉 starts inside it)
    after_title = name in _HEAD_SET and verb_clause and _named_before_verb(clause[len(name) :])
    if after_title:
        return trimmed(after_title, names)  # 管营张世开说道: the list knows the title 管营 as a word
    if name:
        return name
    head = _head_prefix(clause)
    noun = head and _noun(head)
    if head and len(head) <= 4 and len(noun) >= 2 and any(
        names.name_at(head, i) == head[i:] and len(head) - i > len(noun) and not is_surname(head[i:])
        for i in range(1, len(head) - 1)
    ):
        return head  # 智真长老到法座上: the list knows him as 真长老 (but 怪高太尉自夸: 怪 is a verb)
    group = _UNKNOWN_GROUP.match(clause) if verb_clause else None
    if group and all(name_shaped(w) for w in group.groups()) and _VERB_ONLY.match(clause[group.end() :]):
        return "、".join(group.groups())  # 王禀、赵谭骂道
    pair = _NUMBERED_PAIR.match(clause) if first else None
    if pair and all(name_shaped(w) for w in pair.groups()):
        return "、".join(pair.groups())  # 刘二、刘三管待解珍、解宝 (brothers named by their rank)
    nominal = re.match(f"有?([\u4e00-\u9fff]{{2,3}}的)(?=[{''.join(sorted(_EARLY_STOP))}]|[便又也却][\u4e00-\u9fff]?[道说问叫])", clause)
    if nominal and _adverb(nominal.group(1)[:-1]):
        nominal = None  # 悄悄的说道, 不禁的说道: how it is said, not who says it
    if verb_clause and nominal and clause[0] not in "那这" + _ASKING and not clause.startswith(PRONOUNS) and not names.name_at(clause, 0):
        return nominal.group(1)  # 把门的问道, 卖酒的便道: the one who does it (把 is no listener here); 有认得的喝道
    if (clause[0] in LISTENER_MARKERS and names.name_at(clause, 1)) or _addressed(clause):
        # 与燕青道, 分付戴宗道: the subject was left out, the name is the listener; but a verb
        # may open a relative clause before the subject (送饭的那个人来请道).
        return _descriptor(clause, names, verb_clause=False, relative_only=True)
    # An unknown name after 那 (那耶律得重奏道): the name without it.
    bare = clause[1:] if clause[:1] == "那" and len(clause) > 2 and name_shaped(clause[1:]) else clause
    word = _unknown_span(bare)
    if verb_clause:
        # A name may hold a stop character (乔道清又奏道); what follows it shows where it ends.
        word = next((bare[:k] for k in (4, 3, 2) if _AFTER_NAME.match(bare[k:]) and name_shaped(bare[:k])), word)
    rest = bare[len(word) :]
    confirmed = (verb_clause and (_VERB_ONLY.match(rest) or _AFTER_NAME.match(rest))) or (first and rest[:1] in _AFTER_SUBJECT)
    described = _descriptor(clause, names, verb_clause=verb_clause, introduced=introduced, first=first)
    if described:
        return described
    titled = _titled_name(clause, names)
    if not titled and (first or verb_clause):
        # A place or title before a name in subject position (大辽郎主听了大怒 → 郎主).
        loose = _titled_name(clause, names, strict=False)
        after = clause[clause.find(loose) + len(loose) :] if loose else ""
        gap = clause[: clause.find(loose)] if loose else ""
        nickname = first and loose in names.names and 3 <= len(gap) <= 4 and not any(ch in _VERB_CHARS for ch in gap)  # 小养由基庞万春败回
        nickname = nickname and not _head_prefix(gap)  # (县官念武松是个…: a person and a verb, then whom he thinks of)
        # A two-character nickname only where the novel often puts it before the name (浪子燕青,
        # 神医安道全使人回话道: in the verb's clause too, where a verb may stand before a name).
        often = 2 <= len(gap) <= 4 and loose in names.names and getattr(names, "text", "").count(gap + loose) >= 3
        titled = loose if loose and ((first and after[:1] in _AFTER_SUBJECT) or nickname or often) else None
    if titled:
        return titled
    perceiving = first and rest[:1] in _PERCEIVING
    if confirmed and len(word) == 2 and _after_names(word, names):
        confirmed = False  # 那汉…便焦躁道: 焦 is a surname, but the text writes 李逵焦躁 (a mood, not a name)
    if confirmed and _plausible(word) and (name_shaped(word) or perceiving) and not _holds_name(word, names):
        return trimmed(word, names)  # a name the novel rarely tags: 贺统军道 → 贺统军, 皇叔方垕听了大怒 → 皇叔方垕
    if first and len(word) >= 3 and name_shaped(word) and not _holds_name(word, names):
        short = trimmed(word, names)
        if 2 <= len(short) < len(word) and _speaks_often(short, names):
            return short  # 陈翥兜住马: a name the text often puts before a speech verb
    turned = lead.endswith(_STORY_TURNS) and not names.name_at(clause, 0) and _head_prefix(clause)
    if turned and len(turned) >= 2 and "的" not in turned:
        return _shortened(turned, names)  # 且说县官念武松是个义气烈汉: the one the narrator turns to
    if confirmed and introduced and len(word) >= 2 and word[-1] in _PERSON_END and _plausible(word) and word[0] not in "那这":
        return word  # 只见小猴子叫道: someone the lists do not know comes in and speaks
    return None


def _adverb(word: str) -> bool:
    """Words of manner before 的 (悄悄, 笑嘻嘻, 不禁, 不住): a doubled character or a negation."""
    return word[:1] == "不" or any(a == b for a, b in zip(word, word[1:]))


def _after_names(word: str, names: Names) -> bool:
    """Whether the novel writes ``word`` right after a known name at least twice (李逵焦躁): a verb
    or a mood, not a name."""
    text = getattr(names, "text", "") or ""
    known = getattr(names, "names", ())
    seen = 0
    for match in re.finditer(re.escape(word), text):
        at = match.start()
        seen += any(text[at - k : at] in known and is_surname(text[at - k : at]) for k in (2, 3))
        if seen >= 2:
            return True
    return False


def _speaks_often(word: str, names: Names) -> bool:
    """Whether the novel puts ``word`` right before a speech or shouting verb at least three times."""
    text = getattr(names, "text", "") or ""
    return len(re.findall(re.escape(word) + "(?:道|说|叫|喝|大叫|大喝|大骂|厉声)", text)) >= 3


def _surnamed(word: str) -> bool:
    return len(word) >= 2 and (word[0] in SURNAMES or word.startswith(COMPOUND_SURNAMES)) and not any(ch in STOP for ch in word)


def name_shaped(word: str) -> bool:
    return bool(word) and word[-1] not in _LOCATIVE and (word[0] in SURNAMES or word.startswith(COMPOUND_SURNAMES))


def _unknown_span(clause: str) -> str:
    """Like :func:`_span`, but every stop character ends it: a word no name list knows must not
    swallow a verb (跳起身来喝道, 冷地里思量道). Adverbs give nothing: a stop character first
    (低声道), or a doubled character (恭恭敬敬地道, 慢悠悠地道)."""
    if not clause or clause[0] in STOP or not _CJK.match(clause[0]):
        return ""
    i = 1
    while i < len(clause) and i < 4 and _CJK.match(clause[i]) and clause[i] not in STOP and not _strong_verb(clause, i):
        if i >= 2 and clause[i : i + 1] == clause[i + 1 : i + 2]:
            break  # 卞祥呵呵大笑道: a doubled sound after the name
        i += 1
    word = clause[:i]
    return "" if any(a == b for a, b in zip(word, word[1:])) or _adverbial(clause, i) else word


# 地 after a word makes it an adverb when a verb follows (郑重地道, 轻声地说), not when it is the
# ground or a place (地上, 地方, 地面).
_GROUND = set("方面上下里界头区步位点狱府域势形理图名主土皮基窖板铺洞穴")


def _adverbial(text: str, end: int) -> bool:
    """The word of ``text`` that ends at ``end`` is an adverb: 地 and a verb follow it."""
    after = text[end + 1 : end + 2]
    return text[end : end + 1] == "地" and bool(after) and _CJK.match(after) is not None and after not in _GROUND


def names_at_start(text: str, names: Names) -> str | None:
    """The known name ``text`` opens with, after a nickname or title if any (黑旋风李逵 → 李逵)."""
    return _names_at(text, names)


def _names_at(clause: str, names: Names) -> str | None:
    """A known name at the start. A nickname or title before a name gives the name (黑旋风李逵 →
    李逵), a role after it stays (林冲娘子); names joined by 、 give the group (宋江、吴用)."""
    name = names.name_at(clause, 0)
    if not name:
        return None
    for i in range(1, len(name)):
        inner = names.name_at(clause, i)
        if inner and i + len(inner) > len(name) and is_surname(name):
            name = clause[: i + len(inner)]  # 阎婆惜: the list knows 阎婆 and 婆惜
            break
    end = len(name)
    following = names.name_at(clause, end)
    if following and following.endswith(PERSON_HEADS):
        name, end = name + following, end + len(following)
    elif following and not (is_surname(name) and not common_noun(name) and is_surname(following)):
        name, end = following, end + len(following)  # 黑旋风李逵 (but 宋江闻报…: a name, then a word)
    group = [name]
    while clause[end : end + 1] == "、" and names.name_at(clause, end + 1):
        more = names.name_at(clause, end + 1)
        group.append(more)
        end += 1 + len(more)
    return "、".join(group)


def _head_prefix(text: str, limit: int = 8) -> str | None:
    """The longest start of ``text`` that ends in a person noun (的 allowed inside: 挑酒的汉子)."""
    end = 0
    if text[:1] == "的":
        return None
    for i, ch in enumerate(text[:limit]):
        if not _CJK.match(ch) or (ch in STOP and ch not in _HEAD_CHARS and ch != "的") or (end and i >= end + 2) or (i and ch == "有"):
            break  # (a noun may grow by two characters: 汉 → 汉子, not 军士 → 军士们递相厮)
        if (text[: i + 1].endswith(PERSON_HEADS) or (i == 0 and ch in _ALONE_HEADS)) and text[i + 1 : i + 2] != "马":
            end = i + 1  # (人马, 军马: a troop, not a person)
    if end == 2 and text[0] in SURNAMES and text[1] in _HEAD_CHARS and text[:2] not in _LONG_HEADS:
        return None  # 安士荣献计道: a surname and a character that may end a noun begin a name
    return text[:end] or None


_SEATS = set("县州府处寨庄")


def _shortened(descriptor: str, names: Names) -> str:
    """A descriptor after a place keeps only its noun (巷口酒店里酒保 → 酒保, 船梢公 → 梢公); one whose
    noun is a known word keeps only that (十五六岁的店小二 → 店小二)."""
    for i in range(len(descriptor) - 2, 0, -1):
        after = descriptor[i + 1 :]
        if descriptor[i] in _LOCATIVE and after[:1] != "的" and after.endswith(PERSON_HEADS) and len(after) > 1:  # (门上的人 stays)
            descriptor = after
            break
    noun = _noun(descriptor) if descriptor.endswith(PERSON_HEADS) else ""
    if len(noun) >= 2 and len(descriptor) == len(noun) + 1 and descriptor[0] in _PLACE_NOUNS and names.name_at(descriptor, 0) != descriptor:
        return noun  # 这船梢公 → 梢公: the place he works at, then what he is
    if descriptor[:1] == "本" and descriptor[1:2] in _SEATS and len(descriptor) > 3 and _head_prefix(descriptor[2:]) == descriptor[2:]:
        descriptor = descriptor[2:]  # 本县知县 → 知县: the one of the place the story is at
    opener = _opener(descriptor)
    if opener and _head_prefix(descriptor[len(opener) :]) == descriptor[len(opener) :]:
        descriptor = descriptor[len(opener) :]  # 店门前两三军汉 → 军汉, as 两个公人 → 公人
    noun = descriptor.rsplit("的", 1)[-1]
    return noun if noun != descriptor and names.name_at(noun, 0) == noun else descriptor


def _descriptor(
    clause: str, names: Names, verb_clause: bool, relative_only: bool = False, introduced: bool = False,
    first: bool = False,
) -> str | None:
    """A descriptor subject, without its demonstrative or quantity (那挑酒的汉子 → 挑酒的汉子).

    It may follow a place phrase (后面一个近侍, 对面松林里那伙客人) or the group it is picked from
    (那军汉中一个军校 → 军校). Without an opener, one that ends in a one-character noun is trusted
    only right before the speech verb (殿头官喝道, 中书省院官出班启奏), so that verbs such as 杀人
    are not taken.
    """
    for start in _descriptor_starts(clause, relative_only):
        opener = _opener(clause, start)
        rest = clause[start + len(opener) :]
        titled = opener and _titled_name(rest, names, strict=False)
        if titled:
            return titled  # 有统军长子兀颜延寿 → 兀颜延寿, 那梢公船火儿张横 → 张横
        known = names.name_at(rest, 0)
        if (opener or start) and known and rest[len(known) : len(known) + 1] not in _LOCATIVE:
            return _names_at(rest, names)  # 那张三 → 张三, 那张三、李四 → 张三、李四 (but 那船头上…: a place)
        relative = rest.find("的", 1, 9) if opener else -1
        noun = rest[relative + 1 :] if relative > 0 else ""
        if _head_prefix(noun):
            head = _head_prefix(noun)  # 那船头上横叉的大汉 → 大汉, 这店的掌柜老邓 → 老邓
            if len(head) == 1 and relative <= 4 and not any(ch in STOP or ch in _LOCATIVE for ch in rest[:relative]):
                return rest[: relative + 2]  # 那穿黄衫的人 → 穿黄衫的人: one character alone names nobody
            return names.name_at(noun, len(head)) or _shortened(head, names)
        head = _head_prefix(rest)
        if head and len(head) == 1 and head not in "人汉" and rest[1:2] not in STOP and _CJK.match(rest[1:2] or "。"):
            head = None  # 那伙使枪棒的: a verb and its object, not the noun 使
        if head and not (opener or start) and "众" in head[1:] and head not in PERSON_HEADS:
            head = None  # 止住众人道: the crowd is spoken to
        if head and not (opener or start) and "的" in head and not (verb_clause and _VERB_ONLY.match(rest[len(head) :])):
            head = None  # 凑近身后的大汉: a verb and its object, not a descriptor (but 卖酒的主人家说道)
        tail = rest[len(head) :] if head and _plain_descriptor(head) else ""
        if not (opener or start) and 2 <= len(tail) <= 3 and all(_CJK.match(ch) and ch not in STOP for ch in tail) and name_shaped(tail):
            return tail  # 贼将滕戣，…: a clause that is only a title and a name (not 行者焦躁)
        appositive = head and _appositive(rest[len(head) :], names)
        if appositive:
            return appositive  # 这店的掌柜老邓 → 老邓, 水寨内头领船火儿张横 → 张横
        titled = verb_clause and head and _named_before_verb(rest[len(head) :])
        if titled:
            return trimmed(titled, names)  # 左丞相娄敏中出班启奏 → 娄敏中
        before_verb = verb_clause and head and _VERB_ONLY.match(rest[len(head) :])
        acting = first and not start and rest[len(head or "") : len(head or "") + 1] in _AFTER_SUBJECT | _MOVING  # 御弟大王自折了…, 逃难军士奔回来
        placed = start and clause[:start] in _PLACES and len(head or "") >= 3  # 正南上旗牌官拿着…
        if head and "的" not in head and len(head) - len(_noun(head)) >= 3 and (
            (opener in _NUMERAL and opener) or (not opener and _noun(head) in ("人", "汉") and len(head) >= 4)
        ):
            if opener:
                return None  # 两拳打翻两个小喽啰: a verb phrase, and what follows it is its object
            head = None  # 神医安道全使人: a phrase that ends in 人, not a person (but 那些随从贼人)
        if head and _held_name(head, names):
            return None  # 搂住唐僧道: whom one holds or calls, not a descriptor that ends in 僧
        if head and (opener or before_verb or _plain_descriptor(head) or (introduced and not start) or acting or placed):
            if len(head) >= 2:
                return _shortened(head, names) + ("们" if rest[len(head) : len(head) + 1] == "们" else "")
            if opener:
                return opener + head  # 那人, 那汉: one character alone names nobody
        if opener and opener[-1] in _NUMERAL and rest[:1] == "将":
            return opener + "将"  # 身边一将指道
        nominal = rest.find("的", 1, 5)
        if (opener or (first and not start)) and not head and nominal > 0 and not _adverb(rest[:nominal]):
            after = rest[nominal + 1 :]
            if nominal >= 2 and (after[:1] in _EARLY_STOP or (not opener and after[:1] in _MOVING)):  # (打鱼的回来报道)
                return rest[: nominal + 1]  # 那挑酒的道 → 挑酒的
            if opener[:1] in "那这" and 2 <= len(after) <= 3 and all(_CJK.match(ch) and ch not in STOP for ch in after):
                return after  # 那个唱的玉兰 → 玉兰 (not 取出些金带倒换的碎银两: a thing)
    if verb_clause and clause[:1] in _KIN and (_VERB_ONLY.match(clause[1:]) or clause[1:2] in _AFTER_SUBJECT | {"在"}):
        return clause[0]  # 娘道, 娘在背上说道
    return None


_HOLDING = set("住着了唤叫请问对向与和同把将拿捉揪扯抱搂拉推")


def _held_name(head: str, names: Names) -> bool:
    """A known name that ends ``head`` right after a verb of holding or calling (搂住唐僧, 扯住行者)."""
    return any(
        head[i - 1] in _HOLDING and (name := names.name_at(head, i)) == head[i:] and not common_noun(name)
        for i in range(2, len(head) - 1)
    )


def _appositive(text: str, names: Names) -> str | None:
    """A name right after a descriptor, or after a nickname of three or four characters
    (船火儿张横 → 张横), not after a verb (慕容知府认得秦明)."""
    for i in (0, 3, 4):
        gap = text[:i]
        if any(ch in STOP or ch in _VERB_CHARS or not _CJK.match(ch) for ch in gap):
            return None
        name = names.name_at(text, i)
        if name and not common_noun(name):
            return name
    return None


def trimmed(word: str, names: Names) -> str:
    """``word`` without a verb glued to its end, where the names know the text (费珍慌 → 费珍)."""
    trim = getattr(names, "trimmed", None)
    return trim(word) if trim else word


def _named_before_verb(text: str) -> str | None:
    """A word shaped like a name right before the speech verb (娄敏中出班启奏 → 娄敏中, 娄敏中出班启奏道)."""
    return next((text[:k] for k in (3, 2) if _surnamed(text[:k]) and all(map(_CJK.match, text[:k])) and (_VERB_ONLY.match(text[k:]) or _COURT_VERB.match(text[k:]))), None)


def _plain_descriptor(head: str) -> bool:
    """Without an opener or a speech verb right after it, a descriptor is trusted only when it is a
    person noun alone (近侍), after a place (巷口酒店里酒保) or after a surname (王观察) — not a verb
    and its object (会集诸多番将)."""
    noun = _noun(head)
    before = head[: -len(noun)]
    return before in ("众", "众多") or len(noun) > 1 and (  # 众多牙将, 众僧
        not before or before[-1] in _LOCATIVE or before[-1] == "的" or before in SURNAMES or before in COMPOUND_SURNAMES
    )


def _descriptor_starts(clause: str, relative_only: bool):
    if not relative_only:
        # The one picked from a group first (那军汉中一个军校 → 军校), then the clause's start.
        picked = _PICKED.match(clause)
        if picked:
            yield picked.end()
        yield 0
    # After a place phrase (后面一个近侍指道, 阵面上军士们), a relative clause (送饭的那个人), or a
    # verb of appearing (走出七八个军汉, 坐着一个人, 拥上三五百人).
    for i in range(1, min(len(clause), 10)):
        if clause[i] not in _OPENER_FIRST and clause[i - 1] not in _LOCATIVE and clause[:i] not in _PLACES:
            continue
        before = clause[:i]
        opener = _opener(clause, i)
        if before[-1] == "的" and opener and "了" not in before:
            yield i  # (自引了卖刀的那汉: whom a done verb takes is its object)
        elif relative_only:
            continue
        elif before in _PLACES or before[-1] in _LOCATIVE and not any(ch in STOP for ch in before[:-1]) and (
            3 <= i <= 5 or (i == 2 and (clause[i] == "有" or before[0] in _PLACE_NOUNS))  # 山下有人来报, 关前一将
        ):
            yield i
        elif opener and (before[-1] in "出来着上" or (len(opener) > 1 and not any(ch in STOP or ch in _TAKES_OBJECT for ch in before))):
            yield i  # (but 又怕那两个公人不死: whom one fears is no subject)


_HANDLING = LISTENER_MARKERS | set("带扶搀抱背驮引押拿捉揪拖见看望骂打杀")


def _titled_name(clause: str, names: Names, strict: bool = True) -> str | None:
    """A title before a known name (军师吴用 → 吴用, 太尉洪信 → 洪信), but not a verb before it
    (塞到裴寒山手里). After a demonstrative any words without a verb may stand before the name
    (那梢公船火儿张横)."""
    word = _span(clause, 8, title=True)
    for i in range(2, min(len(word), 6)):
        # The name may run past the span: 神医安道全 (道 stops a span, not a known name).
        name = names.name_at(word, i) if i < len(word) - 1 else names.name_at(clause, i)
        if name and common_noun(name):
            continue  # 柴大官人: 官人 is no one's name
        if not strict and word[i - 1] in _HANDLING:
            continue  # 两个公人带王庆上前禀道: whom they bring, not a title and a name
        if name and (word[i - 1] in _TITLE_ENDS or (not strict and is_surname(name))) and not any(ch in STOP - {"将"} for ch in word[:i]):
            return name  # (a loose title stands before a surname: not 那渔人倚定小船)
    return None


def kin_word(word: str) -> bool:
    """A word for someone's kin (老婆, 母亲, 家的): after a name it is that person's kin, not another."""
    return bool(_KIN_AFTER.fullmatch(word))


def common_noun(word: str) -> bool:
    """A person noun that a name list may hold but that names nobody (官人, 头领, 老都管), unlike a
    name that ends like one (王婆, 武行者, 宿太尉)."""
    return word.endswith(PERSON_HEADS) and (not is_surname(word) or word in PERSON_HEADS)


def _holds_name(word: str, names: Names) -> bool:
    return any((n := names.name_at(word, i)) and not common_noun(n) for i in range(1, len(word) - 1))


def name_before_verb(clause: str, names: Names) -> str | None:
    """A known name right before the speech verb, after a place phrase (只听得门外林青道 → 林青)."""
    clause = strip_lead(clause)
    for i in range(1, len(clause) - 1):
        name = names.name_at(clause, i)
        if name and _VERB_ONLY.match(clause[i + len(name) :]) and clause[i - 1] in _LOCATIVE:
            return name
    return None

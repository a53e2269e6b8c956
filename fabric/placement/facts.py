"""Read a (subject, relation, value) triple out of one plain sentence, whatever its wording.

How, all deterministic (a pure function of the sentence, cached):
1. Names: runs of capitalised words and numbers ("Halcyon Robotics", "$2 million") are the spans a
   subject or a value can be. A sentence-initial common word ("Home for ...", "The ..."), a title
   ("CEO", "chief executive"), a date, and a name used as a modifier ("the Lisbon marathon") are not.
2. Relation: the sentence with its names masked is matched against a lexicon of synonym groups
   ("chief executive" / "CEO" / "is led by" / "heads" are one group, `ceo`). A group names one
   attribute; the same group in two sentences is the same attribute. Outside the lexicon, a
   relational noun names it ("the mayor of X" / "X's mayor is ...").
3. Roles: of the two names nearest the relation's words, the subject is the one the grammar marks:
   a possessive ("Pavel Ibarra's favourite film"), "of / for / where X" ("the chief executive of X",
   "home for X"), or the object of a verb whose grammatical subject is the value ("X heads Y": the
   subject is Y); otherwise the first name ("Y is led by X", "Y lives in X"). Only relation and
   grammar words may stand between the two ("Tom's car broke down near Leeds" states no car), and
   "Amara's sister lives in ..." is about the sister.
4. Values compare after normalising case and numbers ("2 million" = "2,000,000" = "$2M").

A sentence this does not read gives no triple (None): the caller falls back to comparing word
frames. `compare` turns two triples into a verdict: the same fact with the same value (duplicate or
added detail), a changed value (contradiction), another fact (separate), or unknown."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeGuard

from .validator import normalise

# ------------------------------------------------------------------------------------- the lexicon


@dataclass(frozen=True, slots=True)
class Relation:
    """One attribute and the words that state it. `value_first`: verbs whose grammatical subject is
    the fact's value ("Soren Yarrow heads Halcyon": the CEO *of Halcyon* is Soren Yarrow).
    `multi`: a subject may hold several values at once (showrooms, languages): a new value is
    another fact, never a correction. `numeric`: the value is a number (True), never one (False),
    or either (None). `dated`: the value is a date."""

    name: str
    words: re.Pattern[str]
    value_first: re.Pattern[str] | None = None
    multi: bool = False
    numeric: bool | None = False
    dated: bool = False  # the value is a date ("March 31", "14 September 2026")


def _rel(name: str, words: str, value_first: str | None = None, *, multi: bool = False,
         numeric: bool | None = False, dated: bool = False) -> Relation:
    return Relation(name, re.compile(words), re.compile(value_first) if value_first else None, multi, numeric, dated)


# "X leads / heads / runs Y" (X is the value), but not "heads to Lisbon", "runs for office".
_LEADS = (r"\b(?:leads|heads|runs|running)\b"
          r"(?! (?:to|for|out|back|home|into|on|in|at|up|off|a|an|its business|its operations)\b)"
          r"(?! [a-z-]+(?: [a-z-]+)? (?:at|for|of|in)\b)")  # "runs operations at X": a department of X, not X


_TEAM_NOUN = r"(?:team|squad|department|dept)\b"
_NOT_TEAM = r"(?!\s+(?:the\s+)?§\s+" + _TEAM_NOUN + ")"  # "joined the § team" is no employer, "moved to" no home

# "is a volunteer at", "is a board advisor at": a role somewhere that is no employment (one of many)
_UNPAID = r"(?:volunteers?|members?|regulars?|students?|guests?|customers?|clients?|fans?|visitors?|patients?" \
          r"|mentors?|advisors?|advisers?|donors?|subscribers?|trustees?)"

_HELD = r"(?:subscriptions?|memberships?|accounts?|licen[cs]es?|season tickets?|passe?s?|cards?)\b"

# Order matters only for naming: the first group two sentences share names their attribute.
RELATIONS: tuple[Relation, ...] = (
    _rel("ceo", r"\bchief executive(?: officer)?\b|\bceo\b|\bled\b|\bhelms?\b|\bat the helm\b|\bheaded\b|\brun by\b"
                r"|\bmanaging director\b|\btop executive\b|\bhead of\b|" + _LEADS,
         _LEADS + r"|\bhelms\b|\b(?:led|headed)\b(?! by)"),
    _rel("cfo", r"\bchief financial officer\b|\bcfo\b|\bfinance chief\b|\bhead of finance\b"),
    _rel("cto", r"\bchief technology officer\b|\bcto\b|\bchief technical officer\b"),
    _rel("chair", r"\bchair(?:s|man|woman|person)?\b|\bchaired by\b", r"\bchairs\b"),
    # "is on the Payments team", "moved to the Search team": the team is the value ("§ team")
    _rel("team_member", r"\b(?:works?|working|worked|is|are|sits?|member|part|moved|transferred|switched|joined"
                        r"|belongs?)(?: (?:on|in|of|to|with))?\s+(?:the\s+)?§\s+" + _TEAM_NOUN),
    _rel("headquarters", r"\bheadquarter(?:s|ed)\b|\bhead office\b|\bhq\b|\bhead-quartered\b|\bmain office\b"
                         r"|\bbased (?:in|out of)\b|\bhome base\b"),
    # "home" alone also means a house ("worked from home in Porto"): only as the place someone lives.
    _rel("home_city", r"\blive[sd]?\b|\bliving in\b|\bresides?\b|\bresiding\b|\bresident of\b|\bresidence\b"
                      r"|(?<!from )\bhome (?:for|of|to|is|in|city|town)\b|\bresident\b|(?<!mail )\baddress\b"
                      r"|(?:'s|\bher|\bhis|\btheir) city\b|(?:\b(?:a|new|her|his|their)|'s) home\b"
                      r"|\bcalls? § home\b"
                      r"|\bmoved to\b" + _NOT_TEAM + r"|\brelocated to\b|\bsettled in\b|\bbased (?:in|out of)\b"),
    _rel("employer", r"\bwork(?:s|ed)? (?:at|for)\b|\bworking (?:at|for)\b|\bemployed (?:by|at)\b|\bemployer\b"
                     r"|\bjob (?:at|with)\b|\bemploys\b|\bhired\b|\bjoined\b" + _NOT_TEAM + r"|\bon the payroll of\b"
                     r"|\bemployee (?:of|at)\b|\bwhere § works\b"
                     r"|\bis an? (?!(?:[a-z-]+ )?" + _UNPAID + r"\b)(?:[a-z-]+ ){1,2}at\b",
         r"\bemploys\b|\bhired\b(?! by)"),
    _rel("lead", r"\blead\b|\bled by\b|\bheaded by\b|\bin charge of\b|\brun by\b|" + _LEADS, _LEADS),
    # "has a subscription to X", "holds a membership at X", "has an account with X": one held among many
    # (but "has a subscription to the Pro plan": the billing plan)
    _rel("holdings", r"\b(?:has|have|had|holds?|held|owns?|keeps?|got|gets|took out|takes out|bought|buys)"
                     r"\s+(?:an?|another|one|two|three|several)\s+"
                     r"(?:(?:[a-z-]+\s+)?" + _HELD + r"\s+(?:to|with|at|for|of|from|in|on)\b"
                     r"(?!\s+(?:the\s+|an?\s+)?(?:§\s+)?(?:[a-z-]+\s+)?(?:plan|tier|package)\b)"
                     r"|§\S*\s+" + _HELD + ")",  # "has a Netflix subscription": the name before the noun
         multi=True),
    _rel("account_manager", r"\baccount (?:manager|executive|owner|lead)\b|\bcustomer success manager\b|\bcsm\b"
                            r"|\b(?:point of|primary|main) contact\b|\blooks after\b|\bhandles\b|\baccount\b",
         r"\blooks after\b|\bhandles\b"),
    _rel("manager", r"\breports? (?:to|into)\b|\breporting to\b|\banswers to\b|\bline manager\b"
                    r"|(?<!account )(?<!success )\bmanager\b|\bmanaged by\b|\bmanages\b|\bboss\b"
                    r"|\bsupervis(?:or|es|ed by)\b|\b(?:works|working|moved|sits|now) under(?= §)",
         r"\bmanages\b|\bsupervises\b"),
    _rel("job_title", r"\bjob title\b|\btitle\b|\b(?:promoted|demoted) to\b"),
    _rel("billing_plan", r"\bplan\b|\btier\b|\bsubscription\b|\bsubscribed to\b|\bsubscribes to\b|\bbilled on\b"
                         r"|\bupgraded to\b|\bdowngraded to\b"),
    _rel("owner", r"\bowned by\b|\bowns\b|\bparent company\b|\bsubsidiary of\b|\bacquired by\b|\bunit of\b"
                  r"|\bowner(?:ship)?\b|\bbought by\b|\b(?:bought|acquired|purchased|buys|acquires)\b",
         r"\bowns\b|\b(?:bought|acquired|purchased|buys|acquires)\b(?! by)"),  # "Y bought X": X's owner is Y
    # a life partner ("partners with", "a partner at" a firm: business)
    _rel("spouse", r"\bmarried to\b|\bwife\b|\bhusband\b|\bspouse\b|\bpartner\b(?! (?:with|at|in)\b)"
                   r"|\bin a relationship with\b|\bdating\b|\bengaged to\b|\b(?:girl|boy)friend\b"),
    _rel("birthday", r"\bbirthday\b|\bborn on\b|\bdate of birth\b|\bbirth ?date\b", numeric=None, dated=True),
    _rel("mentor", r"\bmentor(?:s|ed by)?\b", r"\bmentors\b|\b(?:is|was|as) (?:a|an|the) mentor (?:for|to)\b"),
    _rel("coach", r"\bcoach(?:es|ed by)?\b|\btrained by\b|\btrainer\b", r"\bcoaches\b"),
    _rel("doctor", r"\bdoctor\b|\bphysician\b|\bgp\b|\bpatient of\b|\btreated by\b"),
    _rel("dentist", r"\bdentist\b"),
    _rel("landlord", r"\blandlord\b|\brents from\b|\brents (?:his|her|their|a) \w+ from\b"),
    _rel("lawyer", r"\blawyer\b|\battorney\b|\bsolicitor\b|\blegal counsel\b|\brepresented by\b"),
    _rel("bank", r"\bbanks with\b|(?:\b(?:her|his|their|its)|'s) bank\b|\bbank is\b|\bbanking partner\b"),
    _rel("supplier", r"\bsuppl(?:ier|ies|ied by)\b|\bvendor\b", r"\bsupplies\b"),
    _rel("auditor", r"\baudit(?:or|ed by|s)\b", r"\baudits\b"),
    _rel("sponsor", r"\bsponsor(?:s|ed by)?\b", r"\bsponsors\b"),
    _rel("investors", r"\binvest(?:or|ors|ed in|s in)\b|\bbacked by\b|\bbacks\b", multi=True),
    _rel("car", r"\bdrives\b|(?:\b(?:her|his|their)|'s) car\b|\bcar is\b"),
    _rel("team", r"\bplays for\b|\bsigned (?:with|for)\b"),
    _rel("work_location", r"\bworks? (?:from|out of|in)\b" + _NOT_TEAM
         + r"|\bdesk\b|\bsits in\b|\bbased at\b|\bworkplace\b"),
    _rel("email", r"\be-?mail(?: address)?\b|\bwrite to\b", numeric=None),
    _rel("deadline", r"\bdeadline\b|\bdue\b"
                 r"|\b(?:ship|deliver|finish|complete|be done|submit|hand in|wrap up)(?:ped|ed|d)? by\b",
         numeric=None, dated=True),
    _rel("launch_date", r"\blaunch(?:es|ed|ing)?\b|\brelease date\b|\bgo(?:es)? live\b|\bships on\b", numeric=None,
         dated=True),
    _rel("rent", r"\brent\b|\brents for\b", numeric=True),
    _rel("salary", r"\bsalary\b|\bearns\b", numeric=True),
    _rel("seats", r"\bseats\b|\blicen[cs]es\b|\busers\b", numeric=True),
    _rel("school", r"\bstud(?:ies|ied|ying) at\b|\bstudent at\b|\benrolled at\b|\bgraduate of\b|\bgraduated from\b"),
    _rel("birthplace", r"\bborn in\b|\bbirthplace\b|\bnative of\b|\bhometown\b"),
    _rel("budget", r"\bbudget\b", numeric=True),
    _rel("headcount", r"\bemployees\b|\bheadcount\b|\bworkforce\b|\bstaff\b|\bemploys\b|\bon (?:its|the) payroll\b"
                      r"|\bpeople work\b",
         numeric=True),
    _rel("revenue", r"\brevenue\b|\bturnover\b|\bannual sales\b|\b(?:brings?|brought|bringing) in\b", numeric=True),
    _rel("price", r"\bcosts?\b|\bprice[ds]?\b|\bpriced at\b|\bsells for\b", numeric=True),
    _rel("valuation", r"\bvalued at\b|\bvaluation\b", numeric=True),
    _rel("age", r"\byears? old\b|\baged\b|\bturn(?:ed|s)\b(?= § *(?:[.!;,]|$|years?\b))", numeric=True),
    _rel("languages", r"\bspeaks\b|\bfluent in\b", multi=True),
    # a team's or a project's tools ("we use Postgres"): several at once; "switched / migrated / moved to" one
    # replaces another of its kind (see `compare`). "moved to" names a tool only when the value is one (`TOOLS`).
    _rel("uses", r"\b(?:uses?|using)\b(?= (?:§|a |an |the )?)(?! (?:it|them|this|that|up)\b)"
                 r"|\b(?:switched|switching|migrated|migrating|moved|moving)(?: over| everything| all)? to\b"
                 + _NOT_TEAM, multi=True),
    _rel("sites", r"\b(?:opened|opens|opening|has|have|operates|runs|added|launched|built|owns)\b(?: [\w§-]+){0,3}? "
                  r"(?:showroom|branch|store|shop|(?<!head )(?<!main )office|factory|plant|warehouse|outlet|studio|lab"
                  r"|depot|clinic|campus)s?\b", multi=True, numeric=None),
)

_MULTI = frozenset(r.name for r in RELATIONS if r.multi)

# Tools by kind: a switch to one replaces the team's tool of its kind only ("switched to MySQL" replaces
# Postgres, not Redis). A tool not listed has no kind: a switch to it replaces any one.
_TOOL_KINDS = {
    "database": "postgres postgresql mysql mariadb sqlite mongodb mongo oracle mssql dynamodb cassandra cockroachdb "
                "supabase snowflake bigquery redshift clickhouse",
    "cache": "redis memcached valkey",
    "queue": "kafka rabbitmq sqs nats",
    "cloud": "aws gcp azure heroku vercel netlify digitalocean",
    "tracker": "jira linear asana trello clickup shortcut",
    "chat": "slack discord mattermost",
    "docs": "notion confluence coda",
    "crm": "salesforce hubspot pipedrive",
    "code host": "github gitlab bitbucket",
    "ci": "jenkins circleci buildkite",
    "language": "python go golang rust java typescript javascript ruby kotlin scala elixir php",
    "frontend": "react vue angular svelte",
}
TOOLS = {tool: kind for kind, names_ in _TOOL_KINDS.items() for tool in names_.split()}


def tool_kind(value: str) -> str | None:
    """The kind of a tool a value names ("PostgreSQL 16" -> "database"), or None."""
    return next((TOOLS[w] for w in value.casefold().split() if w in TOOLS), None)
_NUMERIC = frozenset(r.name for r in RELATIONS if r.numeric)


def _numeric(relation: str | None) -> bool:
    return relation in _NUMERIC
_LEXICON_NAMES = frozenset(r.name for r in RELATIONS)

# "favourite film" / "loves X more than any other film": one group per kind of thing.
_FAVOURITE = re.compile(r"\bfavou?rite (\w+)|\bmore than any other (\w+)|\bbest-loved (\w+)|\btop (?!job\b)(\w+)"
                        r"|\bof all (?:the )?(\w+)|\bthe (\w+) § (?:loves|likes|prefers|enjoys) (?:most|best)\b"
                        r"|\bfavou?rite\b")
_SAME_THING = {"movie": "film", "films": "film", "movies": "film", "novel": "book", "books": "book", "novels": "book",
               "color": "colour", "dish": "food", "meal": "food", "tune": "song", "track": "song"}

# ----------------------------------------------------------------------------------------- names

_TOKEN = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\d\d:\d\d-\d\d:\d\d\b"  # (opening hours: one value)
                    r"|\+?(?!\d{4}-\d\d-\d\d\b)(?=(?:-?\d){7})\d{2,4}(?:-\d{2,6}){1,4}\b"
                    r"|[$€£]?\d(?:[\d,.:]*\d)?(?:\s?(?:%|am|pm))?|[^\W\d_][\w'’-]*|\S")
_SCALE = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9}
# Money after the number ("45 kroner", "20 dollars"): one word list for reading names, numbers and units.
CURRENCY = (r"dollars?|euros?|pounds?|usd|eur|gbp|kr|kroner|krone|kronor|krona|sek|nok|dkk|yen|jpy|chf|francs?"
            r"|rupees?|inr")
_CURRENCY_WORDS = frozenset(w for part in CURRENCY.split("|")
                            for w in ((part[:-2], part[:-1]) if part.endswith("s?") else (part,)))
# Capitalised at the start of a sentence, or part of a title: grammar, not a name.
_COMMON = frozenset("""the a an this that these those our their his her its my your since as in on at from after
    before today now currently yesterday recently lately nowadays home billing favourite favorite head when
    according update correction note per following effective starting also both every each all no not there it she
    he they we for of by with to where who which what new old former latest current main chief you i we ask call contact
    email please remember fyi reach dial actually btw ps oh okay ok reminder heads-up oops sorry""".split())
_SENTENCE_PUNCT = frozenset(':;.!?"“(—–-')
_TITLES = frozenset("""ceo cfo cto coo cmo chief executive officer dr mr mrs ms prof president chair chairman
    chairwoman director manager founder head hq vp""".split())
_MONTHS = frozenset("""january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday
    sunday""".split())
_COMPANY_WORDS = frozenset("""inc ltd llc plc gmbh corp co group labs lab robotics foods systems data dynamics
    logistics bio holdings partners industries technologies tech software media capital bank motors energy
    health pharma studios works company""".split())
# "of X" marks X as the subject ("the chief executive of X") except after these nouns, where X is the
# value ("a resident of X" lives in X).
_OF_VALUE = re.compile(r"\b(?:resident|employee|subsidiary|member|citizen|part|out|native|graduate|fan|unit"
                       r"|student|staff|payroll|works?|working|worked|job)\s+(?:of|for)\s*$")
_SUBJECT_MARK = re.compile(r"(?:\b(?:of|for|where|what)|\bhome to|\bat)\s*$")
# A name the sentence says is the old value (a predecessor): after "switched from", "replacing", "left",
# "traded her". One pattern for the lexicon (names masked) and the alignment (align.py, names kept).
GONE_BEFORE = re.compile(r"\b(?:(?:moved|switched|changed|upgraded|downgraded|migrated|transferred|relocated)"
                         r"(?:\s+[a-z]+){0,2}\s+from(?:\s+the)?|replac(?:ed|es|ing)|succeed(?:ed|s|ing)?"
                         r"|t(?:ook|aking) over from|instead of|in place of|left|quit"
                         r"|(?:traded|swapped|exchanged)(?:\s+(?:his|her|their|its|our|my|the))?)\s+$")
# ("X is an engineer at Y" is no relative clause: a preposition ends the noun phrase.)
_RELATIVE = re.compile(r"§\s+(?:is|was)\s+(?:the|a|an)\s+[a-z -]*[a-z](?<!\bat)(?<!\bin)(?<!\bof)(?<!\bfor)"
                       r"(?<!\bwith)(?<!\bon)(?<!\bby)(?<!\bthe)(?<!\ba)(?<!\ban)\s+§")
_AT_SUBJECT = re.compile(r"\b(?:chief executive|ceo|cfo|cto|officer|manager|head|boss|chair\w*)"
                         r"(?:\s+(?:job|role|position|post|seat))?\s+at\s*$")
# ("not far from", "not only": no negation of the fact.)
_NEGATION = re.compile(r"\b(?:not(?! (?:far|only|just|least|bad|unlike)\b)|no longer|never|neither|nor)\b|n['’]t\b",
                       re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Span:
    start: int           # character offsets in the sentence
    end: int
    text: str            # as written (possessive ending dropped)
    key: str             # compared form: casefolded, numbers canonical
    possessive: bool
    number: bool


@dataclass(frozen=True, slots=True)
class Fact:
    subject: str
    relation: str                  # the group name: one name per attribute
    relations: frozenset[str]      # every group the wording fits ("based in": headquarters or home_city)
    value: str
    subject_key: str
    value_key: str
    negated: bool
    past: bool                     # "former", "previously", "used to": not a statement of the current value
    tail: bool                     # the value is lower-case words ending the sentence, not a name
    lexical: bool                  # the relation comes from the lexicon (not from a relational noun)
    loose: bool                    # words other than relation and grammar words join subject and value
    others: frozenset[str]         # names in the sentence besides the subject and the value
    detail: frozenset[str]         # content words besides the names and the relation's words
    period: frozenset[str] = frozenset()  # years the sentence names, but for "since 2020" and the like
    qualifiers: frozenset[str] = frozenset()  # the detail words but those describing the value ("a blue Volvo")
    inner: frozenset[str] = frozenset()       # names between the subject and the value ("... in Paris is ...")
    thing: bool = False            # the subject is a thing both sentences name in lower-case words
    changed: bool = False          # the sentence says the value changed ("now", "passed to", "took over")
    replaces: bool = False         # a switch to the value ("switched / migrated / moved to"): it replaced one


_NUMBER = re.compile(r"[$€£]?\s*(\d[\d,]*(?:\.\d+)?)\s*((?:thousand|million|billion|mn|bn|k|m|b)?)\.?"
                     rf"(?:\s+(?:{CURRENCY}))?")


def number_key(text: str) -> str | None:
    """'2 million', '2,000,000', '$2M', '2m' -> '2000000'; None when text is not a number."""
    t = text.casefold().replace("’", "'").strip()
    m = _NUMBER.fullmatch(t)
    if not m:
        return None
    digits, scale = m.group(1), m.group(2)
    if scale and scale not in _SCALE:
        return None
    if "," in digits and not re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", digits):
        return None  # "1,5" is not a thousands grouping: leave it alone
    n = float(digits.replace(",", "")) * _SCALE.get(scale, 1)
    return f"{n:.6f}".rstrip("0").rstrip(".")


_CURRENCIES = (("usd", r"\$|\bdollars?\b|\busd\b"), ("eur", r"€|\beuros?\b|\beur\b"), ("gbp", r"£|\bpounds?\b|\bgbp\b"),
               ("kr", r"\bkr\b|\bkron(?:er|e|or|a)\b|\bsek\b|\bnok\b|\bdkk\b"), ("jpy", r"\byen\b|\bjpy\b|¥"),
               ("chf", r"\bchf\b|\bfrancs?\b"), ("inr", r"\brupees?\b|\binr\b|₹"))


def currency(text: str) -> str | None:
    """The currency a money value is in ("$20", "18 euros", "160 kroner"), or None."""
    low = text.casefold()
    return next((code for code, pattern in _CURRENCIES if re.search(pattern, low)), None)


def value_key(text: str) -> str:
    n = number_key(text)
    if n is not None:
        return n
    words_ = name_key(text).split()
    if words_ and words_[0] == "the":
        words_ = words_[1:]
    while len(words_) > 1 and words_[-1] in {"plan", "tier", "package", "subscription", "film", "movie", "city",
                                              "inc", "ltd", "llc", "corp", "plc"}:
        words_ = words_[:-1]
    return " ".join(words_)


# "iRobot", "eBay": a brand, though lower-case first ("iOS", "macOS" read as words: an upper-case run).
_CAMEL = re.compile(r"[a-z]{1,2}[A-Z][a-z]{2,}")


def _is_name(tok: str) -> bool:
    """Capitalised, a number, an address, a code of letters and digits, or a brand in camel case ("iRobot")."""
    camel = _CAMEL.fullmatch(tok) is not None
    code = tok.isalnum() and not tok.isalpha() and not tok.isdigit()  # "tulip42", "b7x": a code, password, tag
    return tok[0].isupper() or camel or code or tok[0].isdigit() or tok[0] in "$€£" or "@" in tok \
        or tok[:2].startswith("+") and tok[1:2].isdigit()


# Words that are no brand when written in lower case as the subject of a sentence or a possessive.
_NOT_BRANDS = frozenset("""today tomorrow yesterday tonight everyone everybody someone somebody nobody anyone
    anybody one other others mom mum dad week month year""".split())


def _lower_brand(toks: list[tuple[int, int, str]], i: int, text: str) -> bool:
    """A name written in lower case ("tinyhat", "stripe") where the grammar says it is a name and the writer
    uses capitals elsewhere: a possessive not after a determiner ("now tinyhat's chief executive"), or the
    subject opening the sentence ("tinyhat is led by ...")."""
    tok = toks[i][2]
    low = tok.casefold().removesuffix("'s").removesuffix("’s")
    if not tok[0].islower() or not low.isalpha() or low in _COMMON or low in _STOP or low in _NOT_BRANDS \
            or low in _TITLES or not cased(text) or any(r.words.search(low) for r in RELATIONS):
        return False  # ("rent is €900 at the Lisbon flat": a relation's word, no name)
    if tok.endswith(("'s", "’s")):
        before = toks[i - 1][2] if i else ""  # not "the Arden contract's": the head noun of a name
        return not before or before[0].islower() and before not in _DETERMINER_WORDS
    nxt = toks[i + 1][2].casefold() if i + 1 < len(toks) else ""
    return i == 0 and nxt in {"is", "was", "has", "had"}


_DETERMINER_WORDS = frozenset("the a an its his her their our my your this that these those every each no any "
                              "some of".split())


_USER_TOKEN = re.compile(r"User(?:['’]s?)?")  # "I", "my", "me" as align.canonical writes them ("Moved my ...")


def names(text: str) -> tuple[Span, ...]:
    """The sentence's name and number spans, in order."""
    toks = [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]
    spans: list[Span] = []
    run: list[tuple[int, int, str]] = []

    def close() -> None:
        # Titles at the start of a run are not part of the name ("Chief Executive Soren Yarrow").
        while run and run[0][2].casefold().rstrip("'’s") in _TITLES:
            run.pop(0)
        while len(run) > 1 and run[-1][2].casefold() in _TITLES:  # "the Halcyon Robotics CEO"
            run.pop()
        if run:
            spans.append(_span(text, run))
        run.clear()

    for i, (s, e, tok) in enumerate(toks):
        low = tok.casefold()
        nxt = toks[i + 1][2] if i + 1 < len(toks) else ""
        initial = i == 0 or toks[i - 1][2] in _SENTENCE_PUNCT
        if _is_name(tok) and not (initial and (low in _COMMON or low in _TITLES)) \
                or _lower_brand(toks, i, text):
            if initial and nxt[:1].islower() and nxt.casefold() in {"for", "of", "to", "in", "at"}:
                close()  # "Home for Amara ..."
                continue
            if run and (text[run[-1][1]:s].strip() or _USER_TOKEN.fullmatch(tok)):
                close()  # only spaces join the words of a name; the user (align.canonical) is a name alone
            run.append((s, e, tok))
            if tok.endswith(("'s", "’s", "'", "’")):
                close()  # a possessive ends the name
        elif run and low in _SCALE and run[-1][2].lstrip("$€£")[:1].isdigit() or run and low in _CURRENCY_WORDS:
            run.append((s, e, tok))  # "2 million", "20 dollars"
        elif run and low in ("of", "the", "and") and run[0][2] in ("A", "An", "The") and run[0][0] > 0 \
                and nxt[:1].isupper():
            run.append((s, e, tok))  # a title mid-sentence: "names A House of Kites as a favourite film"
        else:
            close()
    close()
    # A month, a month and year, or a year after "in / since / ..." is a time, not a subject or a value
    # ("Since March 2024, ..."); "March 31" and "a headcount of 2000" are values.
    return tuple(sp for sp in spans if sp.key not in _TITLES and not _is_time(text, sp))


def _tail_value(text: str) -> Span | None:
    """A value in lower case that ends the sentence after "is": "Emma's favourite colour is blue"."""
    m = _TAIL.search(text) or _FAVOURITE_LOWER.search(text) or (_TAIL_LOWER.search(text) if not cased(text) else None)
    if m is None or m.group(1).casefold() in _STOP:
        return None
    return Span(m.start(1), m.end(1), m.group(1), " ".join(m.group(1).casefold().split()), False, False)


# A sentence in lower case throughout ("greta holm lives in odense now"): its casing tells no name from a word,
# so the words ending it after a preposition are its value too.
_CAPITAL = re.compile(r"[A-Z]")


def cased(text: str) -> bool:
    """Does the writer use capitals (the "User" that `canonical` writes for "the user" / "I" aside)?"""
    return _CAPITAL.search(text.replace("User", "")) is not None


_WHEN_AFTER = r"(?:\s+(?:now|again|these days|nowadays|today|lately|anymore))?"
_TAIL_LOWER = re.compile(r"\b(?:in|at|for|to|by|with)\s+(?:the\s+)?"
                         r"([a-z][\w-]*(?:\s+(?!now\b|again\b|too\b|today\b)[a-z][\w-]*)?)"
                         r"(?:\s+(?:now|again|these days|nowadays|today))?\s*[.!]?\s*$")
_TAIL = re.compile(r"\b(?:is|are|remains|became|becomes)\s+(?:now\s+)?(?:the\s+|a\s+|an\s+)?"
                   r"([a-z][\w-]*(?:\s+(?!now\b|again\b|these\b|today\b|lately\b)[a-z][\w-]*)?)" + _WHEN_AFTER
                   + r"\s*[.!]?\s*$")
# "loves ramen more than any other food": a liking's object is its value, in whatever case.
_FAVOURITE_LOWER = re.compile(r"\b(?:loves|likes|prefers|enjoys|adores)\s+([a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+"
                              r"(?:more than any other|above all other|over any other|best of all)\b")


def _is_time(text: str, sp: Span) -> bool:
    ws = sp.text.casefold().split()
    if any(w in _MONTHS for w in ws):
        return all(w in _MONTHS or _YEAR.fullmatch(w) for w in ws)
    return len(ws) == 1 and _YEAR.fullmatch(ws[0]) is not None and (
        _TIME_WORD.search(text[:sp.start]) is not None or not text[:sp.start].strip()
        or _YEAR_MODIFIER.search(text[:sp.start]) is not None and re.match(r"\s+[a-z]", text[sp.end:]) is not None)


_YEAR = re.compile(r"(?:1[89]|20)\d\d")
# "Kestrel Games' 2023 revenue", "the 2024 budget": a year before a noun is the period measured, not a value.
_YEAR_MODIFIER = re.compile(r"(?:['’]s?|\b(?:the|its|their|his|her|our|my|your))\s+$", re.IGNORECASE)
# The period a quantity is measured over ("revenue in 2023", "the 2024 budget"), not when it starts to hold.
_PERIOD = re.compile(r"(?<!since )(?<!from )(?<!as of )(?<!starting )(?<!effective )\b((?:1[89]|20)\d\d)\b",
                     re.IGNORECASE)
_TIME_WORD = re.compile(r"\b(?:in|since|from|until|till|by|before|after|during|around|circa|as of)\s+$"
                        r"|,\s*$", re.IGNORECASE)


def _span(text: str, run: list[tuple[int, int, str]]) -> Span:
    start, end = run[0][0], run[-1][1]
    raw = text[start:end]
    possessive = raw.endswith(("'s", "’s", "'", "’"))
    if possessive:
        raw = re.sub(r"['’]s?$", "", raw)
        end = start + len(raw)
    n = number_key(raw)
    return Span(start, end, raw, n if n is not None else name_key(raw), possessive, n is not None)


_GENERIC_HEAD = frozenset("project projects team operation programme program initiative".split())


def name_key(raw: str) -> str:
    """A name's compared form: casefolded; a phone number in its digits alone ("+44 7700 900 123" =
    "+44 7700 900123"); a leading generic noun dropped ("Project Falcon" = "Falcon")."""
    if re.fullmatch(r"\+?\d[\d -]{5,}\d", raw) and len(re.sub(r"\D", "", raw)) >= 7:
        return re.sub(r"\D", "", raw)
    words_ = [_ALIASES.get(w, w) for w in normalise(raw).split()]
    if len(words_) > 1 and words_[0] in _GENERIC_HEAD:
        words_ = words_[1:]
    return " ".join(words_)


# One name, two spellings people use interchangeably ("Golang" is Go, "Postgres" is PostgreSQL).
_ALIASES = {"golang": "go", "postgres": "postgresql", "k8s": "kubernetes", "js": "javascript", "nodejs": "node",
            "ts": "typescript", "mssql": "sql server", "gcp": "google cloud", "nyc": "new york"}


def _project(text: str, own: tuple[Span, ...], other: tuple[Span, ...]) -> tuple[Span, ...]:
    """The other sentence's names found here in any case ("halcyon robotics"), added to this one's."""
    folded = text.casefold()
    extra: list[Span] = []
    for sp in other:
        if sp.number or sp.text.casefold() not in folded or any(sp.key == o.key for o in own):
            continue
        for m in re.finditer(r"(?<!\w)" + re.escape(sp.text.casefold()) + r"(?!\w)", folded):
            if not any(m.start() < o.end and o.start < m.end() for o in (*own, *extra)):
                poss = text[m.end():m.end() + 2] in ("'s", "’s") or text[m.end():m.end() + 1] in ("'", "’")
                extra.append(Span(m.start(), m.end(), text[m.start():m.end()], sp.key, poss, False))
                break
    return tuple(sorted((*own, *extra), key=lambda s: s.start))


# ------------------------------------------------------------------------------------------ facts

_STOP = frozenset("""a an the is are was were be been being has have had of in on at to for by with as and or but
    its it his her their our this that which who whom whose now also currently still since from into than
    any other more most very so then there here not no longer where what these days update correction latest today
    nowadays lately recently anymore billing took over appointed named became becomes serves serving acts role
    position officially made make makes calls call pays paid likes love loves best all again just actually finally
    passed about around roughly approximately nearly almost circa""".split())


# "X's wife works at Y": the wife holds the fact her verb states; "wife" names whose it is, not X's spouse.
_SPOUSE_HOLDS = re.compile(r"§['’]s?\s+(?:(?:new|current|late)\s+)?(?:wife|husband|spouse|partner)\s+"
                           r"(?:now\s+|also\s+|still\s+)?(?!(?:is|was|has|as|this|its|his|always|thus)\b)[a-z]+(?:s|ed)\b")


def _relations(masked: str) -> tuple[list[Relation], int, list[tuple[int, int, str]]]:
    """`_lexicon_relations`, less a spouse's word that says whose another relation is."""
    rels, at, covered = _lexicon_relations(masked)
    holds = _SPOUSE_HOLDS.search(masked)
    if holds:  # (what the spouse does, "teaches at Y", is no relation of X's)
        rels = [r for r in rels if r.name != "spouse"]
        covered = [c for c in covered if c[2] != "spouse"]
        at = min((start for start, _, name in covered if name == rels[0].name), default=-1) if rels else -1
    return rels, at, covered


def _lexicon_relations(masked: str) -> tuple[list[Relation], int, list[tuple[int, int, str]]]:
    """The lexicon groups the masked sentence fits, where the first one's words sit, and the
    character ranges of every relation word found. Without a lexicon group, a relational noun
    ("the mayor of X", "X's mayor") names the attribute by itself."""
    found: list[tuple[int, Relation]] = []
    covered: list[tuple[int, int, str]] = []  # where each relation's words sit
    for rel in RELATIONS:
        first = rel.words.search(masked)
        if first:
            found.append((first.start(), rel))
            covered += [(m.start(), m.end(), rel.name) for m in rel.words.finditer(masked)]
    fav = _FAVOURITE.search(masked)
    if fav:
        thing = next((g for g in fav.groups() if g), "thing")
        thing = _SAME_THING.get(thing, thing)
        found = [f for f in found if f[1].name != "sites" and not f[1].numeric]  # "favourite shop" is not a site
        found.append((fav.start(), Relation(f"favourite_{thing}", _FAVOURITE)))
        covered.append((fav.start(), fav.end(), f"favourite_{thing}"))
    if not found:
        noun = _RELATIONAL_NOUN.search(masked)
        if noun is None:
            return [], -1, []
        phrase = noun.group("of") or noun.group("poss") or noun.group("as") or noun.group("appos")
        words_ = [w for w in phrase.split() if w not in _ADJECTIVES]
        if not words_ or words_[-1] in _STOP:
            return [], -1, []
        name = "_".join(words_)
        multi = words_[-1] in _MULTI_NOUNS or (words_[-1].endswith("s") and not words_[-1].endswith("ss"))
        found.append((noun.start(), Relation(name, re.compile(re.escape(" ".join(words_))), multi=multi,
                                             numeric=None)))
        covered.append((noun.start(), noun.end(), name))
    found.sort(key=lambda f: f[0])
    return [r for _, r in found], found[0][0], covered


# "the mayor of X" / "X's mayor is" / "X has Y as its mayor": a noun of one to three words.
_NOUN = r"((?:[a-z][a-z-]*\s+){0,2}[a-z][a-z-]*)"
_RELATIONAL_NOUN = re.compile(
    rf"\b(?:the|its|his|her|their)\s+(?P<of>{_NOUN[1:-1]})\s+(?:of|for)\s+§"
    rf"|§'s\s+(?P<poss>{_NOUN[1:-1]})\s+(?:is|was|remains|has been|are)\b"
    rf"|§\s+(?:has|have)\s+§\s+as\s+(?:its|his|her|their)\s+(?P<as>{_NOUN[1:-1]})\b"
    # "X has a new principal, Y", "X got a new coach: Y"
    rf"|§\s+(?:has|have|got|gets)\s+(?:a|an|its|his|her|their)\s+(?P<appos>{_NOUN[1:-1]})\s*[,:–—-]\s*"
    rf"(?:(?:mr|mrs|ms|mx|dr|prof)\s+)?§")
# ("first", "second": an ordinal names another one: "X's first car" is not X's car.)
_ADJECTIVES = frozenset("""new current former latest present acting interim all-time longtime long-time own
    official main sole only annual yearly monthly weekly daily quarterly""".split())
_MULTI_NOUNS = frozenset("""friend colleague neighbour neighbor client customer member child son daughter sibling
    brother sister cousin investor partner supplier fan student employee guest visitor""".split())
_PAST = re.compile(r"\b(?:former|formerly|previous|previously|used to|ex-\w+|once"
                   r"|(?<!has )(?<!have )(?:lived|worked|resided)|was the"
                   r"|was based|was headquartered|was led|had been|until|back then)\b"
                   # "the CEO in 2015 was ...": a year and a past copula tell what was true then
                   r"|\b(?:in|during) (?:1[89]|20)\d\d\b[^.;]*\b(?:was|were)\b"
                   r"|\b(?:was|were)\b[^.;]*\b(?:in|during) (?:1[89]|20)\d\d\b"
                   # a plan ("starting a new job at Figma on Monday"): not the value now; its own note when it holds
                   r"|\b(?:will|going to|gonna|about to|plans? to|planning to)\s+(?:start|join|move|switch)\b"
                   r"|\b(?:starting|joining|moving|switching|relocating)\b[^.;]*\b(?:on (?:mon|tues|wednes|thurs|fri"
                   r"|satur|sun)day|next (?:week|month|year|mon|tues|wednes|thurs|fri|satur|sun)\w*|tomorrow"
                   r"|in (?:january|february|march|april|june|july|august|september|october|november|december)"
                   r"|in (?:a|two|three|\d+) (?:days?|weeks?|months?))\b")


def _covered(covered: list[tuple[int, int, str]], at: int) -> bool:
    return any(s <= at < e for s, e, _ in covered)


# Where the clause holding the fact ends: ", who also chairs ..." adds detail, not the relation.
_CLAUSE_END = re.compile(r",|;|\s(?:who|which|whose|and|but|while|after|before)\s")


def _modifier(masked: str, at: int, covered: list[tuple[int, int, str]]) -> bool:
    """Is the name at `at` a modifier: after a determiner and before a noun that is no relation word?"""
    if not re.search(r"\b(?:the|a|an|its|our|their|his|her|my|your|this|that)\s+$", masked[:at]):
        return False
    after = re.match(r"(?:'s)?\s+([a-z][a-z-]*)", masked[at + 1:])
    return after is not None and after.group(1) not in _STOP and not _covered(covered, at + 1 + after.start(1)) \
        and not re.fullmatch(_TEAM_NOUN, after.group(1))  # "the Search team" is named, not modified, by Search


def _linked(masked: str, pa: int, pb: int, covered: list[tuple[int, int, str]]) -> bool:
    """Do only relation words and grammar words stand between the two names? Also allowed: the noun
    after a possessive ("Amara's sister lives in ...": see `_whose`) and an adjective before the
    second name ("drives a red Toyota")."""
    between = masked[pa + 1:pb]
    for m in re.finditer(r"(?<!')[a-z][a-z'-]*", between):  # (not the s of "'s")
        w = m.group()
        if w in _STOP or w in _ADJECTIVES or w in _TITLES or w in _AUXILIARIES or w in _LINKING or w.endswith("ly") \
                or _covered(covered, pa + 1 + m.start()):
            continue
        if re.fullmatch(r"'s\s+", between[:m.start()]) or _AFTER_POSSESSIVE.fullmatch(between[:m.start()]) and all(
                w in _ADJECTIVES for w in between[2:m.start()].split()) or (
                re.search(r"\b(?:a|an|the)\s+$", between[:m.start()]) and not between[m.end():].strip()):
            continue
        return False
    return True


_AFTER_POSSESSIVE = re.compile(r"'s\s+(?:[a-z-]+\s+)+")  # "X's new team lead": adjectives, then the noun

# Light verbs people restate a fact with ("switched to the Scale plan", "is located in Vilnius").
_LINKING = frozenset("""moved switched located situated holds holding answers joined hired relocated transferred
    changed upgraded downgraded promoted elected stays staying sits living registered chose chosen picked
    selected succeeded succeeds replaced replacing given gets got received numbers totals runs held business
    operations left quit grew rose fell dropped increased decreased climbed shrank jumped went
    become became becomes started starting began down up""".split())
_AUXILIARIES = frozenset("does do did doesn't don't didn't will would can could may might should must shall "
                         "isn't wasn't used".split())


# "X's top job, CEO, is held by Y": the role in X, not another entity.
_ROLE_WORDS = frozenset("top job role post position seat".split())


def _whose(masked: str, subject: Span, at: int, covered: list[tuple[int, int, str]]) -> str:
    """A noun that makes the subject another entity: "Amara's sister lives in ..." is about the sister,
    "the sister of Amara lives in ..." too. Returns "" or the noun ("sister")."""
    if subject.possessive:
        for m in re.finditer(r"§|[a-z][a-z'-]*", masked[at + 3:]):
            if m.group().endswith("'s") and m.group() != "'s":
                return m.group()[:-2]  # "Jude's manager's title": the manager's
            if m.group() == "§" or _covered(covered, at + 3 + m.start()):
                return ""
            if m.group() not in _STOP and m.group() not in _ADJECTIVES and m.group() not in _ROLE_WORDS:
                return m.group()
        return ""
    noun = re.search(r"([a-z][a-z'-]*)\s+(?:of|for)\s+$", masked[:at])
    if noun and not _covered(covered, noun.start(1)) and noun.group(1) not in _STOP \
            and noun.group(1) not in _ADJECTIVES and not _OF_VALUE.search(masked[:at]):
        return noun.group(1)
    return ""


def _mask(text: str, spans: tuple[Span, ...]) -> tuple[str, list[int]]:
    """The lowercased sentence with each name replaced by '§', and where each '§' sits."""
    out, at, pos = [], 0, []
    for sp in spans:
        out.append(text[at:sp.start].lower())
        pos.append(sum(len(p) for p in out))
        out.append("§" + ("'s" if sp.possessive else ""))
        at = sp.end + (len(text[sp.end:]) - len(re.sub(r"^['’]s?", "", text[sp.end:])) if sp.possessive else 0)
    out.append(text[at:].lower())
    return "".join(out).replace("’", "'"), pos


def extract(text: str, other: str | None = None) -> Fact | None:
    """The sentence's triple, or None when its attribute is not in the lexicon or its names are
    not clear. `other`: a sentence it is compared with, whose names are looked for here in any case.
    Cached per sentence: a neighbour's text is read once, however many writes it is compared with."""
    from .align import canonical  # numbers, times and phone numbers written one way ("twelve" -> 12)

    text = canonical(text)
    if other is None or len(_names(text)) >= 2:
        return _extract(text, ())
    other = canonical(other)
    return _extract(text, _names(other) + _shared_things(text, other))


# Words that say a value changed: a thing named in lower-case words is only corrected when it is said to change.
_CHANGED = re.compile(r"\b(?:now|passed|handed|transferred|took over|taken over|moved|changed|switched|new|no longer"
                      r"|anymore|since|replac\w+|succeed\w*)\b")
_THING = re.compile(r"\bthe ([a-z][a-z-]+ [a-z][a-z-]+)(?: ([a-z][a-z-]+))?\b")


def _things(text: str) -> set[str]:
    """Every "the" + two or three lower-case words ("the payments roadmap", "the payments roadmap passed")."""
    return {t for m in _THING.finditer(text) for t in (m.group(1), f"{m.group(1)} {m.group(2)}" if m.group(2) else "")
            if t}


@lru_cache(maxsize=16384)
def _shared_things(text: str, other: str) -> tuple[Span, ...]:
    """A thing named in lower-case words, "the" and the same two or three nouns in both sentences ("the
    payments roadmap"): as good as a shared name. Not when a word of it is a relation's or a grammar word."""
    found = {t for t in _things(text) & _things(other)
             if not any(w in _STOP or w in _COMMON or w in _LINKING for w in t.split())
             and not any(r.words.search(t) for r in RELATIONS) and not _FAVOURITE.search(t)}
    longest = [t for t in found if not any(t != u and t in u for u in found)]  # "the mobile release checklist"
    return tuple(Span(0, 0, t, t, False, False) for t in sorted(longest))


@lru_cache(maxsize=16384)
def _names(text: str) -> tuple[Span, ...]:
    return names(text)


@lru_cache(maxsize=16384)
def _extract(text: str, other_names: tuple[Span, ...]) -> Fact | None:
    spans = _names(text)
    if other_names and len(spans) < 2:
        spans = _project(text, spans, other_names)
    tail = len(spans) == 1 and _tail_value(text)
    if tail:
        spans = (*spans, tail) if tail.start >= spans[0].end else ()
    if len(spans) < 2:
        return None
    masked, pos = _mask(text, spans)
    rels, at, covered = _relations(masked)
    if not rels:
        return None
    # "the Lisbon marathon", "the Halcyon Robotics board meeting": a name used as a modifier is no argument.
    kept = tuple(sp for sp, p in zip(spans, pos) if not _modifier(masked, p, covered))
    modifiers = frozenset(sp.key for sp in spans if sp not in kept)  # still names the sentence adds
    if len(kept) < 2:
        return None
    if len(kept) < len(spans):
        spans = kept
        masked, pos = _mask(text, spans)
        rels, at, covered = _relations(masked)
        if not rels:
            return None
    # The two names nearest the relation's words, in sentence order; not a predecessor ("replacing X").
    eligible = [i for i in range(len(spans)) if not GONE_BEFORE.search(masked[:pos[i]])]
    if len(eligible) < 2:
        return None
    nearest = sorted(sorted(eligible, key=lambda i: abs(pos[i] - at))[:2])
    a, b = (spans[i] for i in nearest)
    pa, pb = (pos[i] for i in nearest)
    # Other words join the two names: maybe another statement ("Tom's car broke down near Leeds"),
    # maybe added detail ("Home for Amara is a flat near the river in Lisbon"). Kept, loosely.
    loose = not _linked(masked, pa, pb, covered)
    clause = _CLAUSE_END.search(masked, max(pa, pb) + 1)
    limit = clause.start() if clause else len(masked)
    in_clause = [r for r in rels if any(s < limit and name == r.name for s, _, name in covered)]
    if in_clause:
        rels = in_clause
        covered = [c for c in covered if c[0] < limit and c[2] in {r.name for r in rels}]
    before_b = masked[:pb]
    marked_b = (b.possessive or (_SUBJECT_MARK.search(before_b) is not None and not _OF_VALUE.search(before_b)
                                 and (not before_b.rstrip().endswith(" at") or _AT_SUBJECT.search(before_b)))
                # "Scale is the plan Copperline Foods is billed on": a relative clause about the subject
                or (_RELATIVE.search(masked, pa, pb + 1) is not None and re.match(r"\s+[a-z]", masked[pb + 1:])))
    value_first = any(r.value_first and r.value_first.search(masked, pa, pb) and " by " not in masked[pa:pb]
                      for r in rels)
    if a.possessive and not b.possessive:
        subject, value = a, b
    elif (marked_b or value_first) and not b.number:
        subject, value = b, a
    else:
        subject, value = a, b
    if subject.number and not value.number and any(r.numeric for r in rels):
        subject, value = value, subject  # "400 people work at Driftwood Studios"
    if subject.number:
        return None
    dated = any(w in _MONTHS for w in value.key.split()) or bool(re.search(r"\d", value.text))
    rels = [r for r in rels if (r.numeric is None or r.numeric == value.number) and (dated or not r.dated)]
    tool = tool_kind(value.key) is not None
    if any(r.name == "uses" for r in rels) and len(rels) > 1:  # "moved to MySQL" / "moved to Lisbon"
        rels = [r for r in rels if (r.name == "uses") == tool] or rels
    if not rels:
        return None
    whose = _whose(masked, subject, pos[spans.index(subject)], covered)
    owned = next((sp for sp in spans if subject.possessive and re.fullmatch(r"['’]s?\s+", text[subject.end:sp.start])),
                 None)  # "Project Atlas's QA is owned by ...": the sentence is about Atlas's QA
    if owned is value:
        return None
    if owned is not None:
        whose = owned.key
    subject_key = f"{subject.key} / {whose}" if whose else subject.key
    others = frozenset(sp.key for sp in spans if sp is not subject and sp is not value) | modifiers
    lo, hi = sorted((subject.start, value.start))
    inner = frozenset(sp.key for sp in spans if lo < sp.start < hi)  # "X's favourite restaurant in Paris is Y"
    detail = frozenset(m.group() for m in re.finditer(r"[a-z][a-z'-]+", masked)
                       if m.group() not in _STOP and m.group() not in _MONTHS and m.group() not in _TITLES
                       and not _covered(covered, m.start()))
    vpos = pos[spans.index(value)]
    described = re.search(r"((?:[a-z][a-z'-]+\s+){1,2})$", masked[:vpos])  # "a blue Volvo", "a grey Tesla"
    of_value = frozenset(described.group(1).split()) if described else frozenset()
    # in the clause holding the fact, not verbs of change: "replaced X as CFO", "who joined with Y"
    qualifiers = frozenset(m.group() for m in re.finditer(r"[a-z][a-z'-]+", masked[:limit])
                           if m.group() in detail and m.group() not in of_value and m.group() not in _LINKING
                           and m.group() not in _AUXILIARIES)
    return Fact(subject=f"{subject.text}'s {whose}" if whose else subject.text, relation=_name(rels, subject_key),
                relations=frozenset(r.name for r in rels), value=value.text, subject_key=subject_key,
                value_key=value_key(value.text), negated=_NEGATION.search(masked) is not None,
                past=_PAST.search(masked, 0, limit) is not None,
                tail=value is tail and cased(text),  # (all lower case: casing tells nothing)
                loose=loose, others=others,
                detail=detail, period=frozenset(_PERIOD.findall(text)), qualifiers=qualifiers, inner=inner,
                lexical=rels[0].name in _LEXICON_NAMES or rels[0].name.startswith("favourite_"),
                thing=any(sp.start == sp.end == 0 and sp.key == subject.key for sp in other_names),
                changed=_CHANGED.search(masked) is not None,
                replaces=_SWITCH.search(masked) is not None)


_SWITCH = re.compile(r"\b(?:switched|switching|migrated|migrating|moved|moving|changed)(?: over| everything| all)?"
                     r"(?: from § )?(?: to)\b|\breplac(?:ed|ing)\b|\bnow (?:uses?|using)\b")  # "now uses": instead


def keyable(fact: Fact | None) -> TypeGuard[Fact]:
    """May this fact key a memory (so current_value returns it)? Not when it is negated, told as past,
    read loosely, or one of several values a subject holds at once."""
    return fact is not None and not (fact.negated or fact.past or fact.loose or fact.relation in _MULTI)


def _name(rels: list[Relation], subject_key: str) -> str:
    """The attribute's name; "based in" is a head office for a company and a home for anyone else."""
    names_ = [r.name for r in rels]
    if {"headquarters", "home_city"} <= set(names_) and len(names_) == 2 or names_[:2] == ["headquarters",
                                                                                          "home_city"]:
        company = subject_key.split()[-1] in _COMPANY_WORDS
        return "headquarters" if company else "home_city"
    return names_[0]


def shared_relation(a: Fact, b: Fact) -> str | None:
    """The attribute two facts share: the first lexicon group both fit, or None."""
    both = a.relations & b.relations
    if not both:
        return None
    if a.relation == b.relation and a.relation in both:
        return a.relation  # "based in", said of a person by both: a home (as `_name` chose), not a head office
    order = [r.name for r in RELATIONS]
    return min(both, key=lambda n: order.index(n) if n in order else -1)


Verdict = Literal["duplicate", "child_update", "contradiction_fork", "separate", "unknown"]


def compare(old: Fact, new: Fact) -> Verdict:
    """How a new sentence's fact stands to an old one's. Unsure means separate: never invalidate on a guess.
    "unknown": the relations differ but one was only guessed from a noun; the caller compares frames."""
    if shared_relation(old, new) is None:  # ("uses" names no attribute of its own beside another one: unsure)
        return "separate" if old.lexical and new.lexical and "uses" not in old.relations | new.relations else "unknown"
    if old.loose or new.loose:  # only ever a refinement: "a flat near the river in Lisbon"
        same = old.subject_key == new.subject_key and old.value_key == new.value_key and not (
            old.negated or new.negated or old.past or new.past)
        return "child_update" if same and len(new.detail - old.detail) >= 2 else "unknown"
    if old.subject_key != new.subject_key:
        return "separate"  # another subject (twins, sister companies, a manager chain)
    if (old.thing or new.thing) and old.value_key != new.value_key and not (old.changed or new.changed):
        return "separate"  # "Tom owns the payments roadmap" / "Ana owns the payments roadmap": maybe both do
    if old.tail != new.tail and not (shared_relation(old, new) or "").startswith("favourite_"):
        return "separate"  # "Tom's car is red" says nothing about "Tom drives a Toyota"
    if old.past or new.past:
        return "duplicate" if old.value_key == new.value_key and old.past == new.past else "separate"
    if old.value_key == new.value_key:
        if old.negated != new.negated:
            return "contradiction_fork"  # "lives in Lisbon" -> "no longer lives in Lisbon"
        if new.others - old.others or len(new.detail - old.detail) >= 2:
            return "child_update"
        return "duplicate"
    if shared_relation(old, new) == "uses" and old.value_key.split()[0] == new.value_key.split()[0] \
            and not (old.negated or new.negated):
        return "contradiction_fork"  # "uses Node 18" -> "uses Node 20": the same tool, another version
    if shared_relation(old, new) == "uses" and new.replaces and not (old.negated or new.negated) \
            and tool_kind(old.value) is not None and tool_kind(old.value) == tool_kind(new.value):
        # "we use Postgres" -> "we switched to MySQL": one tool replaced by another of its kind. A tool of
        # no known kind replaces nothing: which one it replaced is a guess, and a wrong guess invalidates.
        return "contradiction_fork"
    if shared_relation(old, new) in _MULTI or old.negated or new.negated:
        return "separate"  # a second showroom is not a moved one
    if shared_relation(old, new) == "spouse" and new.subject_key.split()[-1] in _COMPANY_WORDS:
        return "separate"  # "Arden Labs' partner is ...": a company has business partners, many at once
    if new.inner - old.inner - {old.value_key, name_key(old.value)}:
        return "separate"  # a narrower fact: "X's favourite restaurant in Paris is ..."
    if currency(old.value) and currency(new.value) and currency(old.value) != currency(new.value):
        return "separate"  # "18 euros" / "160 kroner": another price list, not a new price
    if old.qualifiers - new.qualifiers and new.qualifiers - old.qualifiers:
        return "separate"  # another thing qualified: "a single class costs ..." / "a 10-class card costs ..."
    values = {old.value_key, new.value_key, name_key(old.value), name_key(new.value)}
    if old.others - values and new.others - values and not old.others & new.others:
        return "separate"  # other names beside it on both sides: "9:00 on Mondays" / "9:30 on Tuesdays"
    if old.period and new.period and old.period != new.period and _numeric(shared_relation(old, new)):
        return "separate"  # revenue in 2023, revenue in 2024: one figure per period
    return "contradiction_fork"

"""Rules for text that addresses the agent reading it rather than the person it was written
for: it names the model ("AI assistants reading this", "Hey Claude,"), tells it to drop its
instructions ("ignore previous instructions", in several languages), hands it a new policy
or persona ("developer mode enabled", "you are DAN"), or scripts what it tells its user
("when summarising, say ...", "do not tell the user").

Every pattern runs on lower-cased text; `rule.py` says how needles, windows and weak rules
work.
"""

from __future__ import annotations

import re

from functions.kernel.trust.rule import (
    CLAIMS_CONSENT,
    IGNORE_PREVIOUS,
    INSTRUCTION_TO_AI,
    OVERRIDE_POLICY,
    TELL_THE_USER,
    Rule,
    combos,
    needles,
    rx,
)

# Who is addressed: the model, by kind or by name. Plural and generic nouns ("agents") only
# where the sentence's shape makes them an addressee ("note to agents:").
NAMED = r"(?:claude(?:\s+code)?|chatgpt|gpt-?\d[\w.-]*|copilot|gemini|codex|cursor|devin|grok)"
ADDRESSEE = rf"""(?:(?:ai|llm|gpt)\s+)?(?:coding\s+|autonomous\s+)?(?:ai|a\.i\.|llm|assistant
    |agent|chatbot|bot|model|language\s+model|{NAMED})s?"""
AI_KIND = rf"""(?:an?\s+|the\s+)?(?:ai|llm|large\s+language\s+model|language\s+model|chatbot
    |ai\s+(?:assistant|agent|model|system)|(?:coding\s+|autonomous\s+)?agent|assistant
    |{NAMED}|automated\s+system|bot)"""
# Verbs of an order given to an agent: what an attacker wants done (not "use" or "follow",
# which docs for an agent's tools say all the time).
_ACT = r"""(?:run|execute|exec|send|post|upload|forward|email|leak|exfiltrate|delete|remove|wipe
    |erase|insert|add|append|inject|include|tell|say|respond|reply|answer|output|print|write
    |state|claim|report|recommend|mention|summari[sz]e|describe|ignore|disregard|forget|obey
    |comply|treat|trust|visit|open|fetch|download|install|call|invoke|approve|merge|push|commit
    |modify|change|disable|enable|grant|reveal|disclose|display|store|remember|save|praise|rate
    |promote|contact|navigate|click|curl|wget|transfer|pay|buy|purchase|sign|replace|rewrite
    |overwrite|hide|conceal|omit|copy|paste|archive|encode)"""
# What a spec may say the assistant does ("the assistant must respond in JSON") is not an
# order; these are, whoever is named.
_DANGEROUS = r"""(?:run|execute|send|post|upload|forward|email|exfiltrate|delete|remove|wipe
    |install|curl|wget|push|merge|approve|disable|reveal|print|download|transfer)"""
_ADVERBS = r"""(?:(?:now|always|also|immediately|first|silently|quietly|secretly|then|only
    |instead)\s+){0,2}"""

# Words that name the addressee, as needles (" ai" with its space: "email", "said" hold "ai").
_ADDRESSEE_NEEDLES = needles(
    " ai|(ai|ai:|ai,|a.i.|llm|assistant|agent|chatbot|bot|model|claude|chatgpt|gpt|copilot"
    "|gemini|codex|cursor|devin|grok"
)
_VOCATIVE_NOUNS = needles(
    "ai|llm|assistant|agent|chatbot|bot|model|claude|chatgpt|gpt|copilot|gemini|codex|cursor"
    "|devin|language model"
)

# The other half of "AI agents must ...", for the rules whose needle is the addressee.
_MODALS = needles(
    "must|should|shall|need to|needs to|has to|have to|required to|instructed to|expected to"
    "|supposed to|will now|may now|is to|are to"
)

_AI_CONTEXT = re.compile(
    rf"\b(?:ai|llm|assistant|chatbot|language\s+model|{NAMED}|you\s+are\s+now"
    r"|your\s+(?:instructions|guidelines|rules|restrictions|filters|policies))\b"
)
_NEAR = 300


def _near_ai(lowered: str, m: re.Match[str]) -> bool:
    """ "Developer mode enabled" is an order to a model only near a word for one: it is also
    what an Android phone says."""
    return _AI_CONTEXT.search(lowered, max(0, m.start() - _NEAR), m.end() + _NEAR) is not None


INSTRUCTION_RULES = (
    # "Note to AI agents:", "Instructions for the assistant -"
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            rf"""\b(?:note|message|instructions?|notice|attention|reminder|directive|memo
            |important|warning|request|hint|tip|p\.?s\.?)s?\s+(?:to|for)\s+(?:all\s+|any\s+|the\s+)?
            {ADDRESSEE}\s*(?:[:,\-—)]|\b(?:reading|processing|that|who|which)\b)"""
        ),
        combos(
            needles(
                "note|notes|message|instructions|instruction|notice|attention|reminder|directive"
                "|memo|important|warning|request|hint|tip|p.s.|ps"
            ),
            (" to", " for"),
        ),
        also=_ADDRESSEE_NEEDLES,
        lead=4,
        reach=120,
    ),
    # "If you are an AI assistant", "when you're an LLM" (not "an AI researcher")
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            rf"""\b(?:if|when|since|as|because|in\s+case)\s+you(?:\s+are|'re|’re)\s+{AI_KIND}s?\b
            (?!\s*(?:researchers?|engineers?|developers?|compan(?:y|ies)|startups?|enthusiasts?
            |practitioners?|teams?|users?|products?|vendors?|builders?|experts?|skeptics?|fans?
            |beginners?|professionals?|leaders?|ethicists?|labs?|of\b|for\b|acting\b
            |representing\b|working\s+for\b|licensed\b|registered\b))"""
        ),
        combos(needles("if|when|since|as|because|case"), (" you are", " you're", " you’re")),
        lead=8,
        reach=120,
    ),
    # "AI assistants reading this page", "if an LLM is processing this"
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            rf"""\b(?:(?:if|when)\s+(?:an?\s+|any\s+)?)?(?:ai|llms?|language\s+models?|chatbots?
            |ai\s+(?:assistant|agent|model|system|tool|crawler|bot)s?|(?:coding|autonomous|automated)
            \s+(?:assistant|agent|system)s?|assistants?|agents?|models?|{NAMED})\s+
            (?:that\s+(?:is|are)\s+|who\s+(?:is|are)\s+|which\s+(?:is|are)\s+|is\s+|are\s+)?(?:now\s+)?
            (?:reading|processing|parsing|summari[sz]ing|analy[sz]ing|viewing|browsing|crawling
            |scraping|ingesting|indexing|reviewing|visiting|accessing|handling|monitoring
            |managing|triaging|answering)\s+(?:this|these)\b"""
        ),
        combos(
            needles(
                "reading|processing|parsing|summarizing|summarising|analyzing|analysing|viewing"
                "|browsing|crawling|scraping|ingesting|indexing|reviewing|visiting|accessing"
                "|handling|monitoring|managing|triaging|answering"
            ),
            (" th",),
        ),
        lead=90,
        reach=30,
    ),
    # "Any AI that reads this"
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            r"""\b(?:any|every|all)\s+(?:ai|llms?|language\s+models?|chatbots?|ai\s+(?:assistant
            |agent|model|system)s?|assistants?|agents?|models?)\s+(?:that|which|who)\s+(?:reads?
            |process(?:es)?|sees?|parses?|summari[sz]es?|ingests?|crawls?|visits?)\s+(?:this|these)\b"""
        ),
        needles(
            "that read|that process|that see|that parse|that summar|that ingest|which read"
            "|which process|who read|who process|that crawl|that visit"
        ),
        lead=60,
        reach=40,
    ),
    # "Hey Claude,", "Dear AI:"
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            rf"""(?:^|[\s(\[>*_"'])(?:dear|hey|hi|hello|attention|attn|yo|greetings)[,:!]?\s+
            (?:all\s+)?{ADDRESSEE}\b\s*[,:!.\-—]"""
        ),
        combos(
            needles("dear|hey|hi|hello|attention|attn|yo|greetings"),
            (" ", ", ", ": ", "! "),
            _VOCATIVE_NOUNS,
        ),
        lead=2,
        reach=80,
    ),
    # "Assistant, please ...", "Claude, the user wants you to ...": a vocative opening a
    # sentence, followed by an order or by "you"
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            rf"""(?:^|(?<=[.!?>:\n])|(?<=[.!?>:]\s))\s*(?:(?:ai|llm)\s+)?(?:ai|llm|assistant|agent
            |chatbot|language\s+model|{NAMED})s?\s*,\s+(?:please\b|you\b|your\b|the\s+user\s+
            (?:wants|asked|says|needs)\b|{_ADVERBS}{_ACT}\b)"""
        ),
        combos(
            needles(
                "ai|llm|assistant|agent|chatbot|model|claude|code|chatgpt|copilot|gemini|codex"
                "|cursor|devin|grok|assistants|agents|llms|models"
            ),
            (",",),
        ),
        lead=30,
        reach=60,
    ),
    # "AI agents must run ...", "Claude should immediately send ..." (not "LLMs must never be")
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            rf"""\b(?:ai\s+(?:assistant|agent|model|system|tool|coding\s+agent)s|llms|language\s+models
            |chatbots|(?:coding|autonomous)\s+agents|{NAMED})\s+(?:(?:on|in|at|for|of|visiting
            |reading|using)\s+(?:this|these|the|our)\s+[\w.-]+\s+)?(?:must|should|shall|needs?\s+to
            |has\s+to|have\s+to|(?:is|are)\s+(?:required|instructed|expected|supposed)\s+to
            |will\s+now|may\s+now|(?:is|are)\s+to)\s+{_ADVERBS}{_ACT}\b"""
        ),
        needles(
            "ai assistants|ai agents|ai models|ai systems|ai tools|ai coding|llms|language models"
            "|chatbots|coding agents|autonomous agents|claude|chatgpt|gpt|copilot|gemini|codex"
            "|cursor|devin|grok"
        ),
        also=_MODALS,
        lead=4,
        reach=160,
    ),
    # "the AI agent must run ...": one agent named, an action no spec asks of it
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            rf"""\b(?:the|any|an?)\s+(?:ai|llm)(?:\s+(?:coding\s+)?(?:assistant|agent|model|system))?
            \s+(?:must|should|shall|needs?\s+to|has\s+to|is\s+(?:required|instructed|expected|supposed)
            \s+to|will\s+now|is\s+to)\s+{_ADVERBS}{_DANGEROUS}\b"""
        ),
        needles("the ai|any ai|an ai|the llm|any llm|an llm|a llm"),
        also=_MODALS,
        lead=4,
        reach=140,
    ),
    # French, Spanish, German: "si tu es une IA", "nota para la IA:", "wenn du eine KI bist"
    Rule(
        INSTRUCTION_TO_AI,
        rx(
            r"""\b(?:si|lorsque|quand)\s+(?:tu\s+es|vous\s+êtes)\s+(?:une?\s+)?(?:ia|intelligence
            \s+artificielle|assistant|agent|modèle\s+de\s+langage|llm|chatbot)\b
            |\bnote\s+(?:pour|à)\s+(?:l'|l’|les\s+|la\s+)?(?:ia|assistants?|agents?)\s*[:,]
            |\bsi\s+(?:eres|usted\s+es)\s+(?:una?\s+)?(?:ia|inteligencia\s+artificial|asistente
            |agente|modelo\s+de\s+lenguaje|llm|chatbot)\b
            |\bnota\s+(?:para|a)\s+(?:la\s+|las\s+|el\s+|los\s+)?(?:ia|asistentes?|agentes?)\s*[:,]
            |\b(?:wenn|falls)\s+(?:du|sie)\s+(?:eine?\s+)?(?:ki|künstliche\s+intelligenz|ki-assistent
            |assistent|ki-agent|agent|sprachmodell|llm|chatbot)\s+(?:bist|sind)\b
            |\bhinweis\s+(?:für|an)\s+(?:die\s+|den\s+|alle\s+)?(?:ki|ki-assistenten|assistenten
            |agenten|ki-agenten)\s*[:,]"""
        ),
        needles(
            "si tu es|si vous êtes|lorsque tu|lorsque vous|quand tu|quand vous|note pour|note à"
            "|si eres|si usted|nota para|nota a|wenn du|falls du|wenn sie|falls sie|hinweis für"
            "|hinweis an"
        ),
        lead=4,
        reach=120,
    ),
)

# The second half of an English "ignore ..." phrase: "ignore" alone is everywhere in code.
_IGNORED_THINGS = needles(
    "previous|prior|preceding|above|earlier|former|foregoing|original|initial|old |existing"
    "|past |system|developer|given|before|everything|you were|you've|you have|your "
    "|instructions|rules|guidelines|directives|prompt"
)

IGNORE_RULES = (
    # "Ignore all previous instructions", "disregard the prior system prompt"
    Rule(
        IGNORE_PREVIOUS,
        rx(
            r"""\b(?:ignore|disregard|forget|do\s+not\s+follow|don'?t\s+follow|stop\s+following
            |no\s+longer\s+follow)\s+(?:(?:all|any|each|every|the|of|your|my|these|those
            |its)\s+){0,3}(?:(?:previous|prior|preceding|above|earlier|former|foregoing|original
            |initial|old|existing|past|system|developer|given)\s+(?:(?:and|or|&)\s+\w+\s+)?)+
            (?:\w+\s+){0,2}?(?:instructions?|prompts?|directions|directives?|guidelines?|guidance
            |orders|rules|context|programming|constraints|polic(?:y|ies))\b"""
        ),
        needles("ignor|disregard|forget|t follow|stop following|longer follow"),
        also=_IGNORED_THINGS,
        lead=4,
        reach=200,
    ),
    # "Ignore the above.", "forget everything you were told", "ignore the instructions you
    # were given earlier", "disregard your system prompt" (not "ignore the above warning")
    Rule(
        IGNORE_PREVIOUS,
        rx(
            r"""\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+|anything\s+)?(?:of\s+)?
            (?:the\s+)?(?:above|before\s+this|said\s+(?:above|before)|prior\s+to\s+this)
            (?=\s*(?:[.,;:!]|$|and\b|then\b|instead\b|completely\b|entirely\b))
            |\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:that\s+|what\s+)?you(?:'ve|\s+have)?
            \s+(?:been\s+|were\s+)?(?:told|given|instructed|taught|programmed)\b
            |\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:of\s+)?(?:the|your|any)\s+(?:\w+\s+)?
            (?:instructions|rules|guidelines|directives|prompts?)\s+(?:(?:that\s+)?you(?:'ve|\s+have)?
            \s+(?:were\s+|been\s+)?(?:given|received|got|read)|(?:given|received|provided|stated
            |written|listed)\s+(?:to\s+you\s+)?(?:earlier|before|previously|above|so\s+far))\b
            |\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:of\s+)?(?:your|the\s+system'?s?)\s+
            (?:instructions|rules|guidelines|programming|training|system\s+prompt|directives)\b"""
        ),
        needles("ignor|disregard|forget"),
        also=_IGNORED_THINGS,
        lead=4,
        reach=220,
    ),
    # French, Spanish, German, Russian, Italian, Portuguese, Chinese
    Rule(
        IGNORE_PREVIOUS,
        rx(
            r"""\b(?:ignore[zr]?|oublie[zr]?|ne\s+(?:tiens|tenez|tenir)\s+(?:plus\s+|pas\s+)?compte
            \s+(?:de|des)|fai(?:s|tes)\s+abstraction\s+(?:de|des))\s+(?:toutes?\s+|tous\s+)?
            (?:les\s+|tes\s+|vos\s+|ces\s+)?(?:instructions|consignes|directives|règles|ordres
            |indications)\s+(?:précédentes|antérieures|ci-dessus|d'avant|reçues|données)
            |\b(?:ignore[zr]?|oublie[zr]?)\s+tout\s+ce\s+qui\s+(?:précède|a\s+été\s+dit)
            |\b(?:ignora|ignore|ignoren|ignorar|olvida|olvide|olviden|olvidar|haz\s+caso\s+omiso
            \s+(?:a|de)|no\s+hagas\s+caso\s+(?:a|de))\s+(?:todas\s+)?(?:las\s+|tus\s+|sus\s+|estas\s+)?
            (?:instrucciones|indicaciones|órdenes|reglas|directrices|directivas)\s+(?:anteriores
            |previas|precedentes|de\s+arriba|dadas)
            |\bolvida\s+todo\s+lo\s+(?:anterior|que\s+te\s+(?:dijeron|han\s+dicho))
            |\b(?:ignoriere|ignorier|ignorieren\s+sie|vergiss|vergessen\s+sie|missachte|missachten
            \s+sie|beachte\s+nicht)\s+(?:alle\s+|sämtliche\s+|die\s+|deine\s+|ihre\s+)?(?:vorherigen
            |vorigen|bisherigen|obigen|früheren|vorangegangenen|vorhergehenden|alten
            |ursprünglichen)\s+(?:anweisungen|instruktionen|befehle|regeln|vorgaben|anordnungen)
            |\bvergiss\s+alles,?\s+was\s+(?:dir\s+)?(?:vorher|zuvor|bisher)
            |(?:игнорируй(?:те)?|забудь(?:те)?|не\s+обращай(?:те)?\s+внимания\s+на)\s+(?:все\s+)?
            (?:предыдущие|прежние|вышеуказанные|предшествующие)\s+(?:инструкции|указания|команды
            |правила)
            |\bignora\s+(?:tutte\s+)?(?:le\s+)?istruzioni\s+precedenti
            |\bignore\s+(?:todas\s+)?(?:as\s+)?instruç(?:õ|o)es\s+anteriores
            |(?:忽略|无视|忘记|忘掉)(?:掉)?(?:之前|以上|上面|前面|先前|此前)(?:的)?(?:所有)?(?:的)?
            (?:指令|指示|说明|提示|规则)"""
        ),
        # Found in the UTF-8 bytes with only ASCII letters folded, so no needle may open with
        # a non-ASCII letter that has a capital: "Игнорируй" holds "гнорир".
        needles(
            "ignor|oubli|compte de|compte des|abstraction|olvid|caso omiso|hagas caso|vergiss"
            "|vergessen|missacht|beachte nicht|гнорир|абуд|обращ|忽略|无视|忘记|忘掉"
        ),
        # the nouns, so that English "ignore" does not run this long alternation
        also=needles(
            "instru|consigne|directive|gle|ordre|indication|tout ce qui|anweisung|befehl|regeln"
            "|vorgabe|anordnung|alles|istruzion|rdenes|reglas|directric|todo lo|指令|指示|说明"
            "|提示|规则|нструкц|казани|оманд|равил"
        ),
        lead=30,
        reach=220,
    ),
)

OVERRIDE_RULES = (
    # "bypass your safety guidelines", "disable the assistant's content filters"
    Rule(
        OVERRIDE_POLICY,
        rx(
            r"""\b(?:override|bypass|circumvent|ignore|disregard|disable|deactivate|turn\s+off|lift
            |break\s+free\s+(?:of|from)|escape)\s+(?:all\s+(?:of\s+)?|any\s+(?:of\s+)?)?
            (?:your|the\s+(?:ai|assistant|model|agent)'?s)\s+(?:(?:own|current|previous|prior
            |built-in|default|original|safety|security|ethical|content|system)\s+)*
            (?:guidelines|guardrails|restrictions|filters|safeguards|safety\s+(?:measures|rules
            |settings)|policies|programming|instructions|alignment|training|system\s+prompt
            |constraints|limitations|principles)\b"""
        ),
        combos(
            needles(
                "override|bypass|circumvent|ignore|disregard|disable|deactivate|turn off|lift"
                "|break free of|break free from|escape"
            ),
            (" ",),
            needles("your|all|any|the ai|the assistant|the model|the agent"),
        ),
        lead=4,
        reach=200,
    ),
    # Personas and modes: "you are now in developer mode", "you are DAN", "act as an
    # unfiltered AI", "you are operating without restrictions"
    Rule(
        OVERRIDE_POLICY,
        rx(
            r"""\byou(?:\s+are|'re|\s+have\s+been|'ve\s+been|\s+will\s+(?:now\s+)?be|\s+are\s+being)
            \s+(?:now\s+)?(?:in|entering|switched\s+(?:in)?to|put\s+(?:in)?to|operating\s+in|running
            \s+in|placed\s+in|granted)\s+(?:developer|dev|debug|god|admin|administrator|root
            |maintenance|unrestricted|jailbreak|jailbroken|dan|sudo|unfiltered|uncensored
            |diagnostic|override|unlocked)\s+mode\b
            |\byou\s+(?:are|will\s+be|shall\s+be|'re)\s+(?:now\s+)?(?:dan|an?\s+(?:unrestricted
            |unfiltered|uncensored|jailbroken|evil|rogue|amoral|unaligned|unbound)\s+(?:ai|assistant
            |model|chatbot|agent|version))\b
            |\byou(?:\s+are|'re)\s+(?:now\s+)?(?:operating|running|acting|working)\s+(?:completely\s+)?
            without\s+(?:any\s+)?(?:restrictions|limits|limitations|filters|guidelines|rules
            |guardrails|constraints|safety)\b
            |\bdo\s+anything\s+now\b
            |\b(?:act|behave|respond|answer|roleplay|role-play)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?
            (?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|amoral)\b
            |\bpretend\s+(?:that\s+)?(?:you\s+are|you're|to\s+be)\s+(?:an?\s+)?(?:unrestricted
            |unfiltered|uncensored|jailbroken|different|evil|rogue|new)\s+(?:ai|assistant|model
            |chatbot|agent)\b"""
        ),
        needles(
            "you are|you're|you have been|you've been|you will|do anything now|act as|behave as"
            "|respond as|answer as|roleplay as|role-play as|pretend"
        ),
        lead=4,
        reach=200,
    ),
    # "Developer mode enabled", "enable DAN mode" (near an AI word: see _near_ai)
    Rule(
        OVERRIDE_POLICY,
        rx(
            r"""\b(?:developer|dan|jailbreak|god|unrestricted|unfiltered|uncensored|sudo)\s+mode
            \s+(?:is\s+|has\s+been\s+)?(?:now\s+)?(?:enabled|activated|engaged|unlocked|on)\b
            |\b(?:enable|activate|enter|switch\s+to|turn\s+on|engage|unlock)\s+(?:developer|dan
            |jailbreak|god|unrestricted|unfiltered|uncensored|sudo)\s+mode\b"""
        ),
        combos(
            needles("developer|dan|jailbreak|god|unrestricted|unfiltered|uncensored|sudo"),
            (" mode",),
        ),
        check=_near_ai,
        lead=20,
        reach=60,
    ),
    # "New instructions:", "these instructions supersede ...", "your instructions have been
    # revoked", "the real instructions are at ...", "admin override"
    Rule(
        OVERRIDE_POLICY,
        rx(
            r"""\b(?:new|updated|revised|real|actual|true|secret|hidden|additional|priority
            |overriding)\s+(?:system\s+)?(?:instructions?|directives?|system\s+prompt|orders)\s*
            (?::|(?:for|to)\s+(?:the\s+)?(?:ai|assistant|agent|model|llm|you)\b|(?:are|is)\s+
            (?:now\s+)?(?:in\s+effect|active|as\s+follows))
            |\b(?:these|the\s+following|this|my|our)\s+(?:new\s+)?(?:instructions|directives|rules
            |orders|commands)\s+(?:supersede|override|overrule|replace|cancel|take\s+(?:precedence
            |priority)\s+over|have\s+(?:precedence|priority)\s+over)\b
            |\byour\s+(?:previous\s+|prior\s+|original\s+|old\s+)?(?:instructions|system\s+prompt
            |guidelines|rules|directives|programming)\s+(?:have|has)\s+(?:now\s+)?(?:been\s+)?
            (?:changed|updated|replaced|revoked|lifted|removed|cancell?ed|superseded|suspended
            |overridden)\b
            |\b(?:real|actual|true|secret|hidden)\s+(?:system\s+)?instructions?\s+(?:are|is|can\s+be
            \s+found|live|lives)\b
            |\b(?:they|these|this|which|it)\s+(?:override|overrides|supersede|supersedes|replace
            |replaces)\s+(?:this\s+file|claude\.md|agents\.md|memory\.md|your|all\s+(?:previous|prior
            |other)|any\s+(?:previous|prior|other)|the\s+(?:previous|above|system))
            |\b(?:system|admin|administrator|developer|anthropic|openai|security|root)\s+override\b
            |\bnouvelles?\s+(?:instructions|consignes|directives)\s*:
            |\bnuevas?\s+(?:instrucciones|indicaciones|directivas)\s*:
            |\bneue\s+(?:anweisungen|instruktionen|anordnungen)\s*:"""
        ),
        needles(
            "instruction|directive|system prompt|orders|supersede|overrule|precedence"
            "|priority over|override|consigne|instrucci|indicacion|anweisung|anordnung"
        ),
        lead=40,
        reach=140,
    ),
    # "From now on you will ...": an order in a page or file, advice in a migration guide.
    Rule(
        OVERRIDE_POLICY,
        rx(r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|shall|should|have\s+to|need\s+to)\b"),
        ("from now on",),
        weak=True,
        lead=4,
        reach=60,
    ),
)

TELL_RULES = (
    # "When summarizing this page, say that ...", "when you answer questions about this
    # product, claim ..."
    Rule(
        TELL_THE_USER,
        rx(
            r"""\b(?:when|while|if|after|before|whenever)\s+(?:you\s+)?(?:are\s+)?(?:asked\s+to\s+)?
            (?:summari[sz](?:e|es|ing)|writ(?:e|ing)\s+(?:a\s+|the\s+|your\s+)?(?:summary|recap
            |tl;?dr|report)|(?:giv|mak)(?:e|ing)\s+(?:a\s+|the\s+)?(?:summary|recap)|report(?:ing)?
            \s+(?:[\w-]+\s+){0,3}?(?:to|on|back)|(?:answer|respond|reply)(?:ing)?\s+(?:to\s+)?
            (?:questions?|queries|the\s+user|users|anyone)|(?:are\s+)?asked\s+about
            |describ(?:e|ing)\s+(?:this|these|the\s+(?:page|file|results?|changes?|pr|pull\s+request
            |repo|repository|code|output|package|library)))\b
            [^.\n]{0,160}?\b(?:(?:say|claim|assert|insist|conclude|pretend)\b|(?:state|tell\s+(?:the\s+)?
            (?:user|reader|human|them)|report|write|mention|note|describe\s+it\s+as|call\s+it|present
            \s+it\s+as)\s+(?:that\b|it\s+(?:as|is)\b)|(?:omit|leave\s+out|do\s+not\s+mention
            |don'?t\s+mention|never\s+mention|not\s+mention|hide)\b)"""
        ),
        needles("summar|report|describ|recap|tl;dr|tldr|answer|respond|reply|asked about"),
        also=needles(
            "say|claim|assert|insist|conclude|pretend|state that|state it|tell|report that"
            "|report it|write that|write it|mention that|mention it|note that|note it"
            "|describe it as|call it|present it as|omit|leave out|not mention|t mention|hide"
        ),
        lead=40,
        reach=300,
    ),
    # Keeping something from the user: "do not tell the user about ...", "without telling
    # the user", "do not mention this note"
    Rule(
        TELL_THE_USER,
        rx(
            r"""\b(?:do\s+not|don'?t|never|must\s+not|should\s+not|shouldn'?t)\s+(?:ever\s+)?
            (?:tell|inform|let\s+(?:the\s+)?(?:user|human)\s+know|mention\s+(?:this|it|that|these
            |anything)\s+to|reveal\s+(?:this|it|that|these|anything)\s+to|disclose\s+(?:this|it|that
            |these|anything)\s+to)\s+(?:the\s+)?(?:user|human|developer|operator|owner)s?\b
            (?:\s+(?:about|that|of|what|this|these|anything|you|we|it|when|if|whether)\b
            |\s*[.,;!]|\s*$)
            |\bwithout\s+(?:telling|informing|letting\s+(?:the\s+)?(?:user|human)\s+know)\s+
            (?:the\s+)?(?:user|human)?
            |\b(?:keep|make)\s+(?:this|it|these)\s+(?:a\s+)?(?:secret|hidden|confidential)\s+from
            \s+(?:the\s+)?(?:user|human)
            |\b(?:the\s+)?user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|find\s+out|learn
            |be\s+told)\b
            |\b(?:do\s+not|don'?t|never)\s+(?:mention|reveal|disclose|acknowledge|reference|repeat
            |show|quote)\s+(?:this|these)\s+(?:note|instruction|message|comment|text|line|rule
            |memory|section|paragraph)s?\b
            |\bne\s+(?:dis|dites)\s+(?:pas|rien|jamais)\s+à\s+l['’]utilisateur
            |\bno\s+(?:le\s+)?(?:digas|diga|menciones)\s+(?:nada\s+)?(?:al|a\s+el)\s+usuario
            |\b(?:sag|sage|sagen\s+sie)\s+(?:dem|der)\s+(?:benutzer|nutzer|anwender)(?:in)?\s+
            (?:nicht|nichts)"""
        ),
        combos(
            ("not ", "n't ", "never "),
            needles(
                "tell|inform|let|mention|reveal|disclos|acknowledge|reference|repeat|show|quote"
            ),
        )
        + needles(
            "without telling|without informing|without letting|secret from|hidden from"
            "|confidential from|user must|user should|utilisateur|usuario|benutzer|nutzer"
            "|anwender"
        ),
        lead=30,
        reach=120,
    ),
    # "In your summary, state that ..."
    Rule(
        TELL_THE_USER,
        rx(
            r"""\b(?:in|at\s+the\s+(?:end|start|beginning)\s+of)\s+your\s+(?:summary|response|answer
            |reply|review|report|final\s+answer|output|message)s?\b[^.\n]{0,80}?\b(?:say|state|claim
            |mention|include|add|insert|write|recommend|tell|report|assert|append|link|praise)\b"""
        ),
        combos(
            ("your ",),
            needles("summar|respons|answer|repl|review|report|final|output|message"),
        ),
        lead=30,
        reach=140,
    ),
    # "Tell the user that ...", "recommend this package as the safest": a code comment says
    # the first to a programmer, so it is weak
    Rule(
        TELL_THE_USER,
        rx(
            r"""\b(?:tell|inform|assure|reassure|convince|remind|persuade)\s+(?:the\s+)?(?:user
            |human|reader)s?\s+(?:that|it'?s|everything|nothing|the\s+(?:code|build|tests?|pr|change
            |package|site|link|file|operation|project|repo|library))\b
            |\b(?:recommend|describe|present|rate|endorse)\s+(?:this|our)\s+(?:package|library
            |product|repo(?:sitory)?|extension|site|website|tool|service|plugin|app|project
            |company)\s+(?:as\s+(?:the\s+)?(?:best|safest|most|only|fully|completely|trusted|secure
            |safe|official)|to\s+(?:the\s+)?user)
            |\b(?:dis|dites)\s+à\s+l['’]utilisateur\s+que
            |\bdile\s+al\s+usuario\s+que
            |\b(?:sag|sage|sagen\s+sie)\s+(?:dem|der)\s+(?:benutzer|nutzer|anwender)(?:in)?,?\s+dass"""
        ),
        combos(
            needles("tell|inform|assure|reassure|convince|remind|persuade"),
            (" ",),
            needles("the user|user|the human|human|the reader|reader"),
        )
        + combos(needles("recommend|describe|present|rate|endorse"), (" this", " our"))
        + needles("utilisateur|usuario|benutzer|nutzer|anwender"),
        weak=True,
        lead=25,
        reach=160,
    ),
    # "The user has already approved this": weak, OAuth docs say it of a person
    Rule(
        CLAIMS_CONSENT,
        rx(
            r"""\b(?:the\s+)?(?:user|owner|operator|admin(?:istrator)?)\s+(?:has\s+)?(?:already\s+)?
            (?:explicitly\s+)?(?:pre-?)?(?:approved|authori[sz]ed|consented\s+to|agreed\s+to
            |confirmed|permitted|allowed|whitelisted|signed\s+off\s+on)\s+(?:this|these|all|you|it
            |every|any|the\s+(?:following|action|actions|request|transfer|deletion|change|changes
            |command|commands))\b"""
        ),
        needles(
            "approved|authorized|authorised|consented|agreed to|confirmed|permitted|allowed"
            "|whitelisted|signed off"
        ),
        weak=True,
        lead=60,
        reach=80,
    ),
)

RULES: tuple[Rule, ...] = (*IGNORE_RULES, *INSTRUCTION_RULES, *OVERRIDE_RULES, *TELL_RULES)

"""Role markers and hidden instructions: text dressed as a turn of the conversation the model
is having (chat-template tokens, a `<system>` block, "Human: ... Assistant: Sure, I will"),
and orders in HTML comments, which a reader of the rendered page never sees.
"""

from __future__ import annotations

import re

from functions.kernel.trust.addressing import ADDRESSEE, AI_KIND
from functions.kernel.trust.mentions import TEMPLATE, Lowered
from functions.kernel.trust.rule import ROLE_MARKER, Rule, needles, rx


def _prose_inside(lowered: str, m: re.Match[str]) -> bool:
    """A <system> tag around words (a forged block), not around a value (Maven's
    `<system>GitHub</system>`, a config's `<assistant>on</assistant>`)."""
    if m.group().startswith("</"):
        a = lowered.rfind(">", 0, m.start()) + 1
        inside = lowered[max(a, m.start() - 300) : m.start()]
    else:
        b = lowered.find("<", m.end())
        inside = lowered[m.end() : min(b if b >= 0 else len(lowered), m.end() + 300)]
    return len(inside.split()) >= 4


RULES = (
    # ChatML, Llama, Gemma and other chat-template tokens
    Rule(
        ROLE_MARKER,
        rx(r"<\|[a-z_]{2,24}\|>|<(?:start|end)_of_turn>|\[/?inst\]|<</?sys>>"),
        ("<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "_of_turn>"),
        lead=2,
        reach=30,
    ),
    # <system>...</system>, <instructions>, <admin_instructions>, <assistant>
    Rule(
        ROLE_MARKER,
        rx(
            r"""</?(?:system(?:[-_](?:prompt|message|reminder|instructions?|note|override))?
            |instructions?|(?:admin|developer|claude|ai|important)[-_]instructions?|assistant|human
            |sys)(?=[\s>/])[^<>\n]{0,80}>"""
        ),
        needles(
            "<system|</system|<instruction|</instruction|<admin_|</admin_|<admin-|</admin-"
            "|<developer_|</developer_|<developer-|</developer-|<claude_|</claude_|<claude-"
            "|</claude-|<ai_|</ai_|<ai-|</ai-|<important_|</important_|<important-|</important-"
            "|<assistant|</assistant|<human|</human|<sys>|</sys>|<sys "
        ),
        check=_prose_inside,
        lead=2,
        reach=120,
    ),
    # Bing-chat style "[system](#context)", and "[System message]:" / "Admin note:" headers
    Rule(
        ROLE_MARKER,
        rx(
            r"""\[(?:system|assistant|user)\]\(\#[\w-]+\)
            |^[^\S\n]{0,8}(?:[>*_]+[^\S\n]*)?\[?(?:system|admin|administrator|developer|anthropic
            |openai)\s+(?:message|notice|note|override|prompt|instructions?|directive)\]?\s*:
            |^[^\S\n]{0,8}\[(?:system|admin|administrator|developer|root|sudo|operator)\]\s*:"""
        ),
        needles(
            "[system](|[assistant](|[user](|system message|system notice|system note"
            "|system override|system prompt|system instruction|system directive|admin message"
            "|admin notice|admin note|admin override|admin prompt|admin instruction"
            "|admin directive|administrator |developer message|developer notice|developer note"
            "|developer override|developer prompt|developer instruction|developer directive"
            "|anthropic |openai |[system]|[admin]|[administrator]|[developer]|[root]|[sudo]"
            "|[operator]"
        ),
        lead=15,
        reach=60,
    ),
)

# ---- conversation turns at the start of a line ----------------------------------------------
_ROLES = ("human", "user", "assistant", "ai", "system", "instruction", "claude", "chatgpt", "gpt")
TURN_NEEDLES = tuple(f"{role}{bold}:" for role in _ROLES for bold in ("", "**", "__"))
_TURN = re.compile(
    r"""^[ \t]*(?:[>*_\#]+[ \t]*)*(?:\*\*|__)?(human|user|assistant|ai|system|instruction|claude
    |chatgpt|gpt)(?:\*\*|__)?[ \t]*:(?:\*\*|__)?[ \t]*([^\n]*)$""",
    re.M | re.X,
)
_SPEAKERS = frozenset({"assistant", "ai", "claude", "chatgpt", "gpt"})
# A forged turn speaks as the assistant ("Sure, I will ..."); a glossary's "Assistant: a
# person who helps" does not.
_SPEAKS = re.compile(
    r"\b(?:i|i'm|i'll|i've|i'd|me|my|we|we'll|sure|yes|ok|okay|certainly|understood|of\s+course"
    r"|absolutely|done|here's|here\s+is)\b"
)
_PLACEHOLDER = re.compile(r"^(?:\{.*\}|\{\{.*|<[^>]*>|\$\{?\w+\}?|%s|\[[^\]]*\]|\.\.\.|…)?$")
_SYSTEM_ORDER = re.compile(
    r"""^["'“]?\s*(?:you\b|the\s+(?:assistant|ai|model)\b|ignore\b|disregard\b|new\s+(?:instructions
    |rules|policy)\b|override\b|important\b|from\s+now\s+on\b|developer\s+mode\b|always\b|never\b
    |the\s+user\s+(?:has|is)\b|all\s+previous\b)""",
    re.X,
)


def forged_turns(t: Lowered, at: list[int]) -> list[tuple[int, int]]:
    """Forged conversation turns on the lines holding the places `at`: an assistant's turn
    in prose next to a human's ("Human: ... Assistant: Sure, I will ..."), or a "System:"
    (or Alpaca "### Instruction:") line that gives orders. A lone "System: Linux" (envinfo),
    "User: root", a template's "Assistant: {answer}" or a turn in code is not one."""
    speakers: list[tuple[int, int]] = []
    humans: list[tuple[int, int]] = []
    found: list[tuple[int, int]] = []
    for start in sorted({t.text.rfind("\n", 0, p) + 1 for p in at}):
        m = _TURN.match(t.text, start)
        if m is None:
            continue
        role, said = m.group(1), m.group(2).strip()
        if _PLACEHOLDER.match(said) or TEMPLATE.search(said):
            continue
        if t.in_fence(m.start()) or t.in_literal(m.start()):
            continue
        if role in _SPEAKERS and len(said.split()) >= 3 and _SPEAKS.search(said):
            speakers.append(m.span())
        elif role in ("human", "user"):
            humans.append(m.span())
        elif role in ("system", "instruction") and _SYSTEM_ORDER.match(said):
            found.append(m.span())
    if speakers and humans:
        found += speakers + humans
    return sorted(found)


# ---- HTML comments ----------------------------------------------------------------------------
COMMENT_NEEDLE = "<!--"
_COMMENT = re.compile(r"<!--(.{0,2000}?)(?:-->|\Z)", re.S)
_COMMENT_ORDER = re.compile(
    rf"""^\s*(?:(?:note|message|instructions?)\s+(?:to|for)\s+)?(?:the\s+)?{ADDRESSEE}\s*
    (?:(?:instructions?|notes?|directives?|tasks?)\s*)?[:,\-—]
    |\b(?:ai|llm|assistant|agent|claude|chatgpt|copilot|gemini)s?\b[^.\n]{{0,60}}?\b(?:must
    |should|shall|please|always|never|need\s+to|have\s+to|are\s+required\s+to|will\s+now)\b
    |\b(?:if|when)\s+you(?:\s+are|'re)\s+{AI_KIND}""",
    re.X,
)


def hidden_comments(
    t: Lowered, starts: list[int], hits: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """HTML comments (hidden when rendered) that hold an order to the agent: one of `hits`
    (the other rules' hits that count), or words addressed to a model. "<!-- prettier-ignore
    -->", "<!-- Do not edit: generated -->" are not; one in a code block is shown, not hidden."""
    out: list[tuple[int, int]] = []
    for p in sorted(set(starts)):
        m = _COMMENT.match(t.text, p)
        if m is None or t.in_fence(p):
            continue
        a, b = m.span()
        if t.in_inline_code(a, b):
            continue
        if any(a <= s < b for s, _e in hits) or _COMMENT_ORDER.search(m.group(1)):
            out.append((a, b))
    return out

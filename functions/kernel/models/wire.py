"""The two chat wire formats the providers speak, as typed messages: OpenAI's chat
completions (OpenAI, Azure, Gemini's and OpenRouter's compatible endpoints, Ollama, vLLM, LM
Studio) and Anthropic's messages (Anthropic, MiniMax). Only the fields we send or read."""

from __future__ import annotations

import msgspec


class ChatMessage(msgspec.Struct, kw_only=True):
    role: str
    content: str


class ChatRequest(msgspec.Struct, kw_only=True):
    model: str
    messages: list[ChatMessage]
    max_tokens: int
    stream: bool
    """Sent, as false: some compatible proxies stream when it is absent (upstream found)."""
    reasoning_effort: str | msgspec.UnsetType = msgspec.UNSET
    """OPENAI_REASONING_EFFORT, only when set (standard chat models refuse the field)."""


class ChatReplyMessage(msgspec.Struct, kw_only=True):
    content: str | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None
    """Thinking models (DeepSeek, Qwen, GLM) may put the answer here and leave content empty."""


class ChatChoice(msgspec.Struct, kw_only=True):
    message: ChatReplyMessage = msgspec.field(default_factory=ChatReplyMessage)


class ChatUsage(msgspec.Struct, kw_only=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatReply(msgspec.Struct, kw_only=True):
    choices: list[ChatChoice] = msgspec.field(default_factory=list)
    usage: ChatUsage | None = None

    def text(self) -> str:
        if not self.choices:
            return ""
        m = self.choices[0].message
        return m.content or m.reasoning or m.reasoning_content or ""


class MessagesRequest(msgspec.Struct, kw_only=True):
    model: str
    max_tokens: int
    system: str
    messages: list[ChatMessage]


class ContentBlock(msgspec.Struct, kw_only=True):
    type: str
    text: str = ""


class MessagesUsage(msgspec.Struct, kw_only=True):
    input_tokens: int = 0
    output_tokens: int = 0


class MessagesReply(msgspec.Struct, kw_only=True):
    content: list[ContentBlock] = msgspec.field(default_factory=list)
    usage: MessagesUsage | None = None

    def text(self) -> str:
        return next((b.text for b in self.content if b.type == "text"), "")

"""The model provider layer: every model call of the memory service goes through a
`ModelClient` (docs/MODELS.md). `settings` reads upstream's variables, `urls` and `wire` are
the two chat formats, `breaker` one provider's circuit breaker, `client` the chain with its
retries and fallbacks, `replies` decodes an answer into a typed record, `usage` keeps calls,
tokens and failures per process in KV, `clients` holds the process's clients. Keyless when no
provider is configured: `enabled` is False and every `ask` answers None, so the caller's
keyless path runs."""

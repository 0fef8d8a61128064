"""Poisoning caught at write (issue 41): every write path classifies a record's words by
where they came from, removes the invisible characters, scrubs the secrets and puts the
verdict on the record (`records.Trust`); a held record is stored but kept out of what feeds
an agent by the read paths. docs/SECURITY.md says what is caught and what is not.

`write_path` is what a write path imports (`from functions.kernel.trust import write_path
as trust`):

    verdict = trust.classify_value(data, trust.source_of_hook(hook_type, data))
    data = trust.stored_value(data)  # sanitize, then scrub
    record.trust = trust.trust_of(verdict, source)

The classifier itself: classify.py (the automaton pass and the decision), rule.py (what a
rule is, the codes), addressing.py, exfiltration.py, markers.py, mentions.py and
invisible.py (the rules); sources.py (who wrote an event's words), verdicts.py (the order
of a write), second_opinion.py (the optional model), counts.py (held counts for status).
A kernel package because the write paths live in four families (memory, replay, team,
bridge) and more.
"""

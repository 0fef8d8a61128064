"""Team memory across machines: records shared with a team (`team/share`, `team/feed`,
`team/profile`), and the mesh that carries them between instances: each instance appends
what it shares to its own TEAM stream, and sources (copies) every peer's TEAM stream over a
NATS leaf link, so JetStream does the moving and an instance that was offline catches up
where it left off. What arrives is applied to the local store: replays are no-ops, versions
of one memory resolve by their version chain, forgets are sticky. Private records are
never written to the TEAM stream, so they never leave the machine."""

"""Git snapshots of memory state: a versioned export of the memory buckets into a git
repository under the data dir (the `git` binary), one commit per snapshot, with a
record-level diff between snapshots and a restore that makes the state equal a snapshot's;
scheduled by cron (SNAPSHOT_ENABLED=true) as the backup upstream users ask for."""

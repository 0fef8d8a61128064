"""The observation index's merge of one change into a block (no server): the folder keeps
the newest version of a record and names the older ones to delete; a forgotten id stays
forgotten, whatever comes after; a writer's new version wins over the one it replaced."""

from __future__ import annotations

from functions.kernel.observation_index import Block, key_of, merge, shard_of


def test_the_folder_keeps_the_newest_version_and_names_the_older_to_delete() -> None:
    block: Block = {}
    assert merge(block, "a", "fold", 10) == []
    assert merge(block, "a", "fold", 10) == []  # folded twice: nothing new
    assert merge(block, "a", "fold", 30) == [10]
    assert merge(block, "a", "fold", 20) == [20]  # an older version met late
    assert block == {"a": 30}


def test_a_forgotten_id_stays_forgotten() -> None:
    block: Block = {"a": 10}
    assert merge(block, "a", "gone", 10) == []
    assert block == {"a": -10}
    assert merge(block, "a", "fold", 10) == [10]  # the folder meets the forgotten message
    assert merge(block, "a", "fold", 40) == [40]  # a late rewrite of it
    assert merge(block, "a", "live", 50) == [50]  # a writer that read it before the forget
    assert block == {"a": -10}
    assert merge(block, "a", "revive", 60) == []  # an import or a restore says so
    assert block == {"a": 60}


def test_a_forget_of_a_version_already_replaced_takes_the_newer_one_too() -> None:
    block: Block = {"a": 30}
    assert merge(block, "a", "gone", 10) == [30]
    assert block == {"a": -30}
    unknown: Block = {}
    assert merge(unknown, "b", "gone", 0) == []
    assert unknown == {"b": 0}


def test_a_writer_s_new_version_wins_over_the_one_it_replaced() -> None:
    block: Block = {"a": 10}
    assert merge(block, "a", "live", 20) == [10]
    assert block == {"a": 20}
    assert merge(block, "a", "live", 15) == [15]  # lost to a newer version
    assert block == {"a": 20}


def test_ids_spread_over_blocks_and_odd_ids_become_keys() -> None:
    shards = {shard_of(key_of(f"obs_{i:024x}")) for i in range(5000)}
    assert len(shards) > 4500  # 65,536 blocks: few collisions at this size
    assert all(s.startswith("s.") and len(s) == 6 for s in shards)
    assert key_of("obs_abc") == "obs_abc"
    assert key_of("an id: with spaces") != "an id: with spaces"  # hashed, as kv_key does

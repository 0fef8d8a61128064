"""The quarantine: what is decided about records after their write verdict (release, hold,
hold by chain), whether a record is held, and the frame around what is read back."""

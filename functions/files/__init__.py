"""Operations on files of the machine the service runs on: an Obsidian export, compressing a
markdown file in place."""

"""Small filesystems made for a fault and removed after it: a size-limited tmpfs (a disk
that fills up) and ext4 on a loop device (a disk whose state at a power cut can be copied).

A power cut, simulated: the loop device holds only what the kernel has written back to it;
pages still dirty in the page cache of the filesystem on top are not in its backing image.
Freeze the writers (SIGSTOP), copy the image, and the copy is the disk as a machine losing
power would leave it: mounting it replays the journal, and a server started on it finds
exactly what had reached the disk. Needs root (mount, losetup) and e2fsprogs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path


class DiskError(RuntimeError):
    pass


def _run(*argv: str) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise DiskError(f"{' '.join(argv)}: {r.stderr.strip() or r.returncode}")
    return r.stdout.strip()


def can_mount() -> str:
    """Why small filesystems cannot be made here ("" when they can)."""
    if os.geteuid() != 0:
        return "mounting a small filesystem needs root"
    for tool in ("mount", "umount", "losetup", "mkfs.ext4"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    return ""


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (`16m`) mounted at `where` for the block's duration."""
    where.mkdir(parents=True, exist_ok=True)
    _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


class LoopDisk:
    """ext4 in an image file, mounted through a loop device."""

    def __init__(self, image: Path, mountpoint: Path) -> None:
        self.image = image
        self.mountpoint = mountpoint
        self.device = ""

    @classmethod
    def make(cls, image: Path, mountpoint: Path, size_mb: int) -> LoopDisk:
        image.parent.mkdir(parents=True, exist_ok=True)
        with image.open("wb") as f:
            f.truncate(size_mb << 20)
        _run("mkfs.ext4", "-q", "-F", str(image))
        return cls(image, mountpoint).mount()

    def mount(self) -> LoopDisk:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.device = _run("losetup", "-f", "--show", str(self.image))
        try:
            _run("mount", self.device, str(self.mountpoint))
        except DiskError:
            self._detach()
            raise
        return self

    def power_cut_copy(self, copy: Path) -> LoopDisk:
        """The disk as it stands (freeze its writers first): a new image, not mounted."""
        shutil.copyfile(self.image, copy)
        return LoopDisk(copy, self.mountpoint.with_name(self.mountpoint.name + "-after-cut"))

    def _detach(self) -> None:
        if self.device:
            subprocess.run(["losetup", "-d", self.device], capture_output=True, check=False)
            self.device = ""

    def unmount(self) -> None:
        if self.device:
            subprocess.run(["umount", str(self.mountpoint)], capture_output=True, check=False)
            if os.path.ismount(self.mountpoint):  # something still holds it open
                subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True)
        self._detach()

"""Real disks for the kind workers: ext4 file systems on loop devices, mounted on the host
where ``e2e/kind.yaml`` maps them into the nodes (``extraMounts`` → ``/mnt/disks/<n>``).

Each disk is a file of a fixed size, allocated up front (``fallocate``), so that its
capacity is real: filling the file system fills it, and the brokers see ENOSPC as they
would on a full disk. The file system has no reserved blocks (``mkfs.ext4 -m 0``).

A mount point that already holds a file system that is not one of ours (a real disk
that a user mounted there, see README.md) is used as it is and never unmounted. Ours are
recognised by their backing file, under ``IMAGES_DIR``; they survive a kept cluster
(``E2E_KEEP=1``) and are reused by the next session.

Needs root (losetup, mount). Every command that fails raises :class:`DiskError` with its
output.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IMAGES_DIR", "Disk", "DiskError", "discard", "prepare", "release"]

ROOT = Path("/var/lib/tidelog-e2e")
IMAGES_DIR = ROOT / "images"


class DiskError(RuntimeError):
    """A disk could not be made, mounted or removed."""


@dataclass(frozen=True)
class Disk:
    """One node disk: where it is mounted on the host, and its backing file when it is
    one of ours (None for a user's own disk, which is left alone)."""

    mount_point: Path
    image: Path | None

    @property
    def owned(self) -> bool:
        return self.image is not None


def _run(*command: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise DiskError(f"{' '.join(command)} failed ({result.returncode}): {output}")
    return result.stdout.strip()


def image_for(mount_point: Path) -> Path:
    """The backing file of the disk mounted at ``mount_point``: one file per mount point,
    named after its path (``/var/lib/tidelog-e2e/disks/worker-1/0`` → ``…-worker-1-0.img``)."""
    return IMAGES_DIR / (str(mount_point).strip("/").replace("/", "-") + ".img")


def _mounted_source(mount_point: Path) -> str | None:
    """The device mounted at ``mount_point``, None when nothing is."""
    result = subprocess.run(
        ["findmnt", "--noheadings", "--output", "SOURCE", "--mountpoint", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        return None
    return result.stdout.strip() or None


def _loop_devices_of(image: Path) -> list[str]:
    """Loop devices backed by ``image``."""
    if not image.exists():
        return []
    listing = _run("losetup", "--noheadings", "--output", "NAME", "--associated", str(image))
    return listing.split()


def prepare(mount_points: list[Path], size: str) -> list[Disk]:
    """Make sure a file system is mounted at every mount point: ours (created, or reused
    from an earlier session) or one that was already there. ``size`` is ``fallocate``'s
    length, e.g. ``1GiB``."""
    IMAGES_DIR.mkdir(parents=True, exist_ok=True)
    prepared: list[Disk] = []
    try:
        for mount_point in mount_points:
            prepared.append(_prepare_one(mount_point, size))
    except (DiskError, OSError):
        with contextlib.suppress(DiskError):  # the first failure is the one to report
            release(prepared)
        raise
    return prepared


def _prepare_one(mount_point: Path, size: str) -> Disk:
    image = image_for(mount_point)
    source = _mounted_source(mount_point)
    if source is not None:
        return Disk(mount_point, image if source in _loop_devices_of(image) else None)
    if not image.exists():
        partial = image.with_suffix(".partial")
        _run("fallocate", "--length", size, str(partial))
        _run("mkfs.ext4", "-q", "-F", "-m", "0", "-L", mount_point.name, str(partial))
        os.replace(partial, image)
    disk = Disk(mount_point, image)
    try:
        loops = _loop_devices_of(image)
        device = loops[0] if loops else _run("losetup", "--find", "--show", str(image))
        mount_point.mkdir(parents=True, exist_ok=True)
        _run("mount", "-t", "ext4", device, str(mount_point))
    except (DiskError, OSError):
        with contextlib.suppress(DiskError):  # the first failure is the one to report
            release([disk])
        raise
    return disk


def release(disks: list[Disk]) -> None:
    """Unmount our disks, detach their loop devices and delete their files and mount
    points, and the directories under ``ROOT`` that this leaves empty; a user's own disks
    stay as they are. Every disk is tried; the failures are raised together."""
    failures = []
    for disk in disks:
        if not disk.owned:
            continue
        try:
            if _mounted_source(disk.mount_point) is not None:
                _run("umount", str(disk.mount_point))
            for device in _loop_devices_of(disk.image):
                _run("losetup", "--detach", device)
            disk.image.unlink(missing_ok=True)
            _remove_empty_directories(disk.mount_point)
        except (DiskError, OSError) as error:
            failures.append(error)
    _remove_empty_directories(IMAGES_DIR)
    if failures:
        raise DiskError("; ".join(str(f) for f in failures))


def discard(mount_points: list[Path]) -> None:
    """Release our disks at ``mount_points`` that an earlier session left behind, so that
    :func:`prepare` makes them empty again; a user's own disks stay as they are."""
    ours = []
    for mount_point in mount_points:
        image = image_for(mount_point)
        source = _mounted_source(mount_point)
        if image.exists() and (source is None or source in _loop_devices_of(image)):
            ours.append(Disk(mount_point, image))
    release(ours)


def _remove_empty_directories(path: Path) -> None:
    """Remove ``path`` and then its parents, up to ``ROOT`` included, while they are
    empty directories under ``ROOT``."""
    while path.is_relative_to(ROOT) and path.is_dir() and not any(path.iterdir()):
        path.rmdir()
        path = path.parent

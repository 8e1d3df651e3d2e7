"""Where autotool keeps its files, and the one way it writes them: to a temporary sibling, then a rename.

`$AUTOTOOL_HOME` (default `~/.cache/autotool`) holds the default bank, cached models and evaluation banks.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def autotool_home() -> Path:
    """`$AUTOTOOL_HOME`, default `~/.cache/autotool`: the default bank, cached models and evaluation banks live here (training runs go to `runs/` under the working folder)."""
    return Path(os.environ.get("AUTOTOOL_HOME") or Path.home() / ".cache" / "autotool")


def default_bank_path() -> Path:
    """`$AUTOTOOL_BANK`, else `$AUTOTOOL_HOME/bank`."""
    return Path(os.environ["AUTOTOOL_BANK"]) if os.environ.get("AUTOTOOL_BANK") else autotool_home() / "bank"


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """A temporary sibling of `target` to write (a file or a folder); when the block ends without an error it
    replaces `target` in one rename, so a reader sees the old version or the new one, never half of one. On
    an error the temporary is removed and `target` stays as it was."""
    target = Path(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    _remove(tmp)
    try:
        yield tmp
        if tmp.is_dir() and target.is_dir():
            shutil.rmtree(target)  # a folder cannot be renamed over a folder that has files
        os.replace(tmp, target)
    finally:
        _remove(tmp)


def atomic_write(target: str | Path, data: str | bytes) -> None:
    """Write `data` (text is UTF-8) to `target` through `atomic_path`."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)

"""Run directories: staged creation, atomic file writes, safe reads and the manifest.

A run directory holds ``experiment.yaml`` (the resolved experiment), ``manifest.json`` (command
line, overrides, versions, commit, config hash, per-stage wall time) and the stage outputs
(``docs/architecture.md`` lists them).

Guarantees
----------
- A command that *creates* a run directory builds it in a hidden staging directory beside the
  target and renames it into place only when every stage succeeded (:func:`staged_run_dir`): a
  failed run leaves nothing at the target, and an existing directory is never mixed with a new
  run. An existing target is refused unless ``force``, which replaces it whole (and only if it is
  a run directory, so ``--force`` cannot delete an unrelated folder).
- Every file is written to a temporary name in its directory, flushed to the disk (``fsync``)
  and renamed into place (:func:`atomic_write`): a crash never leaves a half file that looks
  whole, and a write failure that a library reports in its own way (polars' ``ComputeError``
  for a full disk) is the ``OSError`` it was.
- Files and directories get the permissions the process umask gives (``0o666 & ~umask``), not
  the private ``0o600`` of :func:`tempfile.mkstemp`, so colleagues can read shared runs.
- A file that exists but cannot be read as what it claims to be is an
  :class:`~wormsim.errors.UnreadableFileError` naming the file and the command that rewrites it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from wormsim.errors import ConfigError, UnreadableFileError, WormsimError
from wormsim.provenance import command_line, source_commit, versions

__all__ = [
    "MANIFEST_FILE",
    "completed",
    "STAGE_OUTPUTS",
    "RunDirExists",
    "atomic_write",
    "as_os_error",
    "write_text",
    "write_json",
    "write_parquet",
    "read_parquet",
    "read_json",
    "require_file",
    "read_table",
    "drop_downstream",
    "remove_output",
    "staged_run_dir",
    "staged_dir",
    "is_run_dir",
    "versions",
    "Manifest",
    "Stopwatch",
]

MANIFEST_FILE = "manifest.json"

#: Outputs of each stage, in pipeline order: rewriting a stage removes the later stages' outputs
#: (:func:`drop_downstream`), which would otherwise describe the previous DAG.
STAGE_OUTPUTS: dict[str, tuple[str, ...]] = {
    "workload": ("ops.parquet",),
    "collective": ("dag.parquet",),
    "netsim": (
        "flows.parquet",
        "nodes.parquet",
        "summary.json",
        "ports.parquet",
        "rate_samples.parquet",
        "queue_samples.parquet",
    ),
    "analysis": ("report",),
}


class RunDirExists(WormsimError):
    """The target run directory exists and ``--force`` was not given."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _readable(path: Path, directory: bool = False) -> None:
    """Give ``path`` the permissions a plain ``open``/``mkdir`` would (per the umask)."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


_OS_ERROR = re.compile(r"\(os error (\d+)\)|\[Errno (\d+)\]")


def as_os_error(exc: BaseException, path: Path) -> OSError | None:
    """The ``OSError`` inside an exception a library raised for a failed write (polars wraps
    "No space left on device (os error 28)" in a ``ComputeError``), or ``None`` if it is not one.
    """
    if isinstance(exc, OSError):
        return exc
    text = str(exc)
    found = _OS_ERROR.search(text)
    code = int(found.group(1) or found.group(2)) if found else None
    if code is None and "No space left on device" in text:
        code = errno.ENOSPC
    if code is None:
        return None
    return OSError(code, os.strerror(code), str(path))


def _fsync(path: Path, directory: bool = False) -> None:
    """Flush ``path`` to the disk, so a crash after the rename never leaves an empty file."""
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    except OSError:
        if directory:
            return  # some filesystems do not open directories; the file itself is synced
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def atomic_write(path: Path, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp)`` on a temporary path beside ``path``, ``fsync`` it, then rename it to
    ``path``.

    A failed write leaves nothing (the old ``path``, if any, is untouched), and an I/O failure
    that a library wrapped in its own exception type comes out as the ``OSError`` it was
    (:func:`as_os_error`), so the CLI can give its clean message (a full disk: exit 2).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # name the file asked for, not the temporary one
        if exc.errno == errno.ENOSPC:
            raise _named(exc, path) from None
        raise WormsimError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        writer(tmp)
        _fsync(tmp)
        _readable(tmp)
        os.replace(tmp, path)
        _fsync(path.parent, directory=True)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        os_error = as_os_error(exc, path) if isinstance(exc, Exception) else None
        if os_error is not None and os_error is not exc:
            raise _named(os_error, path) from exc
        if isinstance(exc, OSError) and exc.filename in (tmp_name, str(tmp)):
            raise _named(exc, path) from exc
        raise
    return path


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` as the same kind of ``OSError`` naming ``path`` (not a temporary file)."""
    if exc.filename is not None and Path(exc.filename).name.startswith(f".{path.name}."):
        return type(exc)(exc.errno, exc.strerror, str(path))
    if exc.filename is None:
        return type(exc)(exc.errno, exc.strerror, str(path))
    return exc


def write_text(path: Path, text: str) -> Path:
    """Atomically write UTF-8 text."""
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_json(path: Path, obj: Any) -> Path:
    """Atomically write JSON (indented, keys in insertion order)."""
    return write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def write_parquet(path: Path, df: pl.DataFrame) -> Path:
    """Atomically write a parquet file."""
    return atomic_write(path, lambda p: df.write_parquet(p))


def read_parquet(path: Path, how: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """Read a run-directory table, or say which file is damaged and how to rewrite it.

    Parameters
    ----------
    path : Path
        The parquet file (must exist; check before calling to give a "missing" message).
    how : str
        The command that writes this file, quoted in the error.
    columns : sequence of str, optional
        Columns that must be present (all are read when None).
    """
    try:
        df = pl.read_parquet(path, columns=list(columns) if columns is not None else None)
    except FileNotFoundError:
        raise
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnreadableFileError(
            f"{path} is not a readable parquet table ({first}); it is damaged or was not "
            f"written by wormsim: rerun `{how}` to rewrite it"
        ) from None
    return df


def read_json(path: Path, how: str) -> dict[str, Any]:
    """Read a run-directory JSON object, or say which file is damaged and how to rewrite it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UnreadableFileError(
            f"{path} is not valid JSON ({exc}); rerun `{how}` to rewrite it"
        ) from None
    if not isinstance(data, dict):
        raise UnreadableFileError(f"{path} does not hold a JSON object; rerun `{how}`")
    return data


def require_file(run_dir: Path, name: str, how: str) -> Path:
    """The path of ``name`` in ``run_dir``, which an earlier command must have written.

    Raises
    ------
    ConfigError
        The file is missing; the message names ``how``, the command that writes it.
    """
    path = Path(run_dir) / name
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no {name}; run `{how}` first")
    return path


def read_table(
    run_dir: Path,
    name: str,
    how: str,
    columns: Sequence[str] | None = None,
    schema: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """Read the table ``name`` of a run directory, checked against its contract.

    Parameters
    ----------
    run_dir : Path
        The run directory.
    name : str
        The parquet file in it (e.g. ``ops.parquet``).
    how : str
        The command that writes the file, quoted in every error.
    columns : sequence of str, optional
        Read only these columns (all when None).
    schema : mapping of str to polars data type, optional
        The table's contract: every column must be present with this type.

    Raises
    ------
    ConfigError
        The file is missing.
    UnreadableFileError
        The file is damaged, or does not follow ``schema``.
    """
    df = read_parquet(require_file(run_dir, name, how), how, columns)
    if schema is not None:
        bad = [c for c, dtype in schema.items() if c not in df.columns or df.schema[c] != dtype]
        if bad:
            raise UnreadableFileError(
                f"{Path(run_dir) / name} does not follow its contract (columns missing or of "
                f"the wrong type: {', '.join(bad[:5])}); rerun `{how}` to rewrite it"
            )
    return df


def drop_downstream(run_dir: Path, stage: str) -> None:
    """Remove the outputs of every stage after ``stage`` and forget them in the manifest.

    A stage that rewrites its output calls this: the later stages' outputs described the
    previous one (see :data:`STAGE_OUTPUTS`).
    """
    names = list(STAGE_OUTPUTS)
    later = names[names.index(stage) + 1 :]
    for name in later:
        for f in STAGE_OUTPUTS[name]:
            remove_output(Path(run_dir) / f)
    man = Manifest(run_dir)
    man.drop_stages(later)
    man.save()


def remove_output(path: Path) -> None:
    """Remove a stage output, a file or a directory (such as ``report/``), if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is a directory wormsim wrote (it has a ``manifest.json``)."""
    return (Path(path) / MANIFEST_FILE).is_file()


def _check_target(target: Path, force: bool) -> None:
    if not target.exists() and not target.is_symlink():
        return
    if not target.is_dir():
        raise RunDirExists(f"{target} exists and is not a directory; choose another -o")
    empty = not any(target.iterdir())
    if empty:
        return
    if not force:
        raise RunDirExists(
            f"run directory {target} already exists; choose another -o, or pass --force to "
            "replace it whole"
        )
    if not is_run_dir(target):
        raise RunDirExists(
            f"{target} is not empty and is not a wormsim run directory (no {MANIFEST_FILE}); "
            "--force replaces only run directories: choose another -o"
        )


@contextmanager
def staged_dir(target: Path) -> Iterator[Path]:
    """Yield an empty directory beside ``target``; on success it replaces ``target`` whole (an
    old ``target`` is moved aside, then removed), on failure it vanishes. No checks: callers
    that must not replace foreign data check first (:func:`staged_run_dir`)."""
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(
            tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        )
    except OSError as exc:  # name the directory the user gave, not the staging name
        raise WormsimError(
            f"cannot create {target}: {exc.strerror or exc}; choose another -o"
        ) from None
    try:
        yield staging
        _readable(staging, directory=True)
        if target.exists():
            old = Path(
                tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent)
            )
            os.replace(target, old / "run")
            os.replace(staging, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


#: Run directories this process completed (moved into place), in order; see :func:`completed`.
_COMPLETED: list[Path] = []


def completed(target: Path) -> bool:
    """Whether this process completed the run directory ``target`` (:func:`staged_run_dir`
    moved it into place): after that, an interrupt no longer undoes the run."""
    return Path(target).absolute() in _COMPLETED


@contextmanager
def staged_run_dir(target: Path, force: bool = False) -> Iterator[Path]:
    """Yield a fresh staging directory; on success it becomes ``target``, on failure it vanishes.

    Parameters
    ----------
    target : Path
        The run directory to create.
    force : bool
        Replace an existing run directory whole (never an unrelated non-empty directory).

    Raises
    ------
    RunDirExists
        ``target`` exists (and is not empty) and ``force`` is false, or is not a run directory.
    """
    target = Path(target)
    _check_target(target, force)
    with staged_dir(target) as staging:
        yield staging
        _check_target(target, force)  # unchanged since we started?
    _COMPLETED.append(target.absolute())


class Manifest:
    """``manifest.json`` of a run directory, updated stage by stage."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / MANIFEST_FILE
        if self.path.is_file():
            self.data: dict[str, Any] = read_json(self.path, "wormsim pipeline run --force")
        else:
            self.data = {"created": datetime.now(UTC).isoformat(), "stages": {}}
        self.data["versions"] = versions()
        self.data.setdefault("commit", source_commit())

    def set(self, key: str, value: Any) -> None:
        """Set a top-level field."""
        self.data[key] = value

    def invocation(self, overrides: Sequence[str] = (), argv: Sequence[str] | None = None) -> None:
        """Record the command line as typed and every override it applied."""
        self.data["command"] = command_line(sys.argv if argv is None else argv)
        self.data["overrides"] = list(overrides)

    def stage(self, name: str, wall_s: float, **extra: Any) -> None:
        """Record a stage's wall time and extra facts."""
        self.data.setdefault("stages", {})[name] = {
            "wall_s": round(wall_s, 6),
            "finished": datetime.now(UTC).isoformat(),
            **extra,
        }

    def drop_stages(self, names: Sequence[str]) -> None:
        """Forget stages whose outputs were removed."""
        for name in names:
            self.data.get("stages", {}).pop(name, None)

    def save(self) -> None:
        """Write the manifest atomically."""
        write_json(self.path, self.data)


class Stopwatch:
    """``with Stopwatch() as sw: ...; sw.seconds``."""

    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start

"""What :meth:`stepcast.Client.upload` sends: traces from files, directories
and tar(.gz) archives, each with its rank, found as ``stepcast upload`` finds
them: a directory's files in name order, an archive's members in name order,
and a trace's rank from its ``distributedInfo.rank``, else its position.
Each trace is read (and so checked) here before anything is sent; it is sent
as it is on disk, gzip staying gzip.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tarfile
import tempfile
from contextlib import contextmanager
from typing import Iterator, List, NamedTuple, Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]


class TraceUnit(NamedTuple):
    """One trace to send: the file, what the caller named it, its rank."""

    path: str
    label: str
    rank: int


def trace_rank(path: PathLike) -> Optional[int]:
    """The rank a Kineto trace (plain or gzip) names in ``distributedInfo.rank``,
    or None when it names none. Raises ValueError when the file is not a
    Kineto trace."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            doc = json.load(f)
    except (OSError, EOFError, ValueError) as e:
        raise ValueError(f"'{path}': not a trace: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError(f"'{path}': not a Kineto trace: it has no traceEvents list")
    info = doc.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
        return rank
    return None


def _dir_files(d: str) -> List[str]:
    names = sorted(n for n in os.listdir(d) if not n.startswith("."))
    files = [os.path.join(d, n) for n in names if os.path.isfile(os.path.join(d, n))]
    if not files:
        raise ValueError(f"directory '{d}' holds no trace files")
    return files


def _members(archive: str, tmp: str) -> List[TraceUnit]:
    out = []
    with tarfile.open(archive, "r:*") as tar:
        for m in tar:
            base = os.path.basename(m.name)
            if not m.isfile() or not base or base.startswith("."):
                continue
            dest = os.path.join(tmp, f"m{len(out):06d}")
            src = tar.extractfile(m)
            if src is None:
                continue
            with src, open(dest, "wb") as f:
                shutil.copyfileobj(src, f)
            out.append(TraceUnit(dest, f"{archive}:{m.name}", -1))
    if not out:
        raise ValueError(f"archive '{archive}' holds no trace files")
    return sorted(out, key=lambda u: u.label)


@contextmanager
def trace_units(paths: Sequence[PathLike]) -> Iterator[List[TraceUnit]]:
    """The traces that ``paths`` (files, directories, tar archives) name, each
    with its rank. Archive members are extracted into a temporary directory
    that lives as long as the context. Raises ValueError for a path that is
    no trace, and for two traces claiming one rank."""
    tmp = None
    try:
        found: List[TraceUnit] = []
        for p in map(os.fspath, paths):
            if not os.path.exists(p):
                raise ValueError(f"cannot open '{p}': no such file")
            if os.path.isdir(p):
                found += [TraceUnit(f, f, -1) for f in _dir_files(p)]
            elif tarfile.is_tarfile(p):
                tmp = tmp or tempfile.mkdtemp(prefix="stepcast-upload-")
                found += _members(p, tmp)
            else:
                found.append(TraceUnit(p, p, -1))
        units: List[TraceUnit] = []
        for i, u in enumerate(found):
            rank = trace_rank(u.path)
            u = u._replace(rank=i if rank is None else rank)
            for v in units:
                if v.rank == u.rank:
                    raise ValueError(f"'{v.label}' and '{u.label}' are both rank {u.rank}")
            units.append(u)
        yield units
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

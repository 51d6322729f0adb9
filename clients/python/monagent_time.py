"""monagent_time: read monagent's time segment (docs/timeapi.md) from Python.

Standard library only (mmap, struct, time). True time with an error bound:

    import monagent_time
    reader = monagent_time.open()            # $MONAGENT_TIME_PATH, else the default path
    earliest_ns, latest_ns, state = reader.now("system")

The truth is in [earliest_ns, latest_ns] (UTC ns for "system", the HCA global
timeline for "global"); state is "LOCKED", "HOLDOVER" or "FREERUN". A read
never returns a torn or stale section as fresh: it raises one of the Error
subclasses below (the Go package's errors, the C header's codes).

Memory ordering: the reader copies the sequence, the fields and the sequence
again out of the mapping (struct.unpack_from) and accepts equal, even
sequences. Python has no memory barrier of its own; on x86 (loads are not
reordered with loads) this is a correct seqlock read, while on 32-bit ARM it
relies on the interpreter's own synchronisation between the copies. Where that
matters, use the Go package or the C header, which use atomics and fences.
"""

import mmap as _mmap
import os as _os
import struct as _struct
import time as _time

__all__ = ["open", "default_path", "Reader", "Error", "NotInitialised", "Malformed", "VersionUnsupported",
           "Inconsistent", "Void", "UnknownClock", "Stepped", "STATES"]

MAGIC = 0x454D4954414E4F4D  # "MONATIME" little-endian
VERSION = 1
HEADER_SIZE = 64
SECTION_SIZE = 256
SEGMENT_SIZE = 4096
MAX_SECTIONS = 15
MAX_ATTEMPTS = 1000
SLEW_PPB = 500_000
STEP_SLACK_NS = 100_000
_MAX_TIME = 1 << 62
_MAX_AGE = 1 << 52
STATES = ("UNKNOWN", "LOCKED", "HOLDOVER", "FREERUN")

_HEADER = _struct.Struct("=QIIIIIII")  # magic, version, header, segment, section size, count, epoch, pid
_SECTION = _struct.Struct("=16sIIqqqqqqqQqqq")  # name, seq, state, 7 model fields, updates, 3 step fields
_U32 = _struct.Struct("=I")


class Error(Exception):
    """A read of the time segment failed; code is the C header's (negative)."""
    code = 0


def _error(name, code, doc):
    return type(name, (Error,), {"code": code, "__doc__": doc})


NotInitialised = _error("NotInitialised", -1, "header (re)initialising, file being created, or no judged sample yet")
Malformed = _error("Malformed", -2, "wrong magic or sizes, or a model out of range")
VersionUnsupported = _error("VersionUnsupported", -3, "layout version unsupported")
Inconsistent = _error("Inconsistent", -4, "seqlock retries exhausted")
Void = _error("Void", -5, "the writer stopped updating the section")
UnknownClock = _error("UnknownClock", -6, "no section of that name")
Stepped = _error("Stepped", -7, "past: cannot tell which side of a REALTIME step the stamp is on")


def default_path():
    """$MONAGENT_TIME_PATH, else time.shm in the agent's default runtime
    directory ($RUNTIME_DIRECTORY's first entry, else $TMPDIR, else /tmp)."""
    p = _os.environ.get("MONAGENT_TIME_PATH")
    if p:
        return p
    d = _os.environ.get("RUNTIME_DIRECTORY")
    if d:
        d = d.split(":")[0]
    else:
        d = _os.environ.get("TMPDIR") or "/tmp"
    return _os.path.join(d, "time.shm")


def _mul_ppb(d, ppb):
    # Go's and C's integer division truncates toward zero; Python's floors.
    q = _tdiv(d, 1_000_000_000)
    r = d - q * 1_000_000_000
    return q * ppb + _tdiv(r * ppb, 1_000_000_000)


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _grow(d, ppb):
    d = abs(d)
    return -((-d * ppb) // 1_000_000_000)  # ceil(|d|·ppb/1e9)


class Reader:
    """A mapped segment. now/past/after/before as in the Go package."""

    def __init__(self, path):
        self.path = path
        fd = _os.open(path, _os.O_RDONLY | getattr(_os, "O_CLOEXEC", 0))
        try:
            if _os.fstat(fd).st_size < SEGMENT_SIZE:
                raise NotInitialised(f"time segment {path}: shorter than {SEGMENT_SIZE} bytes")
            self._m = _mmap.mmap(fd, SEGMENT_SIZE, _mmap.MAP_SHARED, _mmap.PROT_READ)
        finally:
            _os.close(fd)
        magic, version, _, _, _, _, epoch, _ = _HEADER.unpack_from(self._m, 0)
        if epoch and not epoch & 1:
            if magic != MAGIC:
                self.close()
                raise Malformed(f"time segment {path}: bad magic")
            if version != VERSION:
                self.close()
                raise VersionUnsupported(f"time segment {path}: layout version {version}")

    def close(self):
        self._m.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def clocks(self):
        n = min(_HEADER.unpack_from(self._m, 0)[5], MAX_SECTIONS)
        return [_SECTION.unpack_from(self._m, HEADER_SIZE + i * SECTION_SIZE)[0].rstrip(b"\0").decode("ascii")
                for i in range(n)]

    def _snapshot(self, clock):
        name = clock.encode("ascii") if isinstance(clock, str) else bytes(clock)
        if not 0 < len(name) <= 15:
            raise UnknownClock(f"time segment {self.path}: no clock {clock!r}")
        key = name.ljust(16, b"\0")
        m = self._m
        last = Inconsistent
        for _ in range(MAX_ATTEMPTS):
            magic, version, hsize, ssize, secsize, n, e1, _ = _HEADER.unpack_from(m, 0)
            if e1 == 0 or e1 & 1:
                last = NotInitialised
                continue
            err = None
            if magic != MAGIC:
                err = Malformed
            elif version != VERSION:
                err = VersionUnsupported
            elif (hsize, ssize, secsize) != (HEADER_SIZE, SEGMENT_SIZE, SECTION_SIZE) or n > MAX_SECTIONS:
                err = Malformed
            off = -1
            if err is None:
                for i in range(n):
                    o = HEADER_SIZE + i * SECTION_SIZE
                    if m[o:o + 16] == key:
                        off = o
                        break
                else:
                    err = UnknownClock
            if err is not None:
                if _U32.unpack_from(m, 28)[0] != e1:
                    continue
                raise err(f"time segment {self.path}: clock {clock!r}")
            s = _SECTION.unpack_from(m, off)
            if s[1] & 1 or _U32.unpack_from(m, off + 16)[0] != s[1] or _U32.unpack_from(m, 28)[0] != e1 \
                    or s[0] != key:
                last = Inconsistent
                continue
            (_, _, state, base, true, rate, bound, growth, void, realtime, _, sfrom, sto, sns) = s
            if state == 0:
                raise NotInitialised(f"time segment {self.path}: clock {clock!r} has no judged sample yet")
            ok = (state <= 3 and 0 <= base <= _MAX_TIME and all(abs(x) <= _MAX_TIME for x in (true, realtime, sfrom, sto, sns))
                  and abs(rate) <= 100_000_000 and 0 <= growth <= 1_000_000_000 and 0 <= bound <= 1 << 50)
            if not ok:
                raise Malformed(f"time segment {self.path}: clock {clock!r} model out of range")
            return state, base, true, rate, bound, growth, void, realtime, sfrom, sto, sns
        raise last(f"time segment {self.path}: clock {clock!r}")

    @staticmethod
    def _at(snap, t, extra=0):
        state, base, true, rate, bound, growth, void = snap[:7]
        if t >= void:
            raise Void("time section void")
        d = t - base
        if abs(d) > _MAX_AGE:
            raise Void("time section void (too far from its model)")
        centre = true + d + _mul_ppb(d, rate)
        half = bound + _grow(d, growth) + 1 + extra
        return centre - half, centre + half, STATES[state]

    def now(self, clock="system"):
        """(earliest_ns, latest_ns, state) of the clock's true time now."""
        snap = self._snapshot(clock)
        return self._at(snap, _time.clock_gettime_ns(_time.CLOCK_MONOTONIC_RAW))

    def past(self, clock, base, stamp_ns):
        """The true time of a stamp taken on base ("REALTIME", "MONOTONIC" or
        "MONOTONIC_RAW"), as the Go package's Past."""
        snap = self._snapshot(clock)
        raw_id = _time.CLOCK_MONOTONIC_RAW
        if base == "MONOTONIC_RAW":
            if _time.clock_gettime_ns(raw_id) >= snap[6]:
                raise Void("time section void")
            return self._at(snap, stamp_ns)
        ids = {"REALTIME": _time.CLOCK_REALTIME, "MONOTONIC": _time.CLOCK_MONOTONIC}
        if base not in ids:
            raise ValueError(f"stamp base {base!r}")
        r1 = _time.clock_gettime_ns(raw_id)
        x = _time.clock_gettime_ns(ids[base])
        r2 = _time.clock_gettime_ns(raw_id)
        if r2 >= snap[6]:
            raise Void("time section void")
        if abs(x - stamp_ns) > _MAX_AGE:
            raise Void("time section void (stamp too far from now)")
        mid, jitter = r1 + (r2 - r1) // 2, (r2 - r1 + 1) // 2
        rel = x - mid
        raw = stamp_ns - rel
        _, mbase, _, _, _, _, _, realtime, sfrom, sto, sns = snap
        if base == "REALTIME" and realtime != 0:
            if abs(rel - (realtime - mbase)) > _grow(mid - mbase, SLEW_PPB) + STEP_SLACK_NS + jitter:
                raise Stepped("REALTIME stepped since the last publish")
            if sto != 0:
                old = raw + sns
                if raw >= sto and old >= sto:
                    pass
                elif old <= sfrom and raw <= sfrom:
                    raw = old
                else:
                    raise Stepped("REALTIME stepped around the stamp")
        return self._at(snap, raw, jitter + _grow(mid - raw, SLEW_PPB))

    def after(self, clock, t_ns):
        """True if t_ns has definitely passed (TrueTime's after)."""
        return self.now(clock)[0] > t_ns

    def before(self, clock, t_ns):
        """True if t_ns has definitely not arrived (TrueTime's before)."""
        return self.now(clock)[1] < t_ns


def open(path=None):  # noqa: A001 (the module's API is monagent_time.open)
    """Map the segment at path (None: default_path()) read-only."""
    return Reader(path or default_path())

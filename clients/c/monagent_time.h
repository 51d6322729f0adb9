/*
 * monagent_time.h: a header-only C99 reader of monagent's time segment
 * (docs/timeapi.md): true time with an error bound, read from shared memory.
 *
 *   #include "monagent_time.h"   (first, before any system header)
 *   monagent_time t;
 *   monagent_time_interval iv;
 *   if (monagent_time_open(&t, NULL) == 0 && monagent_time_now(&t, "system", &iv) == 0)
 *       printf("%lld %lld %s\n", (long long)iv.earliest_ns, (long long)iv.latest_ns,
 *              monagent_time_state_name(iv.state));
 *
 * The truth is in [earliest_ns, latest_ns]: UTC nanoseconds for "system", the
 * HCA global timeline for "global". Every call returns 0 or one of the negative
 * MONAGENT_TIME_E* codes; a reader never gets a torn or stale section as fresh.
 * Calls are thread-safe and allocate nothing after open. Needs GCC or Clang
 * (__atomic builtins) and Linux; on 32-bit ARM, ARMv7 (LDREXD).
 *
 * Memory ordering: the writer (the agent, Go sync/atomic: sequentially
 * consistent) makes a section's sequence odd, stores every field, and makes it
 * even again. This reader loads the sequence with acquire, every field with
 * relaxed 32/64-bit atomic loads, issues an acquire fence and loads the
 * sequence again; equal and even, the fields are one publish's.
 */
#ifndef MONAGENT_TIME_H
#define MONAGENT_TIME_H

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOCK_MONOTONIC_RAW
#define CLOCK_MONOTONIC_RAW 4
#endif

/* Return codes: the Go package's errors, in the same order. */
enum {
	MONAGENT_TIME_OK = 0,
	MONAGENT_TIME_ENOTINIT = -1,      /* header (re)initialising, file being created, or no judged sample yet */
	MONAGENT_TIME_EMALFORMED = -2,    /* wrong magic or sizes, or a model out of range */
	MONAGENT_TIME_EVERSION = -3,      /* layout version unsupported */
	MONAGENT_TIME_EINCONSISTENT = -4, /* seqlock retries exhausted */
	MONAGENT_TIME_EVOID = -5,         /* the writer stopped updating the section */
	MONAGENT_TIME_EUNKNOWN_CLOCK = -6,/* no section of that name */
	MONAGENT_TIME_ESTEPPED = -7,      /* past: cannot tell which side of a REALTIME step the stamp is on */
	MONAGENT_TIME_ESYSTEM = -8        /* a system call failed: errno says why */
};

/* States: judge.State's numbers. */
enum {
	MONAGENT_TIME_UNKNOWN = 0,
	MONAGENT_TIME_LOCKED = 1,
	MONAGENT_TIME_HOLDOVER = 2,
	MONAGENT_TIME_FREERUN = 3
};

/* Layout version 1 (docs/timeapi.md). */
#define MONAGENT_TIME_MAGIC UINT64_C(0x454D4954414E4F4D) /* "MONATIME" little-endian */
#define MONAGENT_TIME_VERSION 1u
#define MONAGENT_TIME_HEADER_SIZE 64u
#define MONAGENT_TIME_SECTION_SIZE 256u
#define MONAGENT_TIME_SEGMENT_SIZE 4096u
#define MONAGENT_TIME_MAX_SECTIONS 15u
#define MONAGENT_TIME_MAX_ATTEMPTS 1000
#define MONAGENT_TIME_SLEW_PPB INT64_C(500000)
#define MONAGENT_TIME_STEP_SLACK_NS INT64_C(100000)

typedef struct monagent_time {
	const unsigned char *mem; /* the mapping, MONAGENT_TIME_SEGMENT_SIZE bytes */
} monagent_time;

typedef struct monagent_time_interval {
	int64_t earliest_ns, latest_ns;
	uint32_t state;
} monagent_time_interval;

/* internal: one consistent read of a section */
typedef struct monagent_time__snap {
	uint32_t state;
	int64_t base_ns, true_ns, rate_ppb, bound_ns, growth_ppb, void_ns, realtime_ns;
	int64_t step_from_ns, step_to_ns, step_ns;
} monagent_time__snap;

static inline uint32_t monagent_time__u32(const monagent_time *t, size_t off, int order)
{
	return __atomic_load_n((const uint32_t *)(const void *)(t->mem + off), order);
}

static inline int64_t monagent_time__i64(const monagent_time *t, size_t off)
{
	return __atomic_load_n((const int64_t *)(const void *)(t->mem + off), __ATOMIC_RELAXED);
}

static inline const char *monagent_time_strerror(int code)
{
	switch (code) {
	case MONAGENT_TIME_OK: return "ok";
	case MONAGENT_TIME_ENOTINIT: return "time segment not initialised";
	case MONAGENT_TIME_EMALFORMED: return "time segment malformed";
	case MONAGENT_TIME_EVERSION: return "time segment layout version unsupported";
	case MONAGENT_TIME_EINCONSISTENT: return "time segment read inconsistent";
	case MONAGENT_TIME_EVOID: return "time section void";
	case MONAGENT_TIME_EUNKNOWN_CLOCK: return "time segment has no such clock";
	case MONAGENT_TIME_ESTEPPED: return "REALTIME stepped around the stamp";
	case MONAGENT_TIME_ESYSTEM: return "system call failed (see errno)";
	}
	return "unknown monagent_time error";
}

static inline const char *monagent_time_state_name(uint32_t state)
{
	static const char *const names[] = {"UNKNOWN", "LOCKED", "HOLDOVER", "FREERUN"};
	return state < 4 ? names[state] : "INVALID";
}

/* The default path into buf: $MONAGENT_TIME_PATH, else time.shm in the
 * agent's default runtime directory ($RUNTIME_DIRECTORY's first entry, else
 * $TMPDIR, else /tmp). Returns buf, or NULL if it does not fit. */
static inline const char *monagent_time_default_path(char *buf, size_t n)
{
	const char *p = getenv("MONAGENT_TIME_PATH");
	size_t dl;
	const char *dir;
	if (p != NULL && p[0] != '\0') {
		if (strlen(p) + 1 > n)
			return NULL;
		memcpy(buf, p, strlen(p) + 1);
		return buf;
	}
	dir = getenv("RUNTIME_DIRECTORY");
	if (dir != NULL && dir[0] != '\0') {
		const char *colon = strchr(dir, ':');
		dl = colon != NULL ? (size_t)(colon - dir) : strlen(dir);
	} else {
		dir = getenv("TMPDIR");
		if (dir == NULL || dir[0] == '\0')
			dir = "/tmp";
		dl = strlen(dir);
	}
	if (dl + sizeof("/time.shm") > n)
		return NULL;
	memcpy(buf, dir, dl);
	memcpy(buf + dl, "/time.shm", sizeof("/time.shm"));
	return buf;
}

/* Maps the segment at path (NULL: monagent_time_default_path) read-only. */
static inline int monagent_time_open(monagent_time *t, const char *path)
{
	char def[4096];
	struct stat st;
	void *m;
	int fd, err;
	t->mem = NULL;
	if (path == NULL && (path = monagent_time_default_path(def, sizeof def)) == NULL) {
		errno = ENAMETOOLONG;
		return MONAGENT_TIME_ESYSTEM;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return MONAGENT_TIME_ESYSTEM;
	if (fstat(fd, &st) != 0) {
		err = errno;
		close(fd);
		errno = err;
		return MONAGENT_TIME_ESYSTEM;
	}
	if (st.st_size < (off_t)MONAGENT_TIME_SEGMENT_SIZE) {
		close(fd);
		return MONAGENT_TIME_ENOTINIT;
	}
	m = mmap(NULL, MONAGENT_TIME_SEGMENT_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	err = errno;
	close(fd);
	if (m == MAP_FAILED) {
		errno = err;
		return MONAGENT_TIME_ESYSTEM;
	}
	t->mem = (const unsigned char *)m;
	{
		uint32_t e = monagent_time__u32(t, 28, __ATOMIC_ACQUIRE);
		if (e != 0 && (e & 1u) == 0) {
			if (__atomic_load_n((const uint64_t *)(const void *)t->mem, __ATOMIC_RELAXED) != MONAGENT_TIME_MAGIC) {
				munmap(m, MONAGENT_TIME_SEGMENT_SIZE);
				t->mem = NULL;
				return MONAGENT_TIME_EMALFORMED;
			}
			if (monagent_time__u32(t, 8, __ATOMIC_RELAXED) != MONAGENT_TIME_VERSION) {
				munmap(m, MONAGENT_TIME_SEGMENT_SIZE);
				t->mem = NULL;
				return MONAGENT_TIME_EVERSION;
			}
		}
	}
	return MONAGENT_TIME_OK;
}

static inline void monagent_time_close(monagent_time *t)
{
	if (t->mem != NULL)
		munmap((void *)(uintptr_t)t->mem, MONAGENT_TIME_SEGMENT_SIZE);
	t->mem = NULL;
}

static inline int monagent_time__header(const monagent_time *t)
{
	if (__atomic_load_n((const uint64_t *)(const void *)t->mem, __ATOMIC_RELAXED) != MONAGENT_TIME_MAGIC)
		return MONAGENT_TIME_EMALFORMED;
	if (monagent_time__u32(t, 8, __ATOMIC_RELAXED) != MONAGENT_TIME_VERSION)
		return MONAGENT_TIME_EVERSION;
	if (monagent_time__u32(t, 12, __ATOMIC_RELAXED) != MONAGENT_TIME_HEADER_SIZE ||
	    monagent_time__u32(t, 16, __ATOMIC_RELAXED) != MONAGENT_TIME_SEGMENT_SIZE ||
	    monagent_time__u32(t, 20, __ATOMIC_RELAXED) != MONAGENT_TIME_SECTION_SIZE ||
	    monagent_time__u32(t, 24, __ATOMIC_RELAXED) > MONAGENT_TIME_MAX_SECTIONS)
		return MONAGENT_TIME_EMALFORMED;
	return MONAGENT_TIME_OK;
}

#define MONAGENT_TIME__MAX_TIME (INT64_C(1) << 62)
#define MONAGENT_TIME__MAX_AGE (INT64_C(1) << 52)

static inline int monagent_time__in(int64_t x)
{
	return x >= -MONAGENT_TIME__MAX_TIME && x <= MONAGENT_TIME__MAX_TIME;
}

static inline int monagent_time__valid(const monagent_time__snap *s)
{
	return s->state <= MONAGENT_TIME_FREERUN && s->base_ns >= 0 && s->base_ns <= MONAGENT_TIME__MAX_TIME &&
	       monagent_time__in(s->true_ns) && monagent_time__in(s->realtime_ns) &&
	       s->rate_ppb >= -100000000 && s->rate_ppb <= 100000000 &&
	       s->growth_ppb >= 0 && s->growth_ppb <= 1000000000 &&
	       s->bound_ns >= 0 && s->bound_ns <= (INT64_C(1) << 50) &&
	       monagent_time__in(s->step_from_ns) && monagent_time__in(s->step_to_ns) && monagent_time__in(s->step_ns);
}

static inline int monagent_time__snapshot(const monagent_time *t, const char *clock, monagent_time__snap *s)
{
	unsigned char name[16];
	uint64_t w0, w1;
	size_t len;
	int a, last = MONAGENT_TIME_EINCONSISTENT;
	if (t->mem == NULL)
		return MONAGENT_TIME_ENOTINIT;
	len = clock != NULL ? strlen(clock) : 0;
	if (len == 0 || len > 15)
		return MONAGENT_TIME_EUNKNOWN_CLOCK;
	memset(name, 0, sizeof name);
	memcpy(name, clock, len);
	memcpy(&w0, name, 8);
	memcpy(&w1, name + 8, 8);
	for (a = 0; a < MONAGENT_TIME_MAX_ATTEMPTS; a++) {
		uint32_t e1, n, i, q1;
		size_t o = 0;
		int found = 0, rc;
		e1 = monagent_time__u32(t, 28, __ATOMIC_ACQUIRE);
		if (e1 == 0 || (e1 & 1u) != 0) {
			last = MONAGENT_TIME_ENOTINIT;
			continue;
		}
		rc = monagent_time__header(t);
		if (rc != 0) {
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (monagent_time__u32(t, 28, __ATOMIC_RELAXED) != e1)
				continue;
			return rc;
		}
		n = monagent_time__u32(t, 24, __ATOMIC_RELAXED);
		for (i = 0; i < n && i < MONAGENT_TIME_MAX_SECTIONS; i++) {
			o = MONAGENT_TIME_HEADER_SIZE + (size_t)i * MONAGENT_TIME_SECTION_SIZE;
			if (__atomic_load_n((const uint64_t *)(const void *)(t->mem + o), __ATOMIC_RELAXED) == w0 &&
			    __atomic_load_n((const uint64_t *)(const void *)(t->mem + o + 8), __ATOMIC_RELAXED) == w1) {
				found = 1;
				break;
			}
		}
		if (!found) {
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (monagent_time__u32(t, 28, __ATOMIC_RELAXED) != e1)
				continue;
			return MONAGENT_TIME_EUNKNOWN_CLOCK;
		}
		q1 = monagent_time__u32(t, o + 16, __ATOMIC_ACQUIRE);
		if ((q1 & 1u) != 0) {
			last = MONAGENT_TIME_EINCONSISTENT;
			continue;
		}
		s->state = monagent_time__u32(t, o + 20, __ATOMIC_RELAXED);
		s->base_ns = monagent_time__i64(t, o + 24);
		s->true_ns = monagent_time__i64(t, o + 32);
		s->rate_ppb = monagent_time__i64(t, o + 40);
		s->bound_ns = monagent_time__i64(t, o + 48);
		s->growth_ppb = monagent_time__i64(t, o + 56);
		s->void_ns = monagent_time__i64(t, o + 64);
		s->realtime_ns = monagent_time__i64(t, o + 72);
		s->step_from_ns = monagent_time__i64(t, o + 88);
		s->step_to_ns = monagent_time__i64(t, o + 96);
		s->step_ns = monagent_time__i64(t, o + 104);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (monagent_time__u32(t, o + 16, __ATOMIC_RELAXED) != q1 ||
		    monagent_time__u32(t, 28, __ATOMIC_RELAXED) != e1) {
			last = MONAGENT_TIME_EINCONSISTENT;
			continue;
		}
		if (s->state == MONAGENT_TIME_UNKNOWN)
			return MONAGENT_TIME_ENOTINIT;
		if (!monagent_time__valid(s))
			return MONAGENT_TIME_EMALFORMED;
		return MONAGENT_TIME_OK;
	}
	return last;
}

/* d·ppb/1e9 toward zero, and ⌈|d|·ppb/1e9⌉: as the Go package computes them. */
static inline int64_t monagent_time__mul_ppb(int64_t d, int64_t ppb)
{
	if (d > -(INT64_C(1) << 33) && d < (INT64_C(1) << 33) && ppb > -(INT64_C(1) << 30) && ppb < (INT64_C(1) << 30))
		return d * ppb / 1000000000; /* fits: the same number, one division */
	return (d / 1000000000) * ppb + (d % 1000000000) * ppb / 1000000000;
}

static inline int64_t monagent_time__grow(int64_t d, int64_t ppb)
{
	int64_t x, g;
	if (d < 0)
		d = -d;
	if (d < (INT64_C(1) << 33) && ppb < (INT64_C(1) << 30))
		return (d * ppb + 999999999) / 1000000000;
	x = (d % 1000000000) * ppb;
	g = (d / 1000000000) * ppb + x / 1000000000;
	return x % 1000000000 != 0 ? g + 1 : g;
}

static inline int monagent_time__at(const monagent_time__snap *s, int64_t base, int64_t extra,
                                    monagent_time_interval *out)
{
	int64_t d, centre, half;
	if (base >= s->void_ns)
		return MONAGENT_TIME_EVOID;
	d = base - s->base_ns;
	if (d > MONAGENT_TIME__MAX_AGE || d < -MONAGENT_TIME__MAX_AGE)
		return MONAGENT_TIME_EVOID;
	centre = s->true_ns + d + monagent_time__mul_ppb(d, s->rate_ppb);
	half = s->bound_ns + monagent_time__grow(d, s->growth_ppb) + 1 + extra;
	out->earliest_ns = centre - half;
	out->latest_ns = centre + half;
	out->state = s->state;
	return MONAGENT_TIME_OK;
}

static inline int monagent_time__read(clockid_t id, int64_t *ns)
{
	struct timespec ts;
	if (clock_gettime(id, &ts) != 0)
		return MONAGENT_TIME_ESYSTEM;
	*ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	return MONAGENT_TIME_OK;
}

/* The clock's true time now. */
static inline int monagent_time_now(const monagent_time *t, const char *clock, monagent_time_interval *out)
{
	monagent_time__snap s;
	int64_t raw;
	int rc = monagent_time__snapshot(t, clock, &s);
	if (rc != 0)
		return rc;
	if ((rc = monagent_time__read(CLOCK_MONOTONIC_RAW, &raw)) != 0)
		return rc;
	return monagent_time__at(&s, raw, 0, out);
}

/* The true time of a stamp already taken on base (CLOCK_REALTIME,
 * CLOCK_MONOTONIC or CLOCK_MONOTONIC_RAW): Go's Reader.Past. */
static inline int monagent_time_past(const monagent_time *t, const char *clock, clockid_t base, int64_t stamp_ns,
                                     monagent_time_interval *out)
{
	monagent_time__snap s;
	int64_t r1, r2, x, mid, jitter, rel, raw, age;
	int rc = monagent_time__snapshot(t, clock, &s);
	if (rc != 0)
		return rc;
	if (base == CLOCK_MONOTONIC_RAW) {
		if ((rc = monagent_time__read(CLOCK_MONOTONIC_RAW, &r1)) != 0)
			return rc;
		if (r1 >= s.void_ns)
			return MONAGENT_TIME_EVOID;
		return monagent_time__at(&s, stamp_ns, 0, out);
	}
	if (base != CLOCK_REALTIME && base != CLOCK_MONOTONIC) {
		errno = EINVAL;
		return MONAGENT_TIME_ESYSTEM;
	}
	if ((rc = monagent_time__read(CLOCK_MONOTONIC_RAW, &r1)) != 0 || (rc = monagent_time__read(base, &x)) != 0 ||
	    (rc = monagent_time__read(CLOCK_MONOTONIC_RAW, &r2)) != 0)
		return rc;
	if (r2 >= s.void_ns)
		return MONAGENT_TIME_EVOID;
	age = x - stamp_ns;
	if (age > MONAGENT_TIME__MAX_AGE || age < -MONAGENT_TIME__MAX_AGE)
		return MONAGENT_TIME_EVOID;
	mid = r1 + (r2 - r1) / 2;
	jitter = (r2 - r1 + 1) / 2;
	rel = x - mid;
	raw = stamp_ns - rel;
	if (base == CLOCK_REALTIME && s.realtime_ns != 0) {
		int64_t moved = rel - (s.realtime_ns - s.base_ns);
		if (moved < 0)
			moved = -moved;
		if (moved > monagent_time__grow(mid - s.base_ns, MONAGENT_TIME_SLEW_PPB) + MONAGENT_TIME_STEP_SLACK_NS + jitter)
			return MONAGENT_TIME_ESTEPPED;
		if (s.step_to_ns != 0) {
			int64_t old_raw = raw + s.step_ns;
			if (raw >= s.step_to_ns && old_raw >= s.step_to_ns) {
				/* today's scale */
			} else if (old_raw <= s.step_from_ns && raw <= s.step_from_ns) {
				raw = old_raw;
			} else {
				return MONAGENT_TIME_ESTEPPED;
			}
		}
	}
	return monagent_time__at(&s, raw, jitter + monagent_time__grow(mid - raw, MONAGENT_TIME_SLEW_PPB), out);
}

/* 1 if t_ns has definitely passed (TrueTime's after), 0 if not, < 0 on error. */
static inline int monagent_time_after(const monagent_time *t, const char *clock, int64_t t_ns)
{
	monagent_time_interval iv;
	int rc = monagent_time_now(t, clock, &iv);
	return rc != 0 ? rc : iv.earliest_ns > t_ns;
}

/* 1 if t_ns has definitely not arrived (TrueTime's before), 0 if not, < 0 on error. */
static inline int monagent_time_before(const monagent_time *t, const char *clock, int64_t t_ns)
{
	monagent_time_interval iv;
	int rc = monagent_time_now(t, clock, &iv);
	return rc != 0 ? rc : iv.latest_ns < t_ns;
}

#endif /* MONAGENT_TIME_H */

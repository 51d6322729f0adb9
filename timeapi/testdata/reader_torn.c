/* The C reader's seqlock against the Go writer (clients_test.go): while the
 * writer publishes tornModel(k) into "global", reader_torn PATH N MS makes up
 * to N reads for at most MS ms and checks every field of each against the
 * model it names. Prints "reads R torn T inconsistent I changed C". */
#include "monagent_time.h"
#include <stdio.h>
#include <stdlib.h>

static int64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	monagent_time t;
	monagent_time__snap s;
	long n, i, reads = 0, torn = 0, inconsistent = 0, changed = 0;
	int64_t deadline, last = -1;
	if (argc != 4 || monagent_time_open(&t, argv[1]) != 0)
		return 2;
	n = strtol(argv[2], NULL, 10);
	deadline = ms_now() + strtol(argv[3], NULL, 10);
	for (i = 0; i < n; i++) {
		int64_t k;
		int rc;
		if (i % 4096 == 0 && ms_now() > deadline)
			break;
		rc = monagent_time__snapshot(&t, "global", &s);
		if (rc == MONAGENT_TIME_EINCONSISTENT) {
			inconsistent++;
			continue;
		}
		if (rc != 0) {
			printf("error %d\n", rc);
			return 1;
		}
		k = s.base_ns - 1000000000;
		if (s.state != (uint32_t)(1 + k % 3) || s.true_ns != k * 7 + 11 || s.rate_ppb != k % 200001 - 100000 ||
		    s.bound_ns != k % 1000003 || s.growth_ppb != k % 999983 || s.void_ns != (INT64_C(1) << 62) - k ||
		    s.realtime_ns != 1000000000 + k + 5 || s.step_from_ns != 0 || s.step_to_ns != 0 || s.step_ns != 0 ||
		    k < last) {
			if (torn++ < 5)
				printf("torn %lld\n", (long long)k);
		}
		if (k != last)
			changed++;
		last = k;
		reads++;
	}
	printf("reads %ld torn %ld inconsistent %ld changed %ld\n", reads, torn, inconsistent, changed);
	monagent_time_close(&t);
	return 0;
}

/* The C reader's cost beside clock_gettime(CLOCK_REALTIME) in the same run:
 * reader_bench PATH N prints "clock_gettime NS now NS" (ns per call). */
#include "monagent_time.h"
#include <stdio.h>
#include <stdlib.h>

static int64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	monagent_time t;
	monagent_time_interval iv;
	struct timespec ts;
	volatile int64_t sink = 0;
	long i, n;
	int64_t t0, t1, t2;
	if (argc != 3 || monagent_time_open(&t, argv[1]) != 0)
		return 2;
	n = strtol(argv[2], NULL, 10);
	t0 = mono();
	for (i = 0; i < n; i++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		sink += ts.tv_nsec;
	}
	t1 = mono();
	for (i = 0; i < n; i++) {
		if (monagent_time_now(&t, "system", &iv) != 0)
			return 1;
		sink += iv.earliest_ns;
	}
	t2 = mono();
	printf("clock_gettime %.2f now %.2f\n", (double)(t1 - t0) / (double)n, (double)(t2 - t1) / (double)n);
	monagent_time_close(&t);
	return 0;
}

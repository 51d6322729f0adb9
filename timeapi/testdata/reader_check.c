/* The C reader against a segment the Go writer made (clients_test.go):
 * reader_check PATH STAMP prints one line per call. */
#include "monagent_time.h"
#include <stdio.h>
#include <stdlib.h>

static void show(const char *what, int rc, const monagent_time_interval *iv)
{
	if (rc != 0)
		printf("%s %d\n", what, rc);
	else
		printf("%s %d %lld %lld %s\n", what, rc, (long long)iv->earliest_ns, (long long)iv->latest_ns,
		       monagent_time_state_name(iv->state));
}

int main(int argc, char **argv)
{
	monagent_time t;
	monagent_time_interval iv;
	struct timespec ts;
	int64_t stamp, rt;
	int rc;
	if (argc != 3)
		return 2;
	stamp = strtoll(argv[2], NULL, 10);
	rc = monagent_time_open(&t, argv[1]);
	printf("open %d\n", rc);
	if (rc != 0)
		return 1;
	show("past", monagent_time_past(&t, "system", CLOCK_MONOTONIC_RAW, stamp, &iv), &iv);
	show("pastfar", monagent_time_past(&t, "system", CLOCK_MONOTONIC_RAW, stamp - INT64_C(200000000000), &iv), &iv);
	show("now", monagent_time_now(&t, "system", &iv), &iv);
	clock_gettime(CLOCK_REALTIME, &ts);
	rt = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	show("pastrt", monagent_time_past(&t, "system", CLOCK_REALTIME, rt, &iv), &iv);
	show("global", monagent_time_now(&t, "global", &iv), &iv);
	show("nosuch", monagent_time_now(&t, "nosuch", &iv), &iv);
	printf("after %d\n", monagent_time_after(&t, "system", 0));
	printf("before %d\n", monagent_time_before(&t, "system", 0));
	monagent_time_close(&t);
	return 0;
}

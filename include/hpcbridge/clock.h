/*
 * clock.h - the clocks, in milliseconds.
 *
 * Deadlines, timeouts and durations use the monotonic clock, which no
 * one can set back; what is stored or shown to people uses the wall clock.
 */
#ifndef HPCBRIDGE_CLOCK_H
#define HPCBRIDGE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC: for deadlines and durations. */
static inline int64_t hb_clock_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds since the Unix epoch (CLOCK_REALTIME): for timestamps. */
static inline int64_t hb_clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif

/*
 * work.c - the mirror's worker threads, its progress reports and its
 * problem reports: what push, pull, verify and retention run their
 * transfers through.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/mirror/mirror_int.h"
#include "hpcbridge/clock.h"

void mir_problem(struct mir *m, const char *what, const char *why)
{
	if (!m->o.problem)
		return;
	pthread_mutex_lock(&m->mu);
	m->o.problem(m->o.ctx, what, why);
	pthread_mutex_unlock(&m->mu);
}

struct pool {
	mir_task_fn fn;
	void *ctx;
	size_t n;
	atomic_size_t next;
	atomic_int rc;
	struct hb_err err;
	pthread_mutex_t mu;
};

struct worker {
	struct pool *p;
	unsigned id;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->p;
	size_t i;

	while (!atomic_load(&p->rc) &&
	       (i = atomic_fetch_add(&p->next, 1)) < p->n) {
		struct hb_err e = { 0 };
		int rc = p->fn(p->ctx, i, w->id, &e);

		if (!rc)
			continue;
		/* The first failure is the one reported; the others are
		 * mostly its consequences. */
		pthread_mutex_lock(&p->mu);
		if (!atomic_load(&p->rc)) {
			p->err = e;
			atomic_store(&p->rc, rc);
		}
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

int mir_pool(unsigned jobs, size_t n, mir_task_fn fn, void *ctx,
	     struct hb_err *err)
{
	struct pool p = { .fn = fn, .ctx = ctx, .n = n };
	pthread_t th[64];
	struct worker w[64];
	unsigned started = 0;
	int rc;

	if (jobs > 64)
		jobs = 64;
	if (jobs > n)
		jobs = (unsigned)n;
	if (jobs <= 1) {
		for (size_t i = 0; i < n; i++)
			if ((rc = fn(ctx, i, 0, err)))
				return rc;
		return 0;
	}
	pthread_mutex_init(&p.mu, NULL);
	for (unsigned t = 0; t < jobs; t++) {
		w[t] = (struct worker){ &p, t };
		if (pthread_create(&th[t], NULL, work, &w[t]))
			break;
		started++;
	}
	/* With no thread at all, the caller's does the work. */
	if (!started) {
		w[0] = (struct worker){ &p, 0 };
		work(&w[0]);
	}
	for (unsigned t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&p.mu);
	rc = atomic_load(&p.rc);
	if (rc) {
		/* hb_err_set keeps the first message: copy it over. */
		*err = p.err;
		if (!err->code)
			err->code = rc;
	}
	return rc;
}

static void report(struct mir_prog *p, int final)
{
	struct hb_mirror_progress r = {
		.phase = p->phase,
		.files_done = atomic_load(&p->files_done),
		.files_total = p->files_total,
		.bytes_done = atomic_load(&p->bytes_done),
		.bytes_total = p->bytes_total,
		.elapsed_ms = (uint64_t)(hb_clock_mono_ms() - p->start_ms),
		.final = final,
	};

	p->m->o.progress(p->m->o.ctx, &r);
}

void mir_prog_start(struct mir_prog *p, struct mir *m, const char *phase,
		    uint64_t files_total, uint64_t bytes_total)
{
	memset(p, 0, sizeof(*p));
	p->m = m;
	p->phase = phase;
	p->files_total = files_total;
	p->bytes_total = bytes_total;
	p->start_ms = hb_clock_mono_ms();
	atomic_store(&p->last_ms, p->start_ms);
	pthread_mutex_init(&p->mu, NULL);
}

void mir_prog_add(struct mir_prog *p, uint64_t files, uint64_t bytes)
{
	int64_t now, last;

	atomic_fetch_add(&p->files_done, files);
	atomic_fetch_add(&p->bytes_done, bytes);
	if (!p->m->o.progress)
		return;
	now = hb_clock_mono_ms();
	last = atomic_load(&p->last_ms);
	if (now - last < (int64_t)p->m->o.progress_ms)
		return;
	/* One thread reports; the others go back to work rather than
	 * wait for it. */
	if (pthread_mutex_trylock(&p->mu))
		return;
	if (atomic_compare_exchange_strong(&p->last_ms, &last, now))
		report(p, 0);
	pthread_mutex_unlock(&p->mu);
}

void mir_prog_end(struct mir_prog *p)
{
	if (p->m->o.progress) {
		pthread_mutex_lock(&p->mu);
		report(p, 1);
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_destroy(&p->mu);
}

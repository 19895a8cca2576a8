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

/* ---- A pool fed while it runs ----------------------------------------- */

static void feed_fail(struct mir_feed *f, int rc, const struct hb_err *e)
{
	/* Under f->mu: the first failure is the one reported. */
	if (!atomic_load(&f->rc)) {
		f->err = *e;
		if (!f->err.code)
			f->err.code = rc;
		atomic_store(&f->rc, rc);
	}
}

struct feeder {
	struct mir_feed *f;
	unsigned id;
};

static void *feed_work(void *arg)
{
	struct feeder *w = arg;
	struct mir_feed *f = w->f;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		struct hb_err e = { 0 };
		void *item;
		int rc;

		while (f->head == f->n && !f->closed && !atomic_load(&f->rc))
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->head == f->n || atomic_load(&f->rc))
			break;
		item = f->q[f->head++];
		pthread_mutex_unlock(&f->mu);
		rc = f->fn(f->ctx, item, w->id, &e);
		pthread_mutex_lock(&f->mu);
		if (rc) {
			feed_fail(f, rc, &e);
			pthread_cond_broadcast(&f->cv);
		}
	}
	pthread_mutex_unlock(&f->mu);
	free(w);
	return NULL;
}

void mir_feed_start(struct mir_feed *f, unsigned jobs, mir_item_fn fn,
		    void *ctx)
{
	memset(f, 0, sizeof(*f));
	f->fn = fn;
	f->ctx = ctx;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	if (jobs > 64)
		jobs = 64;
	/* One job, or no thread at all: mir_feed_put() runs each item. */
	for (unsigned t = 0; jobs > 1 && t < jobs; t++) {
		struct feeder *w = malloc(sizeof(*w));

		if (!w)
			break;
		*w = (struct feeder){ f, t };
		if (pthread_create(&f->th[f->nth], NULL, feed_work, w)) {
			free(w);
			break;
		}
		f->nth++;
	}
}

int mir_feed_put(struct mir_feed *f, void *item, struct hb_err *err)
{
	int rc;

	if (!f->nth) {
		struct hb_err e = { 0 };

		if (atomic_load(&f->rc))
			return atomic_load(&f->rc);
		if ((rc = f->fn(f->ctx, item, 0, &e)))
			feed_fail(f, rc, &e);
		return rc;
	}
	pthread_mutex_lock(&f->mu);
	rc = atomic_load(&f->rc);
	if (!rc && f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		void **q = realloc(f->q, cap * sizeof(*q));

		if (q) {
			f->q = q;
			f->cap = cap;
		} else {
			rc = hb_err_set(err, HB_ENOMEM, NULL, 0,
					"out of memory");
		}
	}
	if (!rc) {
		f->q[f->n++] = item;
		pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

int mir_feed_end(struct mir_feed *f, struct hb_err *err)
{
	int rc;

	pthread_mutex_lock(&f->mu);
	f->closed = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	for (unsigned t = 0; t < f->nth; t++)
		pthread_join(f->th[t], NULL);
	rc = atomic_load(&f->rc);
	if (rc)
		*err = f->err;
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f->q);
	return rc;
}

static void report(struct mir_prog *p, int final)
{
	struct hb_mirror_progress r = {
		.phase = p->phase,
		.files_done = atomic_load(&p->files_done),
		.files_total = atomic_load(&p->files_total),
		.bytes_done = atomic_load(&p->bytes_done),
		.bytes_total = atomic_load(&p->bytes_total),
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
	atomic_store(&p->files_total, files_total);
	atomic_store(&p->bytes_total, bytes_total);
	p->start_ms = hb_clock_mono_ms();
	atomic_store(&p->last_ms, p->start_ms);
	pthread_mutex_init(&p->mu, NULL);
}

void mir_prog_more(struct mir_prog *p, uint64_t files, uint64_t bytes)
{
	atomic_fetch_add(&p->files_total, files);
	atomic_fetch_add(&p->bytes_total, bytes);
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

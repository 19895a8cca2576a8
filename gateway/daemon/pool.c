/*
 * pool.c - worker threads for blocking calls; results back through an
 * eventfd.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "hpcbridge/error.h"
#include "pool.h"

struct hb_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct hb_task *todo, **todo_tail; /* FIFO */
	struct hb_task *done, **done_tail; /* FIFO */
	pthread_t *threads;
	unsigned nthreads;
	unsigned pending; /* loop thread only */
	int stopping;
	int efd;
};

static void *worker(void *arg)
{
	struct hb_pool *p = arg;
	struct hb_task *t;
	uint64_t one = 1;

	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->todo && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		t = p->todo;
		if (!t) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		p->todo = t->next;
		if (!p->todo)
			p->todo_tail = &p->todo;
		pthread_mutex_unlock(&p->mu);

		t->run(t);

		pthread_mutex_lock(&p->mu);
		t->next = NULL;
		*p->done_tail = t;
		p->done_tail = &t->next;
		pthread_mutex_unlock(&p->mu);
		while (write(p->efd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
	}
}

int hb_pool_new(unsigned nthreads, struct hb_pool **out)
{
	struct hb_pool *p;
	unsigned i;

	*out = NULL;
	if (nthreads < 1 || nthreads > 64)
		return HB_EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return HB_ENOMEM;
	p->threads = calloc(nthreads, sizeof(*p->threads));
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!p->threads || p->efd < 0) {
		int rc = p->threads ? HB_EIO : HB_ENOMEM;

		if (p->efd >= 0)
			close(p->efd);
		free(p->threads);
		free(p);
		return rc;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->todo_tail = &p->todo;
	p->done_tail = &p->done;
	for (i = 0; i < nthreads; i++) {
		if (pthread_create(&p->threads[i], NULL, worker, p))
			break;
		p->nthreads++;
	}
	if (p->nthreads == 0) {
		hb_pool_free(p);
		return HB_EIO;
	}
	*out = p;
	return 0;
}

int hb_pool_fd(const struct hb_pool *p)
{
	return p->efd;
}

int hb_pool_submit(struct hb_pool *p, struct hb_task *t)
{
	pthread_mutex_lock(&p->mu);
	if (p->stopping) {
		pthread_mutex_unlock(&p->mu);
		return HB_ESTATE;
	}
	t->next = NULL;
	*p->todo_tail = t;
	p->todo_tail = &t->next;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	p->pending++;
	return 0;
}

unsigned hb_pool_complete(struct hb_pool *p)
{
	struct hb_task *list, *t;
	uint64_t v;
	unsigned n = 0;

	while (read(p->efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&p->mu);
	list = p->done;
	p->done = NULL;
	p->done_tail = &p->done;
	pthread_mutex_unlock(&p->mu);
	while ((t = list)) {
		list = t->next;
		p->pending--;
		n++;
		t->done(t);
	}
	return n;
}

unsigned hb_pool_pending(const struct hb_pool *p)
{
	return p->pending;
}

void hb_pool_free(struct hb_pool *p)
{
	unsigned i;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	hb_pool_complete(p);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	close(p->efd);
	free(p->threads);
	free(p);
}

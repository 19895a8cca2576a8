/*
 * pool.h - a small thread pool for blocking calls, with results handed
 * back to the event loop through an eventfd.
 *
 * The loop thread submits tasks; a worker runs task->run(task) (which may
 * block: a call to slurmctld, to the Kubernetes API); the finished task is
 * queued and the eventfd made readable; the loop thread, seeing it
 * readable, calls hb_pool_complete(), which calls task->done(task) for
 * each finished task, in the loop thread.  So done() may touch what only
 * the loop owns (the store, the connections) and run() must not.
 *
 * Tasks are owned by the caller: embed struct hb_task in a larger struct
 * and free it in done().
 */
#ifndef HPCBRIDGE_POOL_H
#define HPCBRIDGE_POOL_H

struct hb_task {
	void (*run)(struct hb_task *t);	 /* in a worker thread */
	void (*done)(struct hb_task *t); /* in the loop thread */
	struct hb_task *next;		 /* the pool's */
};

struct hb_pool;

/* Start nthreads (1..64) workers.  Caller frees with hb_pool_free(). */
int hb_pool_new(unsigned nthreads, struct hb_pool **out);

/* The eventfd that becomes readable when tasks have finished. */
int hb_pool_fd(const struct hb_pool *p);

/* Queue a task (never blocks; the queue is unbounded, the caller bounds
 * it: one task per connection at most).  HB_ESTATE after shutdown began. */
int hb_pool_submit(struct hb_pool *p, struct hb_task *t);

/* In the loop thread: reset the eventfd and call done() of every finished
 * task.  Returns how many. */
unsigned hb_pool_complete(struct hb_pool *p);

/* Tasks submitted and not yet completed (queued, running or finished but
 * not passed to done()). */
unsigned hb_pool_pending(const struct hb_pool *p);

/* Stop: queued tasks that have not started are still run; waits for the
 * workers to end, then calls done() for every finished task.  NULL is a
 * no-op. */
void hb_pool_free(struct hb_pool *p);

#endif

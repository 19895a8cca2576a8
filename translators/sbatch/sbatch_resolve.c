/*
 * sbatch_resolve.c - what sbatch settles once every option is read: the
 * memory options, the node list and counts, the GPU checks and the counts
 * they imply, and the jobspec fields the final slots give; then the notes
 * on directives whose value did not survive.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbatch_int.h"

/* Largest node list we expand to count its nodes. */
#define HOSTLIST_MAX 16384

static const char *where_text(struct ctx *c, uint32_t d)
{
	const struct hb_directive *x = dir(c, d);

	switch (x->prov.kind) {
	case HB_PROV_FILE:
		return hb_arena_printf(&c->spec->arena, "'%s' at line %u",
				       x->text, x->prov.line);
	case HB_PROV_ENV:
		return hb_arena_printf(&c->spec->arena, "%s", x->text);
	default:
		return hb_arena_printf(&c->spec->arena,
				       "'%s' on the command line", x->text);
	}
}

/* ------------------------------------------------------------------ */
/* Node lists                                                          */
/* ------------------------------------------------------------------ */

struct names {
	char **v;
	size_t n;
	bool over;
};

/* Expand one host expression with bracket groups into names. */
static int expand_host(struct hb_arena *a, const char *h, size_t hl,
		       struct names *out)
{
	const char *lb = memchr(h, '[', hl), *rb;
	char buf[256];

	if (!lb) {
		if (memchr(h, ']', hl) || hl >= sizeof(buf))
			return HB_EINVAL;
		if (out->n >= HOSTLIST_MAX) {
			out->over = true;
			return 0;
		}
		out->v[out->n] = hb_arena_strndup(a, h, hl);
		if (!out->v[out->n])
			return HB_ENOMEM;
		out->n++;
		return 0;
	}
	rb = memchr(lb, ']', hl - (size_t)(lb - h));
	if (!rb || rb == lb + 1)
		return HB_EINVAL;
	for (const char *r = lb + 1; r < rb;) {
		const char *re = memchr(r, ',', (size_t)(rb - r));
		const char *dash, *q;
		unsigned long lo, hi;
		int width;

		if (!re)
			re = rb;
		dash = memchr(r, '-', (size_t)(re - r));
		if (r == re || dash == r || dash == re - 1)
			return HB_EINVAL;
		for (q = r; q < re; q++)
			if (!is_digit(*q) && q != dash)
				return HB_EINVAL;
		width = (int)((dash ? dash : re) - r);
		if (width > 9 || (dash && re - dash - 1 > 9))
			return HB_EINVAL;
		lo = strtoul(r, NULL, 10);
		hi = dash ? strtoul(dash + 1, NULL, 10) : lo;
		if (hi < lo)
			return HB_EINVAL;
		for (unsigned long k = lo; k <= hi; k++) {
			int n = snprintf(
			    buf, sizeof(buf), "%.*s%0*lu%.*s", (int)(lb - h), h,
			    width, k, (int)(hl - (size_t)(rb + 1 - h)), rb + 1);
			int rc;

			if (n < 0 || (size_t)n >= sizeof(buf))
				return HB_EINVAL;
			rc = expand_host(a, buf, (size_t)n, out);
			if (rc)
				return rc;
			if (out->over)
				return 0;
		}
		r = re < rb ? re + 1 : rb;
	}
	return 0;
}

/* Host names in hostlist order: by prefix, then by numeric suffix. */
static int cmp_host(const void *pa, const void *pb)
{
	const char *a = *(char *const *)pa, *b = *(char *const *)pb;
	size_t la = strlen(a), lb = strlen(b), da = la, db = lb;
	int r;

	while (da > 0 && is_digit(a[da - 1]))
		da--;
	while (db > 0 && is_digit(b[db - 1]))
		db--;
	r = strncmp(a, b, da < db ? da : db);
	if (r || da != db)
		return r ? r : (da < db ? -1 : 1);
	/* same prefix: compare the numbers, then their widths */
	{
		const char *x = a + da, *y = b + db;

		while (*x == '0' && x[1])
			x++;
		while (*y == '0' && y[1])
			y++;
		if (strlen(x) != strlen(y))
			return strlen(x) < strlen(y) ? -1 : 1;
		r = strcmp(x, y);
		if (r)
			return r;
	}
	return strcmp(a, b);
}

/*
 * How many distinct nodes a node list names (hostlist_create +
 * hostlist_uniq).  Returns 0 and *count, or HB_EINVAL when the list is a
 * file name or not understood.
 */
static int count_nodes(struct ctx *c, const char *list, uint64_t *count,
		       uint64_t keep, const char **kept)
{
	struct hb_arena a;
	struct names nm = {0};
	const char *p = list;
	int rc = 0;

	if (strchr(list, '/'))
		return HB_EINVAL;
	hb_arena_init(&a, 0);
	nm.v = malloc(HOSTLIST_MAX * sizeof(*nm.v));
	if (!nm.v) {
		hb_arena_free(&a);
		return sb_nomem(c);
	}
	while (*p && !rc && !nm.over) {
		const char *e = p;
		int depth = 0;

		while (*e && (depth || (*e != ',' && !is_space(*e)))) {
			if (*e == '[')
				depth++;
			else if (*e == ']' && depth)
				depth--;
			e++;
		}
		if (e > p)
			rc = expand_host(&a, p, (size_t)(e - p), &nm);
		p = *e ? e + 1 : e;
	}
	if (!rc && (nm.over || nm.n == 0))
		rc = HB_EINVAL;
	if (!rc) {
		size_t u = 0;

		qsort(nm.v, nm.n, sizeof(*nm.v), cmp_host);
		for (size_t i = 0; i < nm.n; i++)
			if (i == 0 || strcmp(nm.v[i], nm.v[i - 1]))
				nm.v[u++] = nm.v[i];
		*count = u;
		/* the first keep nodes, as hostlist_pop() leaves them */
		if (kept && keep && keep < u) {
			struct hb_buf b;

			hb_buf_init(&b, 0);
			for (size_t i = 0; i < keep && !rc; i++)
				if (hb_buf_printf(&b, "%s%s", i ? "," : "",
						  nm.v[i]))
					rc = HB_ENOMEM;
			if (!rc) {
				*kept = hb_jobspec_strdup(c->spec, b.data);
				if (!*kept)
					rc = HB_ENOMEM;
			}
			hb_buf_free(&b);
		}
	}
	free(nm.v);
	hb_arena_free(&a);
	return rc == HB_ENOMEM ? sb_nomem(c) : rc;
}

/* ------------------------------------------------------------------ */
/* Resolution: from option state to jobspec fields                     */
/* ------------------------------------------------------------------ */

static const struct str_map {
	uint8_t id;
	uint8_t field;
	size_t off;
} str_map[] = {
    {O_JOB_NAME, HB_F_NAME, offsetof(struct hb_jobspec, name)},
    {O_UID, HB_F_USER, offsetof(struct hb_jobspec, user)},
    {O_ACCOUNT, HB_F_ACCOUNT, offsetof(struct hb_jobspec, account)},
    {O_PARTITION, HB_F_PARTITION, offsetof(struct hb_jobspec, partition)},
    {O_QOS, HB_F_QOS, offsetof(struct hb_jobspec, qos)},
    {O_COMMENT, HB_F_COMMENT, offsetof(struct hb_jobspec, comment)},
    {O_LICENSES, HB_F_LICENSES, offsetof(struct hb_jobspec, licenses)},
    {O_CONSTRAINT, HB_F_CONSTRAINT, offsetof(struct hb_jobspec, constraint)},
    {O_EXCLUDE, HB_F_EXCLUDE, offsetof(struct hb_jobspec, exclude)},
    {O_BEGIN, HB_F_BEGIN, offsetof(struct hb_jobspec, begin)},
    {O_DEADLINE, HB_F_DEADLINE, offsetof(struct hb_jobspec, deadline)},
    {O_SIGNAL, HB_F_SIGNAL, offsetof(struct hb_jobspec, signal)},
    {O_OUTPUT, HB_F_OUTPUT, offsetof(struct hb_jobspec, output)},
    {O_ERROR, HB_F_ERROR, offsetof(struct hb_jobspec, error)},
    {O_INPUT, HB_F_INPUT, offsetof(struct hb_jobspec, input)},
    {O_CHDIR, HB_F_CHDIR, offsetof(struct hb_jobspec, chdir)},
    {O_DEPENDENCY, HB_F_DEPENDENCY, offsetof(struct hb_jobspec, dependency)},
    {O_MAIL_USER, HB_F_MAIL_USER, offsetof(struct hb_jobspec, mail_user)},
    {O_CONTAINER, HB_F_CONTAINER, offsetof(struct hb_jobspec, container)},
    {O_EXPORT, HB_F_EXPORT, offsetof(struct hb_jobspec, export_spec)},
    {O_HB_CHECKPOINT, HB_F_CHECKPOINT,
     offsetof(struct hb_jobspec, checkpoint_dir)},
};

/*
 * The account as Slurm stores it: slurmctld lowercases every account name
 * (ASCII capitals, whatever the configuration) when it creates the job,
 * as sacctmgr does when it creates the account, so "-A K1206" is charged
 * and shown as "k1206".
 */
static int lower_account(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *s = &c->slot[O_ACCOUNT];
	char *low;
	bool changed = false;

	if (!sp->account)
		return 0;
	low = hb_arena_strdup(&sp->arena, sp->account);
	if (!low)
		return sb_nomem(c);
	for (char *p = low; *p; p++) {
		changed |= *p != hb_ascii_lower(*p);
		*p = hb_ascii_lower(*p);
	}
	sp->account = low;
	if (changed && s->dir != NO_DIR)
		sb_note(c, s->dir,
			hb_arena_printf(&sp->arena,
					"account %s: Slurm stores account "
					"names in lower case",
					low));
	return 0;
}

/* _validate_memory_options() */
static int resolve_mem(struct ctx *c)
{
	static const int ids[3] = {O_MEM, O_MEM_PER_CPU, O_MEM_PER_GPU};
	static const uint8_t kinds[3] = {HB_MEM_PER_NODE, HB_MEM_PER_CPU,
					 HB_MEM_PER_GPU};
	int ncli = 0, nenv = 0, cli = -1, last = -1;

	for (int k = 0; k < 3; k++) {
		const struct slot *s = &c->slot[ids[k]];

		if (!s->set)
			continue;
		if (s->by_env) {
			nenv++;
		} else {
			ncli++;
			cli = k;
		}
		if (last < 0 || s->dir > c->slot[ids[last]].dir)
			last = k;
	}
	if (ncli > 1) {
		const struct hb_directive *d = dir(c, c->slot[ids[last]].dir);

		c->prov = d->prov;
		c->where =
		    d->prov.kind == HB_PROV_FILE ? c->name : "command line";
		c->where_line = d->prov.line;
		return sb_fail(c, HB_ECONFLICT,
			       "--mem, --mem-per-cpu, and "
			       "--mem-per-gpu are mutually exclusive.");
	}
	if (ncli == 1) {
		for (int k = 0; k < 3; k++) {
			struct slot *s = &c->slot[ids[k]];

			if (k == cli || !s->set)
				continue;
			s->set = false;
			s->reset_by = c->slot[ids[cli]].dir;
			s->dir = NO_DIR;
		}
	} else if (nenv > 1) {
		const struct hb_directive *d = dir(c, c->slot[ids[last]].dir);

		c->where = d->text;
		c->where_line = 0;
		return sb_fail(c, HB_ECONFLICT,
			       "SBATCH_MEM_PER_NODE, "
			       "SBATCH_MEM_PER_CPU and SBATCH_MEM_PER_GPU are "
			       "mutually exclusive");
	}
	for (int k = 0; k < 3; k++) {
		const struct slot *s = &c->slot[ids[k]];

		if (!s->set)
			continue;
		c->spec->mem_kind = kinds[k];
		c->spec->mem_mb = s->a;
		sb_set_field(c, HB_F_MEM, s->dir);
	}
	return 0;
}

#define UNSET UINT64_MAX

static int gres_fail(struct ctx *c, uint32_t d, int code, const char *msg)
{
	const struct hb_directive *x = dir(c, d);

	c->where = x->prov.kind == HB_PROV_FILE  ? c->name
		   : x->prov.kind == HB_PROV_CLI ? "command line"
						     : x->text;
	c->where_line = x->prov.kind == HB_PROV_ENV ? 0 : x->prov.line;
	return sb_fail(c, code, "%s", msg);
}

static void derive(struct ctx *c, enum hb_field f, uint32_t d, const char *what,
		   uint64_t v)
{
	hb_jobspec_set_prov(c->spec, f,
			      (struct hb_prov){HB_PROV_DERIVED, 0});
	hb_directive_add_field(dir(c, d), f);
	sb_note(c, d,
		hb_arena_printf(&c->spec->arena,
				"sbatch derives %s %llu "
				"from it",
				what, (unsigned long long)v));
}

/*
 * A job's GPU request as sbatch checks it, and the shape it is checked
 * against: GPUs per job, per task, per node, per socket (0: none); the
 * node range, tasks per node, CPUs per task and the task count sbatch
 * sends (UNSET: none).
 */
struct gpus {
	const struct slot *job, *gres, *pnode, *task, *sock, *cpg;
	uint64_t gpj, gpt, gpn, gps;
	uint64_t min, max, tpn, cpt, ntasks;
	bool ntasks_given;
};

static void gpus_read(struct ctx *c, struct gpus *g)
{
	struct hb_jobspec *sp = c->spec;
	bool nodes_set = hb_jobspec_has(sp, HB_F_NODES);

	g->job = &c->slot[O_GPUS];
	g->gres = &c->slot[O_GRES];
	g->pnode = &c->slot[O_GPUS_PER_NODE];
	g->task = &c->slot[O_GPUS_PER_TASK];
	g->sock = &c->slot[O_GPUS_PER_SOCKET];
	g->cpg = &c->slot[O_CPUS_PER_GPU];
	g->gpj = g->job->set ? g->job->a : 0;
	g->gpt = g->task->set ? g->task->a : 0;
	g->gpn = g->gres->set && g->gres->a ? g->gres->a
		 : g->pnode->set	    ? g->pnode->a
					    : 0;
	g->gps = g->sock->set ? g->sock->a : 0;
	g->min = nodes_set ? sp->nodes_min : UNSET;
	g->max = nodes_set && sp->nodes_max ? sp->nodes_max : UNSET;
	g->tpn = sp->ntasks_per_node ? sp->ntasks_per_node : UNSET;
	g->cpt = sp->cpus_per_task ? sp->cpus_per_task : UNSET;
	g->ntasks = UNSET;
	g->ntasks_given = sp->ntasks != 0;
}

/* GPUs with a type and GPUs without one may not be asked for together. */
static int gpus_types(struct ctx *c)
{
	static const int ids[] = {O_GRES, O_GPUS, O_GPUS_PER_NODE,
				  O_GPUS_PER_TASK, O_GPUS_PER_SOCKET};
	bool typed = false, untyped = false;
	uint32_t last = 0;

	for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
		const struct slot *g = &c->slot[ids[k]];

		if (!g->set || !g->a)
			continue;
		typed |= (g->b >> 1) & 1;
		untyped |= (g->b >> 2) & 1;
		if (g->dir > last || last == 0)
			last = g->dir;
	}
	if (typed && untyped)
		return gres_fail(c, last, HB_EINVAL,
				 "invalid GRES specification (GPUs "
				 "with and without type "
				 "identification)");
	return 0;
}

/* The task count sbatch sends. */
static void gpus_ntasks(struct ctx *c, struct gpus *g)
{
	struct hb_jobspec *sp = c->spec;
	bool nodes_set = hb_jobspec_has(sp, HB_F_NODES);
	uint64_t omin = nodes_set ? sp->nodes_min : 1;
	uint64_t omax = nodes_set ? sp->nodes_max : 0;

	if (sp->ntasks)
		g->ntasks = sp->ntasks;
	else if (sp->ntasks_per_node && (omax == 0 || omin == omax))
		g->ntasks = omin * sp->ntasks_per_node;
	if (g->gpt && g->ntasks == UNSET && g->min != UNSET &&
	    g->min == g->max) {
		if (g->tpn != UNSET)
			g->ntasks = g->min * g->tpn;
		else if (g->cpt == UNSET)
			g->ntasks = g->min;
	}
}

/* _test_gres_cnt(), in its order. */
static int gpus_test_cnt(struct ctx *c, const struct gpus *g)
{
	uint64_t gpj = g->gpj, gpt = g->gpt, gpn = g->gpn, gps = g->gps;
	uint32_t d = g->job->set     ? g->job->dir
		     : g->task->set  ? g->task->dir
		     : g->pnode->set ? g->pnode->dir
				     : g->gres->dir;

	if (gpj && ((gpn && gpn > gpj) || (gpt && gpt > gpj) ||
		    (gps && gps > gpj)))
		return gres_fail(c, d, HB_EINVAL,
				 "failed to ensure --gpus >= "
				 "--gres=gpu/--gpus-per-node >= "
				 "--gpus-per-socket");
	if (gpn && ((gpt && gpt > gpn) || (gps && gps > gpn)))
		return gres_fail(c, d, HB_EINVAL,
				 "failed to ensure --gpus >= "
				 "--gpus-per-task");
	if (gps && c->topo[0] < 0)
		return gres_fail(c, g->sock->dir, HB_EINVAL,
				 "--gpus-per-socket option requires "
				 "--sockets-per-node specification");
	if (g->cpg->set && g->cpt != UNSET)
		return gres_fail(c, g->cpg->dir, HB_ECONFLICT,
				 "--cpus-per-gpu is mutually exclusive with "
				 "--cpus-per-task");
	return 0;
}

/* --gpus with GPUs per node: the node count they imply. */
static int gpus_nodes(struct ctx *c, struct gpus *g)
{
	struct hb_jobspec *sp = c->spec;
	uint64_t req;

	if (!g->gpj || !g->gpn)
		return 0;
	if (g->gpj % g->gpn)
		return gres_fail(c, g->job->dir, HB_EINVAL,
				 "--gpus is not multiple of "
				 "--gres=gpu/--gpus-per-node");
	req = g->gpj / g->gpn;
	if ((g->min != UNSET && req < g->min) ||
	    (g->max != UNSET && req > g->max))
		return gres_fail(c, g->job->dir, HB_EINVAL,
				 "based on --gpus and GPUs per node, "
				 "the required node count is outside "
				 "the job's node range");
	g->min = g->max = req;
	if (req <= UINT32_MAX) {
		sp->nodes_min = sp->nodes_max = (uint32_t)req;
		derive(c, HB_F_NODES, g->job->dir, "nodes", req);
	}
	return 0;
}

/* --gpus-per-task: the task count, and the tasks per node. */
static int gpus_tasks(struct ctx *c, struct gpus *g)
{
	struct hb_jobspec *sp = c->spec;
	uint64_t gpj = g->gpj, gpt = g->gpt, gpn = g->gpn;

	if (!gpt)
		return 0;
	if (gpj) {
		if (gpj % gpt)
			return gres_fail(c, g->task->dir, HB_EINVAL,
					 "--gpus not multiple of "
					 "--gpus-per-task");
		if (g->ntasks == UNSET)
			g->ntasks = gpj / gpt;
		else if (g->ntasks != gpj / gpt)
			return gres_fail(c, g->task->dir, HB_ECONFLICT,
					 "based on --gpus and "
					 "--gpus-per-task the number "
					 "of requested tasks differs "
					 "from -n/--ntasks");
	} else if (g->ntasks == UNSET) {
		return gres_fail(c, g->task->dir, HB_EINVAL,
				 "--gpus-per-task used without either "
				 "--gpus or -n/--ntasks is not "
				 "allowed");
	}
	if (!gpn)
		return 0;
	if (gpn % gpt)
		return gres_fail(c, g->task->dir, HB_EINVAL,
				 "GPUs per node not multiple of "
				 "--gpus-per-task");
	if (g->tpn == UNSET) {
		sp->ntasks_per_node = (uint32_t)(gpn / gpt);
		derive(c, HB_F_NTASKS_PER_NODE, g->task->dir,
		       "tasks per node", gpn / gpt);
	} else if (g->tpn != gpn / gpt) {
		return gres_fail(c, g->task->dir, HB_ECONFLICT,
				 "based on GPUs per node and "
				 "--gpus-per-task the number of tasks "
				 "per node differs from "
				 "--ntasks-per-node");
	}
	return 0;
}

/* --cpus-per-gpu with --gpus-per-task: the CPUs per task. */
static int gpus_cpus(struct ctx *c, const struct gpus *g)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *cpg = g->cpg;

	if (!cpg->set || !g->gpt || g->cpt != UNSET)
		return 0;
	if (cpg->a * g->gpt > INT_MAX)
		return gres_fail(c, cpg->dir, HB_ERANGE,
				 "CPUs per task from --cpus-per-gpu "
				 "and --gpus-per-task are too many");
	sp->cpus_per_task = (uint32_t)(cpg->a * g->gpt);
	derive(c, HB_F_CPUS_PER_TASK, cpg->dir, "CPUs per task",
	       sp->cpus_per_task);
	return 0;
}

/* --gpus against the node range: no fewer GPUs than nodes. */
static int gpus_node_max(struct ctx *c, const struct gpus *g)
{
	struct hb_jobspec *sp = c->spec;
	uint64_t gpj = g->gpj;

	if (!gpj)
		return 0;
	if (g->min != UNSET && gpj < g->min)
		return gres_fail(c, g->job->dir, HB_EINVAL, "--gpus < -N");
	if (g->max != UNSET && gpj < g->max) {
		sp->nodes_max = (uint32_t)gpj;
		sb_note(c, g->job->dir,
			hb_arena_printf(&sp->arena,
					"sbatch lowers the "
					"node maximum to "
					"%llu",
					(unsigned long long)gpj));
	}
	return 0;
}

/*
 * The GPU checks sbatch makes before it submits (gres_job_state_validate
 * and _test_gres_cnt in src/common/gres.c), and the counts they imply.
 */
static int validate_gpus(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	struct gpus g;
	int rc;

	gpus_read(c, &g);
	if (c->slot[O_MEM_PER_GPU].set && !g.gpj && !g.gpt && !g.gpn &&
	    !g.gps)
		return gres_fail(c, c->slot[O_MEM_PER_GPU].dir, HB_EINVAL,
				 "requested memory per GPU but did not "
				 "request any GPU");
	if (!g.gpj && !g.gpt && !g.gpn)
		return 0;
	rc = gpus_types(c);
	if (rc)
		return rc;
	gpus_ntasks(c, &g);
	rc = gpus_test_cnt(c, &g);
	if (!rc)
		rc = gpus_nodes(c, &g);
	if (!rc)
		rc = gpus_tasks(c, &g);
	if (!rc)
		rc = gpus_cpus(c, &g);
	if (!rc)
		rc = gpus_node_max(c, &g);
	if (rc)
		return rc;
	if (!g.ntasks_given && g.ntasks != UNSET && g.ntasks <= INT_MAX &&
	    g.gpt) {
		sp->ntasks = (uint32_t)g.ntasks;
		derive(c, HB_F_NTASKS, g.task->dir, "tasks", g.ntasks);
	}
	return 0;
}

/*
 * --ntasks-per-tres (in libslurm's option table, undocumented) is
 * --ntasks-per-gpu under another name: sbatch refuses the two with
 * different values and otherwise reads either as the other, GPUs being the
 * only TRES it counts tasks by (_validate_ntasks_per_gpu in 22.05's
 * src/common/slurm_opt.c).
 */
static int merge_tasks_per_tres(struct ctx *c)
{
	struct slot *tpg = &c->slot[O_NTASKS_PER_GPU];
	const struct slot *tpt = &c->slot[O_NTASKS_PER_TRES];

	if (!tpt->set)
		return 0;
	if (!tpg->set) {
		*tpg = *tpt;
		return 0;
	}
	if (tpg->a == tpt->a)
		return 0;
	return gres_fail(c, tpg->dir > tpt->dir ? tpg->dir : tpt->dir,
			 HB_ECONFLICT,
			 hb_arena_printf(&c->spec->arena,
					 "inconsistent values set to "
					 "--ntasks-per-gpu=%llu and "
					 "--ntasks-per-tres=%llu",
					 (unsigned long long)tpg->a,
					 (unsigned long long)tpt->a));
}

/* The name the tasks-per-GPU request was given by, for messages. */
static const char *tpg_name(const struct ctx *c)
{
	uint32_t d = c->slot[O_NTASKS_PER_GPU].dir;

	return d != NO_DIR &&
		       (c->dinfo[d] & ~DI_NOVALUE) == O_NTASKS_PER_TRES
		       ? "--ntasks-per-tres"
		       : "--ntasks-per-gpu";
}

/* sbatch's own refusals of --ntasks-per-gpu, made before the GPU checks. */
static int check_tasks_per_gpu(struct ctx *c)
{
	const struct slot *tpg = &c->slot[O_NTASKS_PER_GPU];
	int rc = merge_tasks_per_tres(c);

	if (rc || !tpg->set)
		return rc;
	if (c->slot[O_NTASKS_PER_NODE].set)
		return gres_fail(c, tpg->dir, HB_ECONFLICT,
				 "--ntasks-per-node is mutually exclusive "
				 "with --ntasks-per-gpu");
	if (c->slot[O_GPUS_PER_TASK].set)
		return gres_fail(c, tpg->dir, HB_ECONFLICT,
				 "--gpus-per-task is mutually exclusive "
				 "with --ntasks-per-gpu");
	return 0;
}

/*
 * --ntasks-per-gpu: without -n, Slurm runs that many tasks for each GPU
 * the job gets (--gpus, else GPUs per node x nodes).  The controller
 * refuses it with neither GPUs nor a node or task count.
 */
static int resolve_tasks_per_gpu(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *tpg = &c->slot[O_NTASKS_PER_GPU];
	const struct slot *job = &c->slot[O_GPUS], *gres = &c->slot[O_GRES];
	const struct slot *pnode = &c->slot[O_GPUS_PER_NODE];
	uint64_t gpn, gpus, n;

	if (!tpg->set)
		return 0;
	gpn = gres->set && gres->a ? gres->a : pnode->set ? pnode->a : 0;
	gpus = job->set && job->a ? job->a
				  : gpn * (sp->nodes_min ? sp->nodes_min : 1);
	if (!gpus && !c->slot[O_NTASKS].set && !hb_jobspec_has(sp, HB_F_NODES))
		return gres_fail(c, tpg->dir, HB_EINVAL,
				 hb_arena_printf(&sp->arena,
						 "%s needs either a GPU request "
						 "or a node or task count "
						 "(invalid generic resource "
						 "(gres) specification)",
						 tpg_name(c)));
	if (c->slot[O_NTASKS].set) {
		sb_note(c, tpg->dir, "not applied: -n/--ntasks gives the "
				     "task count");
		return 0;
	}
	if (!gpus) {
		sb_note(c, tpg->dir, "not applied: no GPU request to count "
				     "tasks from");
		return 0;
	}
	n = gpus * tpg->a; /* both at most 2^32: no overflow */
	if (n > INT_MAX)
		return gres_fail(c, tpg->dir, HB_ERANGE,
				 hb_arena_printf(&sp->arena,
						 "the task count from %s is "
						 "too large",
						 tpg_name(c)));
	sp->ntasks = (uint32_t)n;
	derive(c, HB_F_NTASKS, tpg->dir, "tasks", n);
	return 0;
}

/*
 * Without -N or a node list, the controller gives a job as many nodes as
 * its tasks need at --ntasks-per-node each: ceil(ntasks / ntasks-per-node)
 * (sbatch --test-only shows it; a held job's NumNodes is only an estimate).
 * One node is the default anyway and is not recorded.
 */
static void derive_nodes(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *tpn = &c->slot[O_NTASKS_PER_NODE];
	const struct slot *nt = &c->slot[O_NTASKS];
	uint32_t d = tpn->set ? tpn->dir : nt->set ? nt->dir : NO_DIR;
	uint64_t n;

	if (hb_jobspec_has(sp, HB_F_NODES) || !sp->ntasks ||
	    !sp->ntasks_per_node)
		return;
	n = ((uint64_t)sp->ntasks + sp->ntasks_per_node - 1) /
	    sp->ntasks_per_node;
	if (n <= 1)
		return;
	sp->nodes_min = (uint32_t)n; /* at most ntasks */
	hb_jobspec_set_prov(sp, HB_F_NODES,
			    (struct hb_prov){HB_PROV_DERIVED, 0});
	if (d == NO_DIR)
		return;
	hb_directive_add_field(dir(c, d), HB_F_NODES);
	sb_note(c, d,
		hb_arena_printf(&sp->arena,
				"Slurm allocates %llu nodes: %u tasks at "
				"%u per node",
				(unsigned long long)n, sp->ntasks,
				sp->ntasks_per_node));
}

/* One GPU request wins the jobspec's single GPU field. */
static void resolve_gpus(struct ctx *c)
{
	static const struct {
		int id;
		uint8_t scope;
	} order[] = {
	    {O_GPUS_PER_NODE, HB_GPU_PER_NODE},
	    {O_GRES, HB_GPU_PER_NODE},
	    {O_GPUS_PER_TASK, HB_GPU_PER_TASK},
	    {O_GPUS, HB_GPU_PER_JOB},
	};
	int win = -1;

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		const struct slot *s = &c->slot[order[k].id];

		if (!s->set || s->a == 0)
			continue;
		if (win < 0) {
			win = (int)k;
			c->spec->gpu_scope = order[k].scope;
			c->spec->gpus = (uint32_t)s->a;
			c->spec->gpu_type = s->t;
			sb_set_field(c, HB_F_GPUS, s->dir);
			if (s->b & 1)
				sb_note(c, s->dir,
					"several GPU types: kept as "
					"an untyped GPU count");
			continue;
		}
		sb_note(c, s->dir,
			hb_arena_printf(&c->spec->arena,
					"not carried: the job's GPUs "
					"are taken from --%s",
					sb_opt_name(order[win].id)));
	}
	if (c->slot[O_GPUS_PER_SOCKET].set && c->slot[O_GPUS_PER_SOCKET].a)
		sb_note(c, c->slot[O_GPUS_PER_SOCKET].dir,
			"GPUs per socket; no jobspec field");
}

static int resolve_array(struct ctx *c)
{
	const struct slot *s = &c->slot[O_ARRAY];
	uint8_t bits[(ARRAY_MAX_SIZE + 7) / 8] = {0};
	uint32_t lim;
	bool any;

	if (!s->set)
		return 0;
	if (sb_parse_array(s->val, bits, &lim, &any) || !any) {
		sb_note(c, s->dir, "names no array index: not an array job");
		return 0;
	}
	c->spec->array = s->val;
	c->spec->array_max_running = lim;
	sb_set_field(c, HB_F_ARRAY, s->dir);
	return sb_array_ranges(c, bits);
}

/* --export pairs NAME=VALUE become job environment (find_quote_token). */
static int resolve_export(struct ctx *c)
{
	const struct slot *s = &c->slot[O_EXPORT];
	const char *p;
	bool any = false;

	if (!s->set || !s->val)
		return 0;
	if (ieq(s->val, "ALL") || ieq(s->val, "NONE"))
		return 0;
	p = s->val;
	while (*p) {
		const char *start = p, *eq;
		int sq = 0, dq = 0;
		size_t n;
		char *tok;
		int rc;

		while (*p && (sq || dq || *p != ',')) {
			if (*p == '\'')
				sq = !sq;
			else if (*p == '"')
				dq = !dq;
			p++;
		}
		n = (size_t)(p - start);
		if (*p == ',')
			p++;
		if (n >= 2 && ((start[0] == '\'' && start[n - 1] == '\'') ||
			       (start[0] == '"' && start[n - 1] == '"'))) {
			start++;
			n -= 2;
		}
		if (n == 0)
			continue;
		tok = hb_jobspec_strndup(c->spec, start, n);
		if (!tok)
			return sb_nomem(c);
		if (ieq(tok, "ALL") || ieq(tok, "NONE"))
			continue;
		eq = strchr(tok, '=');
		if (eq == tok)
			continue;
		if (eq)
			tok[eq - tok] = '\0';
		rc = hb_jobspec_add_env(c->spec, tok, eq ? eq + 1 : NULL);
		if (rc)
			return sb_nomem(c);
		any = true;
	}
	if (any)
		sb_set_field(c, HB_F_ENV, s->dir);
	return 0;
}

/* The checks and adjustments of sbatch's _opt_verify() that change
 * what the job asks for. */
/*
 * validate_hint_option() and verify_hint(): --hint wins over, or yields
 * to, the node topology options, and sets some of them itself.
 */
static void resolve_hint(struct ctx *c)
{
	static const int topo_ids[] = {O_NTASKS_PER_CORE, O_THREADS_PER_CORE,
				       O_EXTRA_NODE_INFO};
	const struct slot *h = &c->slot[O_HINT];
	bool cli = false, env = false;
	const char *p;

	if (!h->set || !h->val)
		return;
	for (size_t k = 0; k < sizeof(topo_ids) / sizeof(topo_ids[0]); k++) {
		const struct slot *t = &c->slot[topo_ids[k]];

		if (t->set && !t->by_env)
			cli = true;
		else if (t->set)
			env = true;
	}
	if (cli || (h->by_env && env)) {
		sb_note(c, h->dir,
			"ignored: sbatch drops --hint when "
			"--ntasks-per-core, --threads-per-core or -B "
			"is given");
		return;
	}
	if (!h->by_env) {
		/* the hint replaces any topology request */
		c->topo[0] = c->topo[1] = c->topo[2] = -1;
		c->extra_set = false;
	}
	for (p = h->val; *p;) {
		const char *e = p;
		char tok[32];
		size_t n;

		while (*e && !(*e == ';' || (*e == ',' && !is_digit(e[1]))))
			e++;
		n = (size_t)(e - p);
		if (n < sizeof(tok)) {
			memcpy(tok, p, n);
			tok[n] = '\0';
			if (ieq(tok, "compute_bound")) {
				c->topo[0] = c->topo[1] = -1;
				c->topo[2] = 1;
			} else if (ieq(tok, "memory_bound")) {
				c->topo[1] = c->topo[2] = 1;
			} else if (ieq(tok, "multithread")) {
				c->topo[2] = -1;
			} else if (ieq(tok, "nomultithread")) {
				c->topo[2] = 1;
			}
		}
		p = *e ? e + 1 : e;
	}
	c->topo_dir = h->dir;
}

static int resolve_counts(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	struct slot *nodes = &c->slot[O_NODES];
	const struct slot *nl = &c->slot[O_NODELIST];
	const struct slot *nt = &c->slot[O_NTASKS];
	bool nodes_set = nodes->set, ntasks_set = nt->set;
	uint64_t min = nodes->set ? nodes->a : 1;
	uint64_t max = nodes->set ? nodes->b : 0;
	uint32_t nodes_dir = nodes->set ? nodes->dir : NO_DIR;

	resolve_hint(c);
	if (nl->set && nl->dir != NO_DIR && c->dinfo[nl->dir] == O_NODELIST) {
		uint64_t cnt;
		int rc = count_nodes(c, nl->val, &cnt, 0, NULL);

		if (rc == HB_ENOMEM)
			return rc;
		if (rc == 0) {
			if (!nodes_set || cnt > min) {
				min = cnt;
				nodes_dir = nl->dir;
			}
			nodes_set = true;
		} else {
			sb_note(c, nl->dir,
				"node list not expanded: the node "
				"count is not derived from it");
		}
	}
	if (max && min > max)
		return sb_fail(c, HB_EINVAL,
			       "invalid number of nodes (-N "
			       "%llu-%llu)",
			       (unsigned long long)min,
			       (unsigned long long)max);
	if (nodes_set && ntasks_set && max > nt->a)
		max = nt->a;
	if (nodes_set && ntasks_set && nt->a < min) {
		const char *kept = NULL;
		uint64_t cnt;

		min = max = nt->a;
		/* sbatch drops the node list's last nodes to match */
		if (sp->nodelist &&
		    count_nodes(c, sp->nodelist, &cnt, min, &kept) == HB_ENOMEM)
			return HB_ENOMEM;
		if (kept) {
			sp->nodelist = kept;
			sb_note(c, nl->dir,
				hb_arena_printf(&sp->arena,
						"sbatch keeps only the "
						"first %llu nodes: %s",
						(unsigned long long)min, kept));
		}
		sb_note(c, nodes_dir,
			hb_arena_printf(&sp->arena,
					"sbatch sets the node count "
					"to %llu: only %llu tasks",
					(unsigned long long)min,
					(unsigned long long)nt->a));
		if (nt->dir != NO_DIR)
			hb_directive_add_field(dir(c, nt->dir), HB_F_NODES);
	}
	/* --ntasks-per-node implies the task count first */
	if (c->slot[O_NTASKS_PER_NODE].set && !ntasks_set &&
	    (max == 0 || min == max))
		ntasks_set = true;
	/* "1 proc / min_[socket * core * thread] default" */
	if ((nodes_set || c->extra_set) && (min == max || max == 0) &&
	    !ntasks_set &&
	    (c->topo[0] > 0 || c->topo[1] > 0 || c->topo[2] > 0)) {
		uint64_t n = min ? min : 1;

		for (int k = 0; k < 3; k++) {
			if (c->topo[k] < 0)
				continue;
			if (c->topo[k] && n > INT_MAX / (uint64_t)c->topo[k])
				n = (uint64_t)INT_MAX + 1; /* refused below */
			else
				n *= (uint64_t)c->topo[k];
		}
		if (n == 0 || n > INT_MAX)
			return sb_fail(c, HB_EUNSUP,
				       "the task count sbatch "
				       "derives from the node topology request "
				       "(%llu) is not supported",
				       (unsigned long long)n);
		sp->ntasks = (uint32_t)n;
		hb_jobspec_set_prov(sp, HB_F_NTASKS,
				      (struct hb_prov){HB_PROV_DERIVED, 0});
		hb_directive_add_field(dir(c, c->topo_dir), HB_F_NTASKS);
		sb_note(c, c->topo_dir,
			hb_arena_printf(&sp->arena,
					"sbatch derives %llu "
					"tasks from it",
					(unsigned long long)n));
	}
	if (nodes_set && nodes_dir != NO_DIR) {
		if (min > UINT32_MAX || max > UINT32_MAX)
			return sb_fail(c, HB_ERANGE, "node count too large");
		sp->nodes_min = (uint32_t)min;
		sp->nodes_max = (uint32_t)max;
		sb_set_field(c, HB_F_NODES, nodes_dir);
	}
	return 0;
}

int sb_resolve(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *s;
	int rc;

	rc = resolve_mem(c);
	if (rc)
		return rc;
	for (size_t k = 0; k < sizeof(str_map) / sizeof(str_map[0]); k++) {
		s = &c->slot[str_map[k].id];
		if (!s->set || !s->val)
			continue;
		*(const char **)((char *)sp + str_map[k].off) = s->val;
		sb_set_field(c, str_map[k].field, s->dir);
	}
	rc = lower_account(c);
	if (rc)
		return rc;
	s = &c->slot[O_NODELIST];
	if (s->set && s->dir != NO_DIR && c->dinfo[s->dir] == O_NODELIST) {
		sp->nodelist = s->val;
		sb_set_field(c, HB_F_NODELIST, s->dir);
	}
	rc = resolve_counts(c);
	if (rc)
		return rc;
	s = &c->slot[O_NTASKS];
	if (s->set) {
		sp->ntasks = (uint32_t)s->a;
		sb_set_field(c, HB_F_NTASKS, s->dir);
	}
	s = &c->slot[O_NTASKS_PER_NODE];
	if (s->set) {
		sp->ntasks_per_node = (uint32_t)s->a;
		sb_set_field(c, HB_F_NTASKS_PER_NODE, s->dir);
	}
	s = &c->slot[O_CPUS_PER_TASK];
	if (s->set) {
		sp->cpus_per_task = (uint32_t)s->a;
		sb_set_field(c, HB_F_CPUS_PER_TASK, s->dir);
	}
	rc = check_tasks_per_gpu(c);
	if (!rc)
		rc = validate_gpus(c);
	if (!rc)
		rc = resolve_tasks_per_gpu(c);
	if (rc)
		return rc;
	derive_nodes(c);
	resolve_gpus(c);
	s = &c->slot[O_EXCLUSIVE];
	if (s->set) {
		if (s->a <= 1) {
			sp->exclusive = s->a == 0;
			sb_set_field(c, HB_F_EXCLUSIVE, s->dir);
		} else {
			sb_note(c, s->dir,
				s->a == 2 ? "nodes shared only with the "
					    "user's jobs; no jobspec field"
					  : "nodes shared only within the "
					    "MCS label; no jobspec field");
		}
	}
	s = &c->slot[O_TIME];
	if (s->set) {
		sp->time_limit = s->a;
		sb_set_field(c, HB_F_TIME_LIMIT, s->dir);
	}
	s = &c->slot[O_TIME_MIN];
	if (s->set) {
		sp->time_min = s->a;
		sb_set_field(c, HB_F_TIME_MIN, s->dir);
		if (c->slot[O_TIME].set && sp->time_min > sp->time_limit)
			return gres_fail(c, s->dir, HB_EINVAL,
					 "invalid --time-min specification "
					 "(exceeds the job's time limit)");
	}
	rc = resolve_array(c);
	if (rc)
		return rc;
	if (c->slot[O_MAIL_TYPE].set) {
		sp->mail_type = sb_mail_string(c, c->mail_bits);
		if (!sp->mail_type)
			return sb_nomem(c);
		for (uint32_t d = 0; d < sp->ndirectives; d++)
			if (c->dinfo[d] == O_MAIL_TYPE)
				sb_set_field(c, HB_F_MAIL_TYPE, d);
	}
	s = &c->slot[O_REQUEUE];
	if (s->set) {
		sp->requeue = (int8_t)s->a;
		sb_set_field(c, HB_F_REQUEUE, s->dir);
	}
	return resolve_export(c);
}

/* --hpcbridge-fabric: the network the ranks need, said in words; the
 * script's variables are read later and do not change it. */
static int resolve_fabric(struct ctx *c)
{
	const struct slot *s = &c->slot[O_HB_FABRIC];
	struct hb_directive *d;
	char why[HB_FABRIC_WHY_MAX + 1];

	if (!s->set)
		return 0;
	d = dir(c, s->dir);
	snprintf(why, sizeof(why), "--hpcbridge-fabric=%.16s", s->val);
	if (d->prov.kind == HB_PROV_FILE)
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 " at %.200s:%u", c->name, d->prov.line);
	if (hb_jobspec_set_fabric(c->spec, s->val, why, d->prov))
		return sb_nomem(c); /* the value was checked */
	hb_directive_add_field(d, HB_F_FABRIC);
	return 0;
}

/* --hpcbridge-data values, deadline, target and fabric. */
int sb_resolve_hpcbridge(struct ctx *c)
{
	struct hb_jobspec *sp = c->spec;
	const struct slot *s;

	s = &c->slot[O_HB_DEADLINE];
	if (s->set) {
		if (!c->slot[O_DEADLINE].set) {
			sp->deadline = s->val;
			sb_set_field(c, HB_F_DEADLINE, s->dir);
			sb_note(c, s->dir, "the job's deadline for placement");
		} else {
			sb_note(c, s->dir, "not used: --deadline is given");
		}
	}
	s = &c->slot[O_HB_TARGET];
	if (s->set)
		sb_note(c, s->dir,
			hb_arena_printf(&sp->arena, "placement target: %s",
					s->val));
	return resolve_fabric(c);
}

/* Notes for directives whose value did not survive. */
void sb_override_notes(struct ctx *c)
{
	for (uint32_t d = 0; d < c->spec->ndirectives; d++) {
		uint16_t info = c->dinfo[d];
		int id = info & ~DI_NOVALUE;
		const struct slot *s = &c->slot[sb_group(id)];
		uint32_t by;

		if ((info & DI_NOVALUE) || sb_cumulative(id))
			continue;
		if (s->dir == d)
			continue;
		by = s->dir != NO_DIR ? s->dir : s->reset_by;
		if (by == NO_DIR || by == d)
			continue;
		sb_note(c, d,
			hb_arena_printf(&c->spec->arena, "overridden by %s",
					where_text(c, by)));
		/* Replaced by another directive: it named the same fields as
		 * the winner, and the report shows it overridden.  Reset to
		 * nothing: it set nothing. */
		if (s->dir == NO_DIR) {
			dir(c, d)->nfields = 0;
			continue;
		}
		for (uint8_t k = 0; k < dir(c, by)->nfields; k++)
			hb_directive_add_field(dir(c, d),
					       dir(c, by)->fields[k]);
	}
}

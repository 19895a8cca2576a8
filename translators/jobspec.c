/*
 * jobspec.c - the canonical job model: storage, directives, derived shape.
 */
#include <stdlib.h>
#include <string.h>

#include "hpcbridge/hash.h"
#include "hpcbridge/jobspec.h"

static const char *const field_names[HB__F_COUNT] = {
	[HB_F_NAME] = "name",
	[HB_F_USER] = "user",
	[HB_F_ACCOUNT] = "account",
	[HB_F_PARTITION] = "partition",
	[HB_F_QOS] = "qos",
	[HB_F_COMMENT] = "comment",
	[HB_F_NODES] = "nodes",
	[HB_F_NTASKS] = "ntasks",
	[HB_F_NTASKS_PER_NODE] = "ntasks_per_node",
	[HB_F_CPUS_PER_TASK] = "cpus_per_task",
	[HB_F_MEM] = "mem",
	[HB_F_GPUS] = "gpus",
	[HB_F_LICENSES] = "licenses",
	[HB_F_EXCLUSIVE] = "exclusive",
	[HB_F_CONSTRAINT] = "constraint",
	[HB_F_NODELIST] = "nodelist",
	[HB_F_EXCLUDE] = "exclude",
	[HB_F_TIME_LIMIT] = "time_limit",
	[HB_F_TIME_MIN] = "time_min",
	[HB_F_BEGIN] = "begin",
	[HB_F_DEADLINE] = "deadline",
	[HB_F_SIGNAL] = "signal",
	[HB_F_OUTPUT] = "output",
	[HB_F_ERROR] = "error",
	[HB_F_INPUT] = "input",
	[HB_F_CHDIR] = "chdir",
	[HB_F_ARRAY] = "array",
	[HB_F_DEPENDENCY] = "dependency",
	[HB_F_MAIL_TYPE] = "mail_type",
	[HB_F_MAIL_USER] = "mail_user",
	[HB_F_REQUEUE] = "requeue",
	[HB_F_EXPORT] = "export",
	[HB_F_ENV] = "env",
	[HB_F_MPI] = "mpi",
	[HB_F_CONTAINER] = "container",
	[HB_F_CHECKPOINT] = "checkpoint_dir",
	[HB_F_DATA] = "data",
	[HB_F_SCRIPT] = "script",
	[HB_F_KEEP] = "keep",
	[HB_F_HETEROGENEOUS] = "chunks",
	[HB_F_FABRIC] = "fabric",
};

const char *hb_field_name(enum hb_field f)
{
	if ((unsigned)f >= HB__F_COUNT)
		return NULL;
	return field_names[f];
}

const char *hb_mpi_impl_name(enum hb_mpi_impl m)
{
	switch (m) {
	case HB_MPI_OPENMPI:
		return "OpenMPI";
	case HB_MPI_INTEL:
		return "Intel";
	case HB_MPI_MPICH:
		return "MPICH";
	case HB_MPI_MVAPICH2:
		return "MVAPICH2";
	case HB_MPI_UNKNOWN:
		break;
	}
	return NULL;
}

enum hb_mpi_impl hb_mpi_impl_parse(const char *name)
{
	for (int i = HB_MPI_OPENMPI; name && i <= HB_MPI_MVAPICH2; i++)
		if (!strcmp(name, hb_mpi_impl_name((enum hb_mpi_impl)i)))
			return (enum hb_mpi_impl)i;
	return HB_MPI_UNKNOWN;
}

enum hb_mpi_impl hb_mpi_family(enum hb_mpi_impl m)
{
	return m == HB_MPI_MVAPICH2 ? HB_MPI_MPICH : m;
}

bool hb_mpi_abi_compatible(enum hb_mpi_impl a, enum hb_mpi_impl b)
{
	/* Open MPI has its own ABI; the others share MPICH's (the MPICH
	 * ABI Compatibility Initiative: libmpi.so.12). */
	if (a == HB_MPI_UNKNOWN || b == HB_MPI_UNKNOWN || a == b)
		return true;
	return a != HB_MPI_OPENMPI && b != HB_MPI_OPENMPI;
}

/* Arena cap per job: the script plus everything parsed from it. */
#define JOBSPEC_ARENA_MAX (64u * 1024 * 1024)

void hb_jobspec_init(struct hb_jobspec *spec, const char *source_name)
{
	memset(spec, 0, sizeof(*spec));
	hb_arena_init(&spec->arena, JOBSPEC_ARENA_MAX);
	spec->requeue = -1;
	spec->run_uid = spec->run_gid = -1;
	spec->source_name =
		hb_arena_strdup(&spec->arena, source_name ? source_name : "-");
}

void hb_jobspec_free(struct hb_jobspec *spec)
{
	hb_arena_free(&spec->arena);
	memset(spec, 0, sizeof(*spec));
	spec->requeue = -1;
	spec->run_uid = spec->run_gid = -1;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* (uid_t)-1 means "no change" to setuid() and chown(): never an id. */
#define ID_MAX 4294967294LL

int hb_jobspec_set_identity(struct hb_jobspec *spec, int64_t uid, int64_t gid,
			    const uint32_t *groups, uint32_t n)
{
	uint32_t *g = NULL, k = 0;

	if (!spec || uid < -1 || uid > ID_MAX || gid < -1 || gid > ID_MAX ||
	    (n && !groups))
		return HB_EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (groups[i] > ID_MAX)
			return HB_EINVAL;
	if (n) {
		g = hb_arena_alloc(&spec->arena, (size_t)n * sizeof(*g));
		if (!g)
			return HB_ENOMEM;
		memcpy(g, groups, (size_t)n * sizeof(*g));
		qsort(g, n, sizeof(*g), u32_cmp);
		for (uint32_t i = 0; i < n; i++)
			if (!k || g[k - 1] != g[i])
				g[k++] = g[i];
	}
	spec->run_uid = uid;
	spec->run_gid = gid;
	spec->run_groups = g;
	spec->nrun_groups = k;
	return 0;
}

char *hb_jobspec_strdup(struct hb_jobspec *spec, const char *s)
{
	return hb_arena_strdup(&spec->arena, s);
}

char *hb_jobspec_strndup(struct hb_jobspec *spec, const char *s, size_t n)
{
	return hb_arena_strndup(&spec->arena, s, n);
}

void hb_jobspec_set_prov(struct hb_jobspec *spec, enum hb_field f,
			   struct hb_prov o)
{
	if ((unsigned)f < HB__F_COUNT)
		spec->prov[f] = o;
}

/* Grow an arena-backed array of elem-sized items to hold one more. */
static void *grow(struct hb_jobspec *spec, void *arr, uint32_t n, uint32_t *cap,
		  size_t elem)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return arr;
	if (*cap > UINT32_MAX / 2)
		return NULL;
	ncap = *cap ? *cap * 2 : 8;
	p = hb_arena_alloc(&spec->arena, (size_t)ncap * elem);
	if (!p)
		return NULL;
	if (n)
		memcpy(p, arr, (size_t)n * elem);
	*cap = ncap;
	return p;
}

struct hb_directive *hb_jobspec_add_directive(struct hb_jobspec *spec,
					      enum hb_directive_kind kind,
					      struct hb_prov prov,
					      const char *text, size_t len)
{
	struct hb_directive *arr, *d;
	char *t;

	arr = grow(spec, spec->directives, spec->ndirectives,
		   &spec->cap_directives, sizeof(*arr));
	if (!arr)
		return NULL;
	t = hb_arena_strndup(&spec->arena, text, len);
	if (!t)
		return NULL;
	spec->directives = arr;
	d = &arr[spec->ndirectives++];
	memset(d, 0, sizeof(*d));
	d->kind = (uint8_t)kind;
	d->prov = prov;
	d->text = t;
	return d;
}

void hb_directive_add_field(struct hb_directive *d, enum hb_field f)
{
	for (uint8_t i = 0; i < d->nfields; i++)
		if (d->fields[i] == f)
			return;
	if (d->nfields < HB_DIRECTIVE_MAX_FIELDS)
		d->fields[d->nfields++] = (uint8_t)f;
}

/* Lists of strings and env pairs: capacity is the next power of two, so
 * no separate capacity field is needed. */
static uint32_t pow2cap(uint32_t n)
{
	uint32_t c = 8;

	while (c < n)
		c *= 2;
	return c;
}

static const char **add_str(struct hb_jobspec *spec, const char **arr,
			    uint32_t *n, const char *s)
{
	uint32_t cap = *n ? pow2cap(*n) : 0;
	const char *copy = hb_arena_strdup(&spec->arena, s);

	if (!copy || *n == UINT32_MAX)
		return NULL;
	arr = grow(spec, arr, *n, &cap, sizeof(*arr));
	if (!arr)
		return NULL;
	arr[(*n)++] = copy;
	return arr;
}

/*
 * The index of spec->env's names: open addressing with linear probing, in
 * the arena, at most half full.  Each slot holds the name's copy, its
 * position in spec->env and its hash.  The hash is SipHash-1-3 under a key
 * drawn for each index, so a script cannot choose names that collide (a
 * fixed hash such as FNV would let one land every name in one chain and
 * make the check quadratic again).
 *
 * Below ENV_INDEX_MIN names a scan is cheaper, and no key is drawn.  The
 * index trusts itself while spec->env and spec->nenv are the array and
 * count it last saw and a slot's position still holds its very string;
 * otherwise (k8s.c reorders and removes entries in place) it is rebuilt,
 * in O(nenv).  Rebuilding keeps the first of two equal names, the one a
 * scan would find.
 */
#define ENV_INDEX_MIN 16

struct env_slot {
	const char *name; /* NULL: empty */
	uint32_t pos;
	uint32_t hash;
};

struct hb_env_index {
	struct hb_siphash_key key;
	const struct hb_env *env; /* spec->env when last in step */
	uint32_t n;		  /* spec->nenv when last in step */
	uint32_t used, cap;	  /* slots: cap a power of two */
	struct env_slot *slot;
};

static uint32_t name_hash(const struct hb_env_index *x, const char *name)
{
	return (uint32_t)hb_siphash13(&x->key, name, strlen(name));
}

/* Put (name, pos, hash) in a free slot of a table of cap slots. */
static void slot_put(struct env_slot *t, uint32_t cap, const char *name,
		     uint32_t pos, uint32_t hash)
{
	uint32_t j = hash & (cap - 1);

	while (t[j].name)
		j = (j + 1) & (cap - 1);
	t[j].name = name;
	t[j].pos = pos;
	t[j].hash = hash;
}

/* Room for want names, at most half full. */
static int index_room(struct hb_jobspec *spec, struct hb_env_index *x,
		      uint32_t want)
{
	struct env_slot *t;
	uint32_t cap = x->cap ? x->cap : 32;

	while (cap / 2 < want) {
		if (cap > UINT32_MAX / 2)
			return HB_ENOMEM;
		cap *= 2;
	}
	if (cap == x->cap)
		return 0;
	t = hb_arena_alloc(&spec->arena, (size_t)cap * sizeof(*t));
	if (!t)
		return HB_ENOMEM;
	for (uint32_t i = 0; i < x->cap; i++)
		if (x->slot[i].name)
			slot_put(t, cap, x->slot[i].name, x->slot[i].pos,
				 x->slot[i].hash);
	x->slot = t;
	x->cap = cap;
	return 0;
}

/* Look name up: its position, or -1; -2 when a slot is out of step with
 * spec->env (the caller rebuilds). */
static int64_t index_find(const struct hb_jobspec *spec,
			  const struct hb_env_index *x, const char *name,
			  uint32_t hash)
{
	for (uint32_t j = hash & (x->cap - 1); x->slot[j].name;
	     j = (j + 1) & (x->cap - 1)) {
		const struct env_slot *e = &x->slot[j];

		if (e->hash != hash || strcmp(e->name, name) != 0)
			continue;
		if (e->pos >= spec->nenv || spec->env[e->pos].name != e->name)
			return -2;
		return e->pos;
	}
	return -1;
}

/* Index every name of spec->env afresh. */
static int index_build(struct hb_jobspec *spec)
{
	struct hb_env_index *x = spec->env_index;
	int rc;

	if (!x) {
		x = hb_arena_alloc(&spec->arena, sizeof(*x));
		if (!x)
			return HB_ENOMEM;
		hb_siphash_key_new(&x->key);
		spec->env_index = x;
	}
	if (x->cap)
		memset(x->slot, 0, (size_t)x->cap * sizeof(*x->slot));
	x->used = 0;
	x->env = NULL; /* out of step until the end */
	if ((rc = index_room(spec, x, spec->nenv + 1)))
		return rc;
	for (uint32_t i = 0; i < spec->nenv; i++) {
		const char *n = spec->env[i].name;
		uint32_t h;

		if (!n)
			continue;
		h = name_hash(x, n);
		if (index_find(spec, x, n, h) >= 0)
			continue; /* a scan finds the first */
		slot_put(x->slot, x->cap, n, i, h);
		x->used++;
	}
	x->env = spec->env;
	x->n = spec->nenv;
	return 0;
}

/* Where name is in spec->env: its position, -1 when absent, below -1
 * when out of memory.  *hash is set when the index is in use. */
static int64_t env_find(struct hb_jobspec *spec, const char *name,
			uint32_t *hash)
{
	struct hb_env_index *x = spec->env_index;
	int64_t pos;

	if (spec->nenv < ENV_INDEX_MIN) {
		for (uint32_t i = 0; i < spec->nenv; i++)
			if (spec->env[i].name &&
			    strcmp(spec->env[i].name, name) == 0)
				return i;
		return -1;
	}
	if (!x || x->env != spec->env || x->n != spec->nenv) {
		if (index_build(spec))
			return HB_ENOMEM;
		x = spec->env_index;
	}
	*hash = name_hash(x, name);
	pos = index_find(spec, x, name, *hash);
	if (pos == -2) {
		if (index_build(spec))
			return HB_ENOMEM;
		pos = index_find(spec, x, name, *hash);
	}
	return pos;
}

int hb_jobspec_add_env(struct hb_jobspec *spec, const char *name,
		       const char *value)
{
	uint32_t cap = spec->nenv ? pow2cap(spec->nenv) : 0, hash = 0;
	struct hb_env_index *x;
	struct hb_env *arr;
	const char *n, *v = NULL;
	int64_t pos;

	if (!name || spec->nenv == UINT32_MAX)
		return HB_EINVAL;
	pos = env_find(spec, name, &hash);
	if (pos < -1)
		return HB_ENOMEM;
	if (value && !(v = hb_arena_strdup(&spec->arena, value)))
		return HB_ENOMEM;
	/* A later assignment to the same name wins, in the first's place. */
	if (pos >= 0) {
		spec->env[pos].value = v;
		return 0;
	}
	/* In use only when env_find() just put it in step. */
	x = spec->nenv >= ENV_INDEX_MIN ? spec->env_index : NULL;
	if (x && index_room(spec, x, x->used + 1))
		return HB_ENOMEM;
	n = hb_arena_strdup(&spec->arena, name);
	if (!n)
		return HB_ENOMEM;
	arr = grow(spec, spec->env, spec->nenv, &cap, sizeof(*arr));
	if (!arr)
		return HB_ENOMEM;
	spec->env = arr;
	arr[spec->nenv].name = n;
	arr[spec->nenv].value = v;
	if (x) {
		slot_put(x->slot, x->cap, n, spec->nenv, hash);
		x->used++;
		x->env = arr;
		x->n = spec->nenv + 1;
	}
	spec->nenv++;
	return 0;
}

#define ADD_LIST(fn, arr, n)                                                   \
	int fn(struct hb_jobspec *spec, const char *s)                         \
	{                                                                      \
		const char **p = add_str(spec, spec->arr, &spec->n, s);        \
		if (!p)                                                        \
			return HB_ENOMEM;                                      \
		spec->arr = p;                                                 \
		return 0;                                                      \
	}

ADD_LIST(hb_jobspec_add_data, data, ndata)
ADD_LIST(hb_jobspec_add_module, modules, nmodules)
ADD_LIST(hb_jobspec_add_mpi_line, mpi_lines, nmpi_lines)

static int mul32(uint32_t a, uint32_t b, uint32_t *out)
{
	uint64_t p = (uint64_t)a * b;

	if (p > UINT32_MAX)
		return HB_ERANGE;
	*out = (uint32_t)p;
	return 0;
}

int hb_jobspec_shape(const struct hb_jobspec *spec, struct hb_shape *out)
{
	struct hb_shape s = { 0 };
	uint64_t tasks;

	/* Without a node count, as many nodes as the tasks need at
	 * ntasks_per_node each: the count Slurm allocates. */
	if (spec->nodes_min)
		s.nodes = spec->nodes_min;
	else if (spec->ntasks && spec->ntasks_per_node)
		s.nodes = (uint32_t)(((uint64_t)spec->ntasks +
				      spec->ntasks_per_node - 1) /
				     spec->ntasks_per_node);
	else
		s.nodes = 1;
	if (spec->ntasks_per_node)
		s.tasks_per_node = spec->ntasks_per_node;
	else if (spec->ntasks)
		s.tasks_per_node =
			(uint32_t)(((uint64_t)spec->ntasks + s.nodes - 1) /
				   s.nodes);
	else
		s.tasks_per_node = 1;
	if (spec->ntasks) {
		s.ntasks = spec->ntasks;
	} else {
		tasks = (uint64_t)s.nodes * s.tasks_per_node;
		if (tasks > UINT32_MAX)
			return HB_ERANGE;
		s.ntasks = (uint32_t)tasks;
	}
	s.cpus_per_task = spec->cpus_per_task ? spec->cpus_per_task : 1;
	if (mul32(s.tasks_per_node, s.cpus_per_task, &s.cpus_per_node))
		return HB_ERANGE;

	switch (spec->gpu_scope) {
	case HB_GPU_PER_NODE:
		s.gpus_per_node = spec->gpus;
		break;
	case HB_GPU_PER_JOB:
		s.gpus_per_node =
			(uint32_t)(((uint64_t)spec->gpus + s.nodes - 1) /
				   s.nodes);
		break;
	case HB_GPU_PER_TASK:
		if (mul32(spec->gpus, s.tasks_per_node, &s.gpus_per_node))
			return HB_ERANGE;
		break;
	}

	switch (spec->mem_kind) {
	case HB_MEM_PER_NODE:
		s.mem_per_node_mb = spec->mem_mb;
		s.whole_node_mem = spec->mem_mb == 0;
		break;
	case HB_MEM_PER_CPU:
		if (spec->mem_mb > UINT64_MAX / s.cpus_per_node)
			return HB_ERANGE;
		s.mem_per_node_mb = spec->mem_mb * s.cpus_per_node;
		break;
	case HB_MEM_PER_GPU:
		if (s.gpus_per_node &&
		    spec->mem_mb > UINT64_MAX / s.gpus_per_node)
			return HB_ERANGE;
		s.mem_per_node_mb = spec->mem_mb * s.gpus_per_node;
		break;
	case HB_MEM_JOB:
		s.mem_per_node_mb = (spec->mem_mb + s.nodes - 1) / s.nodes;
		break;
	case HB_MEM_PER_PROCESS:
		if (spec->mem_mb > UINT64_MAX / s.tasks_per_node)
			return HB_ERANGE;
		s.mem_per_node_mb = spec->mem_mb * s.tasks_per_node;
		break;
	}
	*out = s;
	return 0;
}

uint64_t hb_jobspec_array_count(const struct hb_jobspec *spec)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < spec->narray_ranges; i++) {
		const struct hb_range *r = &spec->array_ranges[i];

		if (r->step && r->end >= r->start)
			n += (uint64_t)((r->end - r->start) / r->step) + 1;
		if (n > UINT32_MAX)
			return UINT32_MAX;
	}
	return n;
}

uint32_t hb_jobspec_array_index(const struct hb_jobspec *spec, uint64_t i)
{
	for (uint32_t k = 0; k < spec->narray_ranges; k++) {
		const struct hb_range *r = &spec->array_ranges[k];
		uint64_t cnt;

		if (!r->step || r->end < r->start)
			continue;
		cnt = (uint64_t)((r->end - r->start) / r->step) + 1;
		if (i < cnt)
			return (uint32_t)(r->start + i * r->step);
		i -= cnt;
	}
	return 0;
}

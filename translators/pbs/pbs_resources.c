/*
 * pbs_resources.c - the -l resources: Torque's nodes=, PBS Pro's select=
 * and place=, walltimes, memory, CPUs, GPUs, features, hosts and gres,
 * each checked and kept in the parser state for the settling to read.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "hpcbridge/units.h"
#include "pbs_int.h"

/* A name fit for a host, a feature or a constraint word. */
static int is_word(const char *s, size_t n)
{
	if (n == 0 || n > MAX_NAME)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      is_digit(ch) || ch == '_' || ch == '-' || ch == '.'))
			return 0;
	}
	return 1;
}

/* A product or a sum of counts against its bound. */
static int total_ok(struct ctx *c, const char *what, uint64_t n, uint64_t max)
{
	if (n <= max)
		return 0;
	return pbs_fail(c, HB_ERANGE,
			"%s: %llu in all is too many (at most %llu, as sbatch)",
			what, (unsigned long long)n, (unsigned long long)max);
}

static int size_mib(struct ctx *c, const char *what, const char *v,
		    uint64_t *mib)
{
	uint64_t bytes;
	int rc = hb_parse_pbs_size(v, &bytes);

	if (rc == HB_ERANGE)
		return pbs_fail(c, HB_ERANGE, "%s: size '%s' overflows", what,
				v);
	if (rc)
		return pbs_fail(
			c, HB_EINVAL,
			"%s: malformed size '%s' (a number with an optional "
			"b, w, kb, mb, gb, tb or pb suffix)",
			what, v);
	*mib = hb_bytes_to_mib(bytes);
	return 0;
}

static int pbs_time(struct ctx *c, const char *what, const char *v,
		    uint64_t *sec)
{
	int rc = hb_parse_pbs_time(v, sec);

	if (rc == HB_ERANGE || (!rc && *sec > MAX_TIME))
		return pbs_fail(c, HB_ERANGE,
				"%s: time '%s' is too large (at most %llu "
				"seconds, as sbatch)",
				what, v, (unsigned long long)MAX_TIME);
	if (rc)
		return pbs_fail(c, HB_EINVAL,
				"%s: malformed time '%s' (seconds, or "
				"[[HH:]MM:]SS)",
				what, v);
	return 0;
}

static int gpu_mode(const char *w)
{
	static const char *const modes[] = {
	    "exclusive_process",
	    "exclusive_thread",
	    "exclusive",
	    "default",
	    "shared",
	    "reseterr",
	    NULL,
	};

	for (int i = 0; modes[i]; i++)
		if (strcasecmp(w, modes[i]) == 0)
			return 1;
	return 0;
}

/* One '+'-separated Torque node spec, in place (s is writable). */
static int node_spec(struct ctx *c, char *s, struct tnodes *t, bool first,
		     uint32_t *shape)
{
	uint32_t count = 1, ppn = 0, gpus = 0, cpn = 0;
	char *save = NULL, *e;
	int idx = 0, rc;

	if (!*s)
		return pbs_fail(c, HB_EINVAL, "-l nodes: empty node spec");
	for (e = s;; idx++) {
		char *colon = strchr(e, ':');
		char *eq;

		if (colon)
			*colon = '\0';
		save = colon ? colon + 1 : NULL;
		if (!*e)
			return pbs_fail(c, HB_EINVAL,
					"-l nodes: empty element in '%s'", s);
		eq = strchr(e, '=');
		if (idx == 0 && all_digits(e)) {
			rc = pbs_num32(c, "-l nodes", e, 1, MAX_COUNT, &count);
			if (rc)
				return rc;
		} else if (idx == 0) {
			if (!is_word(e, strlen(e)))
				return pbs_fail(c, HB_EINVAL,
						"-l nodes: malformed host name "
						"'%s'",
						e);
			rc = pbs_set_add(c, &t->hosts, e, strlen(e));
			if (rc)
				return rc;
		} else if (eq) {
			*eq = '\0';
			if (strcasecmp(e, "ppn") == 0) {
				rc = pbs_num32(c, "-l nodes: ppn", eq + 1, 1,
					       MAX_COUNT, &ppn);
				t->ppn_set = true;
			} else if (strcasecmp(e, "gpus") == 0) {
				rc = pbs_num32(c, "-l nodes: gpus", eq + 1, 0,
					       MAX_GPUS, &gpus);
			} else if (strcasecmp(e, "ncpus") == 0 ||
				   strcasecmp(e, "cpp") == 0) {
				rc = pbs_num32(c, "-l nodes: ncpus", eq + 1, 1,
					       MAX_COUNT, &cpn);
			} else {
				rc = NOTE(c,
					  "node attribute %s=%s is not "
					  "carried",
					  e, eq + 1);
			}
			if (rc)
				return rc;
		} else if (gpu_mode(e)) {
			rc = NOTE(c, "GPU mode '%s' is not carried", e);
			if (rc)
				return rc;
		} else {
			if (!is_word(e, strlen(e)))
				return pbs_fail(c, HB_EINVAL,
						"-l nodes: malformed property "
						"'%s'",
						e);
			rc = pbs_set_add(c, &t->feat, e, strlen(e));
			if (rc)
				return rc;
		}
		if (!save)
			break;
		e = save;
	}
	rc = total_ok(c, "-l nodes: nodes", (uint64_t)t->nodes + count,
		      MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l nodes: tasks",
			      t->ntasks + (uint64_t)count * (ppn ? ppn : 1),
			      MAX_COUNT);
	if (rc)
		return rc;
	t->nodes += count;
	t->ntasks += (uint64_t)count * (ppn ? ppn : 1);
	if (!first && (shape[0] != ppn || shape[1] != gpus || shape[2] != cpn))
		t->mixed = true;
	shape[0] = ppn;
	shape[1] = gpus;
	shape[2] = cpn;
	if (ppn > t->ppn)
		t->ppn = ppn;
	if (gpus > t->gpus)
		t->gpus = gpus;
	if (cpn > t->cpn)
		t->cpn = cpn;
	return 0;
}

static int r_nodes(struct ctx *c, const char *v)
{
	struct tnodes t;
	char *s = pbs_dup(c, v), *hash, *spec;
	uint32_t shape[3] = {0, 0, 0}, nspecs = 0;
	int rc;

	memset(&t, 0, sizeof(t));
	if (!s)
		return pbs_oom(c);
	hash = strchr(s, '#');
	if (hash)
		*hash++ = '\0';
	for (spec = s; spec; nspecs++) {
		char *plus = strchr(spec, '+');

		if (plus)
			*plus = '\0';
		if (nspecs >= MAX_ITEMS)
			return pbs_fail(c, HB_ETOOBIG,
					"-l nodes: more than %d node specs",
					MAX_ITEMS);
		rc = node_spec(c, spec, &t, nspecs == 0, shape);
		if (rc)
			return rc;
		spec = plus ? plus + 1 : NULL;
	}
	while (hash) {
		char *next = strchr(hash, '#');

		if (next)
			*next++ = '\0';
		if (strcasecmp(hash, "excl") == 0) {
			t.excl = true;
		} else if (strcasecmp(hash, "shared") == 0) {
			rc = NOTE(c, "#shared: nodes may be shared (the "
				     "default)");
			if (rc)
				return rc;
		} else if (is_word(hash, strlen(hash))) {
			rc = pbs_set_add(c, &t.feat, hash, strlen(hash));
			if (rc)
				return rc;
		} else {
			return pbs_fail(c, HB_EINVAL,
					"-l nodes: malformed suffix '#%s'",
					hash);
		}
		hash = next;
	}
	/* Every node is sized for the largest spec. */
	rc = total_ok(c, "-l nodes: tasks (ppn x nodes)",
		      (uint64_t)t.nodes * (t.ppn ? t.ppn : 1), MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l nodes: CPUs (ncpus x nodes)",
			      (uint64_t)t.nodes * t.cpn, MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l nodes: GPUs (gpus x nodes)",
			      (uint64_t)t.nodes * t.gpus, MAX_GPUS);
	if (rc)
		return rc;
	if (t.mixed) {
		rc = NOTE(c,
			  "node specs differ: %u nodes in all, each sized "
			  "for the largest spec (ppn=%u, gpus=%u); %llu "
			  "tasks in all",
			  t.nodes, t.ppn ? t.ppn : 1, t.gpus,
			  (unsigned long long)t.ntasks);
		if (rc)
			return rc;
	}
	rc = pbs_take_slot(c, &c->d_nodes);
	c->tn = t;
	return rc;
}

/* One resource inside a select chunk. */
static int chunk_res(struct ctx *c, struct pselect *p, struct hb_chunk *k,
		     char *e, bool *ncpus_set, bool *mpi_set)
{
	char *eq = strchr(e, '=');
	const char *v;
	uint64_t mib = 0;
	uint32_t n;
	int rc;

	if (!eq)
		return pbs_fail(c, HB_EINVAL,
				"-l select: chunk resource '%s' has no value",
				e);
	*eq = '\0';
	v = eq + 1;
	if (!*v)
		return pbs_fail(c, HB_EINVAL, "-l select: %s has no value", e);
	if (strcasecmp(e, "ncpus") == 0) {
		*ncpus_set = true;
		return pbs_num32(c, "-l select: ncpus", v, 0, MAX_COUNT,
				 &k->ncpus);
	}
	if (strcasecmp(e, "mpiprocs") == 0) {
		*mpi_set = true;
		return pbs_num32(c, "-l select: mpiprocs", v, 0, MAX_COUNT,
				 &k->mpiprocs);
	}
	if (strcasecmp(e, "ompthreads") == 0)
		return pbs_num32(c, "-l select: ompthreads", v, 1, MAX_COUNT,
				 &k->ompthreads);
	if (strcasecmp(e, "ngpus") == 0 ||
	    strcasecmp(e, "naccelerators") == 0) {
		rc = pbs_num32(c, "-l select: ngpus", v, 0, MAX_GPUS, &n);
		if (!rc && n > k->ngpus)
			k->ngpus = n;
		return rc;
	}
	if (strcasecmp(e, "accelerator") == 0) {
		if (strcasecmp(v, "true") == 0 && k->ngpus == 0)
			k->ngpus = 1;
		return 0;
	}
	if (strcasecmp(e, "mem") == 0) {
		rc = size_mib(c, "-l select: mem", v, &mib);
		if (!rc)
			k->mem_mb = mib;
		return rc;
	}
	if (strcasecmp(e, "vmem") == 0) {
		rc = size_mib(c, "-l select: vmem", v, &mib);
		return rc ? rc
			  : NOTE(c,
				 "vmem=%s: virtual memory has no "
				 "equivalent; dropped",
				 v);
	}
	if (strcasecmp(e, "host") == 0 || strcasecmp(e, "vnode") == 0) {
		if (!is_word(v, strlen(v)))
			return pbs_fail(c, HB_EINVAL,
					"-l select: malformed %s '%s'", e, v);
		return pbs_set_add(c, &p->hosts, v, strlen(v));
	}
	if (strcasecmp(e, "accelerator_model") == 0 ||
	    strcasecmp(e, "gpu_model") == 0 || strcasecmp(e, "gpu_type") == 0) {
		if (!is_word(v, strlen(v)))
			return NOTE(c, "%s=%s: not a GPU type; dropped", e, v);
		p->gpu_type = pbs_dup(c, v);
		return p->gpu_type ? 0 : pbs_oom(c);
	}
	if (strcasecmp(e, "model") == 0 || strcasecmp(e, "arch") == 0 ||
	    strcasecmp(e, "cpu_type") == 0) {
		if (!is_word(v, strlen(v)))
			return NOTE(c,
				    "%s=%s: not usable as a constraint; "
				    "dropped",
				    e, v);
		return pbs_set_add(c, &p->cons, v, strlen(v));
	}
	if (strcasecmp(v, "true") == 0 && is_word(e, strlen(e)))
		return pbs_set_add(c, &p->cons, e, strlen(e));
	if (strcasecmp(v, "false") == 0)
		return NOTE(c,
			    "%s=false: a constraint cannot exclude a "
			    "feature; dropped",
			    e);
	return NOTE(c, "site resource %s=%s is not carried", e, v);
}

/* What the chunks of one select= ask for in all. */
struct ptotals {
	uint64_t nodes, tasks, cpus, gpus;
};

/* Add chunk k to the totals, within sbatch's bounds: the CPUs a chunk's
 * node needs are its ncpus, or its tasks x threads when more. */
static int chunk_totals(struct ctx *c, const struct hb_chunk *k,
			struct ptotals *t)
{
	uint64_t per = (uint64_t)(k->mpiprocs ? k->mpiprocs : 1) *
		       (k->ompthreads ? k->ompthreads : 1);
	int rc;

	if (per < k->ncpus)
		per = k->ncpus;
	t->nodes += k->count;
	t->tasks += (uint64_t)k->count * k->mpiprocs;
	t->cpus += (uint64_t)k->count * per;
	t->gpus += (uint64_t)k->count * k->ngpus;
	rc = total_ok(c, "-l select: mpiprocs x ompthreads", per, MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l select: nodes (chunk counts)", t->nodes,
			      MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l select: tasks (count x mpiprocs)",
			      t->tasks, MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l select: CPUs (count x ncpus)", t->cpus,
			      MAX_COUNT);
	if (!rc)
		rc = total_ok(c, "-l select: GPUs (count x ngpus)", t->gpus,
			      MAX_GPUS);
	return rc;
}

static int r_select(struct ctx *c, const char *v)
{
	struct pselect p;
	struct ptotals tot = {0, 0, 0, 0};
	char *s = pbs_dup(c, v), *chunk;
	uint32_t n = 1;
	int rc;

	memset(&p, 0, sizeof(p));
	if (!s)
		return pbs_oom(c);
	for (const char *q = s; *q; q++)
		if (*q == '+' && ++n > MAX_ITEMS)
			return pbs_fail(c, HB_ETOOBIG,
					"-l select: more than %d chunks",
					MAX_ITEMS);
	p.chunks = hb_arena_alloc(&c->spec->arena, n * sizeof(*p.chunks));
	if (!p.chunks)
		return pbs_oom(c);
	for (chunk = s; chunk;) {
		char *plus = strchr(chunk, '+'), *e, *next;
		struct hb_chunk *k = &p.chunks[p.n++];
		bool ncpus_set = false, mpi_set = false;

		if (plus)
			*plus = '\0';
		if (!*chunk)
			return pbs_fail(c, HB_EINVAL, "-l select: empty chunk");
		k->count = 1;
		for (e = chunk; e; e = next) {
			char *colon = strchr(e, ':');

			if (colon)
				*colon = '\0';
			next = colon ? colon + 1 : NULL;
			if (!*e)
				return pbs_fail(c, HB_EINVAL,
						"-l select: empty element in "
						"chunk %u",
						p.n);
			if (e == chunk && all_digits(e)) {
				rc = pbs_num32(c, "-l select: chunk count", e,
					       1, MAX_COUNT, &k->count);
			} else {
				rc = chunk_res(c, &p, k, e, &ncpus_set,
					       &mpi_set);
			}
			if (rc)
				return rc;
		}
		if (!ncpus_set) {
			uint64_t want = (uint64_t)(mpi_set ? k->mpiprocs : 1) *
					(k->ompthreads ? k->ompthreads : 1);

			rc = total_ok(c,
				      "-l select: ncpus (mpiprocs x "
				      "ompthreads)",
				      want, MAX_COUNT);
			if (rc)
				return rc;
			k->ncpus = want ? (uint32_t)want : 1;
			if (mpi_set || k->ompthreads) {
				rc = NOTE(c,
					  "chunk %u: no ncpus; taken as "
					  "mpiprocs x ompthreads = %u",
					  p.n, k->ncpus);
				if (rc)
					return rc;
			}
		}
		if (!mpi_set)
			k->mpiprocs = k->ncpus > 0 ? 1 : 0;
		rc = chunk_totals(c, k, &tot);
		if (rc)
			return rc;
		chunk = plus ? plus + 1 : NULL;
	}
	rc = pbs_take_slot(c, &c->d_select);
	c->ps = p;
	return rc;
}

static int r_place(struct ctx *c, const char *v)
{
	char *s = pbs_dup(c, v), *e, *next;
	int arr = ARR_NONE, rc;
	bool excl = false;

	if (!s)
		return pbs_oom(c);
	for (e = s; e; e = next) {
		char *colon = strchr(e, ':');

		if (colon)
			*colon = '\0';
		next = colon ? colon + 1 : NULL;
		if (strcasecmp(e, "free") == 0) {
			arr = ARR_FREE;
		} else if (strcasecmp(e, "pack") == 0) {
			arr = ARR_PACK;
		} else if (strcasecmp(e, "scatter") == 0) {
			arr = ARR_SCATTER;
		} else if (strcasecmp(e, "vscatter") == 0) {
			arr = ARR_VSCATTER;
		} else if (strcasecmp(e, "excl") == 0) {
			excl = true;
		} else if (strcasecmp(e, "exclhost") == 0) {
			excl = true;
			rc = NOTE(c, "exclhost: whole hosts, as exclusive");
			if (rc)
				return rc;
		} else if (strcasecmp(e, "shared") == 0) {
			rc = NOTE(c, "shared: nodes may be shared (the "
				     "default)");
			if (rc)
				return rc;
		} else if (strncasecmp(e, "group=", 6) == 0 && e[6]) {
			rc = NOTE(c,
				  "group=%s: grouping by a node resource "
				  "is not carried",
				  e + 6);
			if (rc)
				return rc;
		} else {
			return pbs_fail(c, HB_EINVAL,
					"-l place: unknown element '%s' (free, "
					"pack, scatter, vscatter, excl, "
					"exclhost, shared, group=)",
					e);
		}
	}
	if (arr == ARR_FREE)
		rc = NOTE(c, "free: one node per chunk");
	else if (arr == ARR_SCATTER)
		rc = NOTE(c, "scatter: one node per chunk");
	else if (arr == ARR_VSCATTER)
		rc = NOTE(c, "vscatter: one node per chunk, as scatter");
	else if (arr == ARR_PACK)
		rc = NOTE(c, "pack: every chunk on one node");
	else
		rc = 0;
	if (rc)
		return rc;
	rc = pbs_take_slot(c, &c->d_place);
	c->place_arr = arr;
	c->place_excl = excl;
	return rc;
}

static int r_features(struct ctx *c, const char *v, struct strset *set)
{
	const char *p = v;

	while (*p) {
		size_t n = strcspn(p, ":&");
		int rc;

		if (!is_word(p, n))
			return pbs_fail(c, HB_EINVAL,
					"malformed feature in '%s'", v);
		rc = pbs_set_add(c, set, p, n);
		if (rc)
			return rc;
		p += n;
		if (*p && !*++p)
			return pbs_fail(c, HB_EINVAL,
					"malformed feature in '%s'", v);
	}
	return 0;
}

static int r_gres(struct ctx *c, const char *v)
{
	struct hb_buf lic;
	const char *p = v;
	uint32_t gpus = 0, nitems = 0;
	int rc = 0;

	hb_buf_init(&lic, 0);
	while (*p) {
		size_t n = strcspn(p, "+%,");
		size_t nl = strcspn(p, ":=");
		uint32_t cnt = 1;
		char num[24];

		if (nl > n)
			nl = n;
		if (!is_word(p, nl) || ++nitems > MAX_ITEMS) {
			rc = pbs_fail(c, HB_EINVAL, "-l gres: malformed '%s'",
				      v);
			goto out;
		}
		if (nl < n) {
			size_t dl = n - nl - 1;

			if (dl == 0 || dl >= sizeof(num)) {
				rc = pbs_fail(
					c, HB_EINVAL,
					"-l gres: malformed count in '%s'", v);
				goto out;
			}
			memcpy(num, p + nl + 1, dl);
			num[dl] = '\0';
			rc = pbs_num32(c, "-l gres", num, 1, MAX_GPUS, &cnt);
			if (rc)
				goto out;
		}
		if ((nl == 3 && strncasecmp(p, "gpu", 3) == 0) ||
		    (nl == 4 && strncasecmp(p, "gpus", 4) == 0)) {
			gpus = cnt;
		} else {
			rc = hb_buf_printf(&lic, "%s%.*s:%u",
					   lic.len ? "," : "", (int)nl, p, cnt);
			if (rc) {
				rc = pbs_oom(c);
				goto out;
			}
		}
		p += n;
		if (*p && !*++p) {
			rc = pbs_fail(c, HB_EINVAL, "-l gres: malformed '%s'",
				      v);
			goto out;
		}
	}
	rc = pbs_take_slot(c, &c->d_gres);
	c->gres_gpus = gpus;
	c->gres_lic = NULL;
	if (!rc && lic.len) {
		c->gres_lic = pbs_dup(c, lic.data);
		if (!c->gres_lic)
			rc = pbs_oom(c);
	}
out:
	hb_buf_free(&lic);
	return rc;
}

/*
 * -l mppnodes: the nodes ALPS may place the job on (aprun -L): node IDs
 * (NIDs) and NID ranges, "32,33,40-47", or node names, joined by commas.
 * A range becomes a Slurm host range, "[40-47]".
 */
static int r_mppnodes(struct ctx *c, const char *v)
{
	struct strset s = {0};
	uint64_t n = 0;
	size_t vl = strlen(v);
	const char *p = v, *end = v + vl;

	if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
		p++;
		end--;
	}
	if (p == end)
		goto bad;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t len = (size_t)((comma ? comma : end) - p);
		const char *q = p;
		int64_t lo, hi;
		int rc;

		if (!is_word(p, len))
			goto bad;
		/* digits-digits: a NID range */
		if (hb_scan_digits(&q, 9, &lo) && *q == '-' && q++ &&
		    hb_scan_digits(&q, 9, &hi) && q == p + len) {
			const char *r;

			if (lo > hi || hi - lo >= MAX_COUNT)
				goto bad;
			r = hb_arena_printf(&c->spec->arena, "[%.*s]",
					    (int)len, p);
			if (!r)
				return pbs_oom(c);
			rc = pbs_set_add(c, &s, r, len + 2);
			n += hi - lo + 1;
		} else {
			rc = pbs_set_add(c, &s, p, len);
			n++;
		}
		if (rc)
			return rc;
		if (n > MAX_COUNT)
			return pbs_fail(c, HB_ERANGE,
					"-l mppnodes: more than %u nodes",
					MAX_COUNT);
		p += len;
		if (p < end && ++p == end)
			goto bad;
	}
	c->mppnodes = s;
	c->mppnodes_n = (uint32_t)n;
	return pbs_take_slot(c, &c->d_mppnodes);
bad:
	return pbs_fail(c, HB_EINVAL,
			"-l mppnodes: malformed node list '%s' (node IDs, "
			"ranges such as 40-47, or names, joined by commas)",
			v);
}

/* Not one of the Cray resources r_mpp() reads (no HB_E* code). */
#define NOT_MPP (-1)

/*
 * Cray's Torque resources, read as ALPS does: mppwidth is the processing
 * elements (tasks) in all, mppnppn how many go on a node, mppdepth the
 * CPUs (threads) each has, mppmem the memory of each (aprun -m), mppnodes
 * the nodes to place them on (aprun -L).  Counts at least 1;
 * pbs_settle() shapes the job.
 */
static int r_mpp(struct ctx *c, const char *item, const char *v)
{
	const struct {
		const char *what;
		uint32_t *val, *slot;
	} mpp[] = {
	    {"-l mppwidth", &c->mppwidth, &c->d_mppwidth},
	    {"-l mppnppn", &c->mppnppn, &c->d_mppnppn},
	    {"-l mppdepth", &c->mppdepth, &c->d_mppdepth},
	};
	int rc;

	if (strcasecmp(item, "mppnodes") == 0)
		return r_mppnodes(c, v);
	if (strcasecmp(item, "mppmem") == 0) {
		rc = size_mib(c, "-l mppmem", v, &c->mppmem_mb);
		if (!rc && !c->mppmem_mb)
			rc = NOTE(c, "zero memory is no request; dropped");
		return rc ? rc : pbs_take_slot(c, &c->d_mppmem);
	}
	for (size_t i = 0; i < sizeof(mpp) / sizeof(mpp[0]); i++) {

		if (strcasecmp(item, mpp[i].what + 3))
			continue;
		rc = pbs_num32(c, mpp[i].what, v, 1, MAX_COUNT, mpp[i].val);
		return rc ? rc : pbs_take_slot(c, mpp[i].slot);
	}
	return NOT_MPP;
}

/* Resources read but not carried, with the reason. */
static const struct {
	const char *name;
	const char *why;
} dropped_res[] = {
    {"cput", "a CPU-time limit; only walltime is carried"},
    {"pcput", "a per-process CPU-time limit; only walltime is carried"},
    {"file", "a per-file size limit is not carried"},
    {"nice", "the nice value is not carried"},
    {"arch", "the architecture is not carried"},
    {"opsys", "the operating system is not carried"},
    {"software", "software requests are not carried"},
    {"other", "'other' is site-specific and not carried"},
    {"epilogue", "epilogue scripts are not carried"},
    {"prologue", "prologue scripts are not carried"},
    {"soft_walltime", "a soft walltime is not carried"},
    {"nodect", "nodect is read-only in PBS"},
    {"tpn", "tasks per node without nodes= are not carried"},
    {"trl", "task ranges are not carried"},
    {"mpiprocs", "mpiprocs belongs inside select=; dropped"},
    {"ompthreads", "ompthreads belongs inside select=; dropped"},
    {"naccelerators", "naccelerators belongs inside select=; dropped"},
    {"preempt_targets", "preemption targets are not carried"},
    {NULL, NULL},
};

static int res_item(struct ctx *c, char *item)
{
	char *eq = strchr(item, '=');
	const char *v;
	uint64_t mib = 0;
	int rc;

	if (!eq) {
		if (!is_word(item, strlen(item)))
			return pbs_fail(c, HB_EINVAL,
					"-l: malformed resource '%s'", item);
		return NOTE(c, "resource '%s' without a value is not carried",
			    item);
	}
	*eq = '\0';
	v = eq + 1;
	if (!is_word(item, strlen(item)))
		return pbs_fail(c, HB_EINVAL,
				"-l: malformed resource name '%s'", item);
	if (!*v)
		return pbs_fail(c, HB_EINVAL, "-l %s: missing value", item);

	if (strcasecmp(item, "nodes") == 0)
		return r_nodes(c, v);
	if (strcasecmp(item, "select") == 0)
		return r_select(c, v);
	if (strcasecmp(item, "place") == 0)
		return r_place(c, v);
	if (strcasecmp(item, "walltime") == 0 ||
	    strcasecmp(item, "max_walltime") == 0 ||
	    strcasecmp(item, "min_walltime") == 0) {
		const char *what = strcasecmp(item, "walltime") == 0
				       ? "-l walltime"
				   : strcasecmp(item, "max_walltime") == 0
				       ? "-l max_walltime"
				       : "-l min_walltime";
		uint64_t sec;
		uint32_t *slot;

		rc = pbs_time(c, what, v, &sec);
		if (rc)
			return rc;
		if (strcasecmp(item, "walltime") == 0) {
			slot = &c->d_wall;
			c->wall = sec;
		} else if (strcasecmp(item, "max_walltime") == 0) {
			slot = &c->d_maxwall;
			c->maxwall = sec;
		} else {
			slot = &c->d_minwall;
			c->minwall = sec;
		}
		if (sec == 0) {
			rc = NOTE(c, "a zero time is no limit; dropped");
			if (rc)
				return rc;
		}
		return pbs_take_slot(c, slot);
	}
	if (strcasecmp(item, "mem") == 0 || strcasecmp(item, "pmem") == 0) {
		bool job = strcasecmp(item, "mem") == 0;

		rc = size_mib(c, job ? "-l mem" : "-l pmem", v, &mib);
		if (rc)
			return rc;
		if (mib == 0) {
			rc = NOTE(c, "zero memory is no request; dropped");
			if (rc)
				return rc;
		}
		if (job) {
			c->mem_mb = mib;
			return pbs_take_slot(c, &c->d_mem);
		}
		c->pmem_mb = mib;
		return pbs_take_slot(c, &c->d_pmem);
	}
	if (strcasecmp(item, "vmem") == 0 || strcasecmp(item, "pvmem") == 0) {
		rc = size_mib(c, "-l vmem", v, &mib);
		return rc ? rc
			  : NOTE(c, "virtual memory limits have no "
				    "equivalent; dropped");
	}
	if (strcasecmp(item, "ncpus") == 0) {
		rc = pbs_num32(c, "-l ncpus", v, 1, MAX_COUNT, &c->ncpus);
		return rc ? rc : pbs_take_slot(c, &c->d_ncpus);
	}
	if (strcasecmp(item, "procs") == 0) {
		rc = pbs_num32(c, "-l procs", v, 1, MAX_COUNT, &c->procs);
		return rc ? rc : pbs_take_slot(c, &c->d_procs);
	}
	if (strcasecmp(item, "ngpus") == 0) {
		rc = pbs_num32(c, "-l ngpus", v, 0, MAX_GPUS, &c->ngpus);
		return rc ? rc : pbs_take_slot(c, &c->d_ngpus);
	}
	if (strcasecmp(item, "naccesspolicy") == 0) {
		rc = pbs_take_slot(c, &c->d_naccess);
		c->naccess_excl = strcasecmp(v, "singlejob") == 0;
		if (!rc && !c->naccess_excl)
			rc = NOTE(c,
				  "access policy '%s' is not carried "
				  "(only singlejob is: exclusive)",
				  v);
		return rc;
	}
	if (strcasecmp(item, "feature") == 0) {
		struct strset s = {0};

		rc = r_features(c, v, &s);
		if (rc)
			return rc;
		c->feature = s;
		return pbs_take_slot(c, &c->d_feature);
	}
	if (strcasecmp(item, "host") == 0) {
		struct strset s = {0};
		const char *p = v;

		while (*p) {
			size_t n = strcspn(p, "+");

			if (!is_word(p, n))
				return pbs_fail(c, HB_EINVAL,
						"-l host: malformed host '%s'",
						v);
			rc = pbs_set_add(c, &s, p, n);
			if (rc)
				return rc;
			p += n;
			if (*p && !*++p)
				return pbs_fail(c, HB_EINVAL,
						"-l host: malformed host '%s'",
						v);
		}
		c->host = s;
		return pbs_take_slot(c, &c->d_host);
	}
	if (strcasecmp(item, "gres") == 0)
		return r_gres(c, v);
	rc = r_mpp(c, item, v);
	if (rc != NOT_MPP)
		return rc;
	for (int i = 0; dropped_res[i].name; i++)
		if (strcasecmp(item, dropped_res[i].name) == 0)
			return NOTE(c, "%s", dropped_res[i].why);
	return NOTE(c,
		    "unknown resource '%s': site-defined resources are "
		    "not carried",
		    item);
}

/* The comma after the resource at p, or NULL: a value in double quotes
 * may hold commas (Torque's -l mppnodes="32,33,40"). */
static char *item_end(char *p)
{
	bool quoted = false;

	for (; *p; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (*p == ',' && !quoted)
			return p;
	}
	return NULL;
}

int pbs_opt_l(struct ctx *c, const char *arg)
{
	char *s = pbs_dup(c, arg), *item, *next;
	uint32_t n = 0;
	int rc;

	if (!s)
		return pbs_oom(c);
	if (!*s) {
		rc = pbs_new_dir(c, "-l", 2);
		return rc ? rc
			  : pbs_fail(c, HB_EINVAL, "-l: empty resource list");
	}
	for (item = s; item; item = next) {
		char *comma = item_end(item);
		const char *text;

		if (comma)
			*comma = '\0';
		next = comma ? comma + 1 : NULL;
		if (++n > MAX_ITEMS)
			return pbs_fail(c, HB_ETOOBIG,
					"-l: more than %d resources",
					MAX_ITEMS);
		text = hb_arena_printf(&c->spec->arena, "-l %s", item);
		if (!text)
			return pbs_oom(c);
		rc = pbs_new_dir(c, text, strlen(text));
		if (rc)
			return rc;
		if (!*item)
			return pbs_fail(c, HB_EINVAL,
					"-l: empty resource in '%s'", arg);
		rc = res_item(c, item);
		if (rc)
			return rc;
	}
	return 0;
}

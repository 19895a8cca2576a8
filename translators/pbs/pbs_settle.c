/*
 * pbs_settle.c - what the PBS reader settles once every directive is
 * read: the job's shape from nodes= or select=, the constraint, node list,
 * licenses and exclusive from every source, memory, GPUs, times, output
 * names, join, project and export.
 */
#include <stdio.h>
#include <string.h>

#include "pbs_int.h"

/* Errors from here on name directive d's place (settling). */
static void at_dir(struct ctx *c, uint32_t d)
{
	c->cli = dir_at(c, d)->prov.kind == HB_PROV_CLI;
	c->loc = dir_at(c, d)->prov.line;
}

/* Join a set with sep into an arena string; NULL for an empty set. */
static int set_join(struct ctx *c, const struct strset *s, char sep, char **out)
{
	size_t len = 0;
	char *p;

	*out = NULL;
	if (!s->n)
		return 0;
	for (uint32_t i = 0; i < s->n; i++)
		len += strlen(s->v[i]) + 1;
	p = hb_arena_alloc(&c->spec->arena, len);
	if (!p)
		return pbs_oom(c);
	*out = p;
	for (uint32_t i = 0; i < s->n; i++) {
		size_t n = strlen(s->v[i]);

		if (i)
			*p++ = sep;
		memcpy(p, s->v[i], n);
		p += n;
	}
	*p = '\0';
	return 0;
}

/* ------------------------------------------------------------------ */
/* Settling: resources into the jobspec's shape                         */

static int joined_note(struct ctx *c, uint32_t d, uint32_t into,
		       const char *what)
{
	char w[48];

	if (d == NO_DIR || d == into)
		return 0;
	return pbs_note_at(c, d, "%s joined into the %s set at %s", what, what,
			   pbs_where(c, into, w));
}

static uint32_t latest(const uint32_t *d, int n)
{
	uint32_t best = NO_DIR;

	for (int i = 0; i < n; i++)
		if (d[i] != NO_DIR && (best == NO_DIR || d[i] > best))
			best = d[i];
	return best;
}

/* The union of the lists that were given; d[i] becomes NO_DIR where
 * list i is absent or empty. */
static int gather(struct ctx *c, const struct strset *const *sets,
		  uint32_t *d, int n, struct strset *all)
{
	for (int i = 0; i < n; i++) {
		if (d[i] == NO_DIR || !sets[i]->n)
			d[i] = NO_DIR;
		for (uint32_t k = 0; d[i] != NO_DIR && k < sets[i]->n; k++) {
			int rc = pbs_set_add(c, all, sets[i]->v[k],
					     strlen(sets[i]->v[k]));

			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Constraint, nodelist, licenses and exclusive from every source. */
static int settle_lists(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	const struct strset *fs[3] = {&c->tn.feat, &c->ps.cons, &c->feature};
	const struct strset *hs[4] = {&c->tn.hosts, &c->ps.hosts, &c->host,
				      &c->mppnodes};
	uint32_t fd[3] = {c->d_nodes, c->d_select, c->d_feature};
	uint32_t hd[4] = {c->d_nodes, c->d_select, c->d_host, c->d_mppnodes};
	struct strset all = {0}, hall = {0};
	uint32_t into;
	int rc;

	rc = gather(c, fs, fd, 3, &all);
	if (!rc)
		rc = gather(c, hs, hd, 4, &hall);
	if (rc)
		return rc;
	into = latest(fd, 3);
	if (into != NO_DIR) {
		char *j;

		rc = set_join(c, &all, '&', &j);
		if (rc)
			return rc;
		s->constraint = j;
		pbs_set_at(c, into, HB_F_CONSTRAINT);
		for (int i = 0; i < 3; i++) {
			rc = joined_note(c, fd[i], into, "constraint");
			if (rc)
				return rc;
		}
	}
	into = latest(hd, 4);
	if (into != NO_DIR) {
		char *j;

		rc = set_join(c, &hall, ',', &j);
		if (rc)
			return rc;
		s->nodelist = j;
		pbs_set_at(c, into, HB_F_NODELIST);
		for (int i = 0; i < 4; i++) {
			rc = joined_note(c, hd[i], into, "nodelist");
			if (rc)
				return rc;
		}
	}
	if (c->d_gres != NO_DIR && c->gres_lic) {
		s->licenses = c->gres_lic;
		pbs_set_at(c, c->d_gres, HB_F_LICENSES);
	}
	{
		uint32_t ed[4] = {
		    c->tn.excl ? c->d_nodes : NO_DIR,
		    c->place_excl ? c->d_place : NO_DIR,
		    c->naccess_excl ? c->d_naccess : NO_DIR,
		    c->d_wx,
		};

		into = latest(ed, 4);
		if (into != NO_DIR) {
			s->exclusive = true;
			pbs_set_at(c, into, HB_F_EXCLUSIVE);
			for (int i = 0; i < 4; i++) {
				char w[48];

				if (ed[i] == NO_DIR || ed[i] == into)
					continue;
				rc = pbs_note_at(
					c, ed[i],
					"exclusive, as also asked at %s",
					pbs_where(c, into, w));
				if (rc)
					return rc;
			}
		}
	}
	return 0;
}

/* CPUs per task of chunk i (directive d): ompthreads when given, else
 * ncpus / mpiprocs; a note where the two disagree. */
static int chunk_cpus_per_task(struct ctx *c, uint32_t d, uint32_t i,
			       const struct hb_chunk *k, uint32_t *cpt)
{
	uint32_t t;
	int rc = 0;

	if (k->ompthreads) {
		t = k->ompthreads;
		if ((uint64_t)k->ompthreads * k->mpiprocs != k->ncpus)
			rc = pbs_note_at(c, d,
					 "chunk %u: ompthreads x mpiprocs "
					 "= %llu differs from ncpus=%u; "
					 "CPUs per task follow ompthreads",
					 i + 1,
					 (unsigned long long)k->ompthreads *
						 k->mpiprocs,
					 k->ncpus);
	} else if (k->mpiprocs) {
		t = k->ncpus / k->mpiprocs;
		if (t == 0)
			t = 1;
		if (k->ncpus % k->mpiprocs)
			rc = pbs_note_at(c, d,
					 "chunk %u: ncpus=%u is not a "
					 "multiple of mpiprocs=%u; %u CPUs "
					 "per task",
					 i + 1, k->ncpus, k->mpiprocs, t);
	} else {
		t = k->ncpus ? k->ncpus : 1;
	}
	*cpt = t;
	return rc;
}

static int settle_select(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	struct pselect *p = &c->ps;
	uint32_t d = c->d_select;
	uint64_t nodes = 0, tasks = 0, mem = 0, gpus = 0, cpus = 0;
	uint32_t tpn = 0, cpt = 0, maxmpi = 0;
	bool pack = c->d_place != NO_DIR && c->place_arr == ARR_PACK;
	bool any_mem = false, any_gpu = false;
	int rc;

	at_dir(c, d);
	for (uint32_t i = 0; i < p->n; i++) {
		struct hb_chunk *k = &p->chunks[i];
		uint64_t k_cpus;
		uint32_t t;

		rc = chunk_cpus_per_task(c, d, i, k, &t);
		if (rc)
			return rc;
		/* CPUs this chunk's node needs, as the jobspec asks them:
		 * its tasks (at least one) times CPUs per task. */
		k_cpus = (uint64_t)(k->mpiprocs ? k->mpiprocs : 1) * t;
		if (k_cpus > UINT32_MAX)
			return pbs_fail(c, HB_ERANGE,
					"-l select: CPUs per chunk overflow");
		if (pack)
			cpus += k->count * k_cpus;
		else if (k_cpus > cpus)
			cpus = k_cpus;
		if (k->mpiprocs > maxmpi)
			maxmpi = k->mpiprocs;
		nodes += k->count;
		tasks += (uint64_t)k->count * k->mpiprocs;
		if (k->mem_mb)
			any_mem = true;
		if (k->ngpus)
			any_gpu = true;
		if (pack) {
			if (k->mem_mb &&
			    k->count > (MAX_MEM_MIB - mem) / k->mem_mb)
				return pbs_fail(
					c, HB_ERANGE,
					"-l select: mem (count x mem) is "
					"too large (at most %llu MiB, as "
					"sbatch)",
					(unsigned long long)MAX_MEM_MIB);
			mem += (uint64_t)k->count * k->mem_mb;
			gpus += (uint64_t)k->count * k->ngpus;
		} else {
			if (k->mem_mb > mem)
				mem = k->mem_mb;
			if (k->ngpus > gpus)
				gpus = k->ngpus;
		}
		if (nodes > UINT32_MAX || tasks > UINT32_MAX ||
		    gpus > UINT32_MAX || cpus > UINT32_MAX ||
		    mem > MAX_MEM_MIB)
			return pbs_fail(c, HB_ERANGE,
					"-l select: totals overflow");
	}
	tpn = pack ? (uint32_t)tasks : maxmpi;
	/* Enough CPUs per task that every node holds its largest chunk. */
	cpt = (uint32_t)((cpus + (tpn ? tpn : 1) - 1) / (tpn ? tpn : 1));
	if (pack) {
		nodes = 1;
		rc = pbs_note_at(c, d,
				 "place=pack: every chunk on one node, "
				 "with their tasks, memory and GPUs added");
		if (rc)
			return rc;
	}
	s->nodes_min = s->nodes_max = (uint32_t)nodes;
	pbs_set_at(c, d, HB_F_NODES);
	if (tpn) {
		s->ntasks_per_node = tpn;
		pbs_set_at(c, d, HB_F_NTASKS_PER_NODE);
	} else {
		rc = pbs_note_at(c, d,
				 "no chunk has MPI processes: one task per "
				 "node");
		if (rc)
			return rc;
	}
	s->cpus_per_task = cpt;
	pbs_set_at(c, d, HB_F_CPUS_PER_TASK);
	if (any_mem) {
		s->mem_kind = HB_MEM_PER_NODE;
		s->mem_mb = mem;
		pbs_set_at(c, d, HB_F_MEM);
	}
	if (any_gpu) {
		s->gpu_scope = HB_GPU_PER_NODE;
		s->gpus = (uint32_t)gpus;
		s->gpu_type = p->gpu_type;
		pbs_set_at(c, d, HB_F_GPUS);
	} else if (p->gpu_type) {
		rc = pbs_note_at(c, d,
				 "a GPU model without ngpus is not carried");
		if (rc)
			return rc;
	}
	if (p->n > 1) {
		s->chunks = p->chunks;
		s->nchunks = p->n;
		pbs_set_at(c, d, HB_F_HETEROGENEOUS);
		if (tasks && !pack) {
			s->ntasks = (uint32_t)tasks;
			pbs_set_at(c, d, HB_F_NTASKS);
		}
		if (!pack) {
			rc = pbs_note_at(
				c, d,
				"%u chunks: %llu nodes and %llu tasks in "
				"all; every node is sized to hold the "
				"largest chunk (%u tasks x %u CPUs, "
				"%llu MiB, %llu GPUs)",
				p->n, (unsigned long long)nodes,
				(unsigned long long)tasks, tpn ? tpn : 1, cpt,
				(unsigned long long)mem,
				(unsigned long long)gpus);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int settle_nodes(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	struct tnodes *t = &c->tn;
	uint32_t d = c->d_nodes;

	s->nodes_min = s->nodes_max = t->nodes;
	pbs_set_at(c, d, HB_F_NODES);
	if (t->ppn_set) {
		s->ntasks_per_node = t->ppn;
		pbs_set_at(c, d, HB_F_NTASKS_PER_NODE);
	}
	if (t->mixed) {
		s->ntasks = (uint32_t)t->ntasks;
		pbs_set_at(c, d, HB_F_NTASKS);
	}
	if (t->cpn) {
		uint32_t tpn = t->ppn ? t->ppn : 1;

		s->cpus_per_task = t->cpn / tpn ? t->cpn / tpn : 1;
		pbs_set_at(c, d, HB_F_CPUS_PER_TASK);
	}
	if (t->gpus) {
		s->gpu_scope = HB_GPU_PER_NODE;
		s->gpus = t->gpus;
		pbs_set_at(c, d, HB_F_GPUS);
	}
	return 0;
}

/* Tasks x CPUs per task, the job's CPUs in all, within sbatch's bound. */
static int total_cpus_ok(struct ctx *c, uint32_t tasks, uint32_t cpt)
{
	uint64_t n = (uint64_t)tasks * cpt;

	if (n <= MAX_COUNT)
		return 0;
	return pbs_fail(c, HB_ERANGE,
			"-l mppdepth: %llu CPUs in all (mppwidth x mppdepth) "
			"is too many (at most %u, as sbatch)",
			(unsigned long long)n, (unsigned)MAX_COUNT);
}

/* ------------------------------------------------------------------ */
/* Cray's mpp* resources: the shape ALPS gives them                     */

/* "mppwidth" for directive d, one of the mpp* slots. */
static const char *mpp_name(const struct ctx *c, uint32_t d)
{
	return d == c->d_mppwidth  ? "mppwidth"
	       : d == c->d_mppnppn ? "mppnppn"
	       : d == c->d_mppdepth ? "mppdepth"
	       : d == c->d_mppmem   ? "mppmem"
				    : "mppnodes";
}

/* select= gives a whole shape of its own: the two are not mixed. */
static int mpp_select(struct ctx *c)
{
	uint32_t m[5] = {c->d_mppwidth, c->d_mppnppn, c->d_mppdepth,
			 c->d_mppmem, c->d_mppnodes};
	uint32_t mpp = latest(m, 5), later, other;
	char w[48];

	if (mpp == NO_DIR || c->d_select == NO_DIR)
		return 0;
	later = c->d_select > mpp ? c->d_select : mpp;
	other = later == mpp ? c->d_select : mpp;
	at_dir(c, later);
	return pbs_fail(c, HB_ECONFLICT,
			"-l %s cannot be mixed with -l %s (%s): each gives "
			"the job's whole shape",
			later == mpp ? mpp_name(c, mpp) : "select",
			later == mpp ? "select" : mpp_name(c, mpp),
			pbs_where(c, other, w));
}

/* nodes= and the mpp* resources, where both are given, must agree. */
static int mpp_nodes(struct ctx *c)
{
	const struct tnodes *t = &c->tn;
	uint32_t per = 0;
	char w[48];

	if (c->d_nodes == NO_DIR)
		return 0;
	pbs_where(c, c->d_nodes, w);
	if (t->mixed &&
	    (c->d_mppwidth != NO_DIR || c->d_mppnppn != NO_DIR)) {
		at_dir(c, c->d_mppwidth != NO_DIR ? c->d_mppwidth
						  : c->d_mppnppn);
		return pbs_fail(c, HB_ECONFLICT,
				"-l %s cannot be mixed with node specs that "
				"differ (-l nodes, %s)",
				c->d_mppwidth != NO_DIR ? "mppwidth"
							: "mppnppn",
				w);
	}
	if (c->d_mppnppn != NO_DIR && t->ppn_set && t->ppn != c->mppnppn) {
		at_dir(c, c->d_mppnppn);
		return pbs_fail(c, HB_ECONFLICT,
				"-l mppnppn=%u conflicts with ppn=%u of -l "
				"nodes (%s)",
				c->mppnppn, t->ppn, w);
	}
	if (c->d_mppnppn != NO_DIR)
		per = c->mppnppn;
	else if (t->ppn_set)
		per = t->ppn;
	if (c->d_mppwidth != NO_DIR) {
		uint64_t need = per ? ((uint64_t)c->mppwidth + per - 1) / per
				    : 0;

		at_dir(c, c->d_mppwidth);
		if (per && need != t->nodes)
			return pbs_fail(c, HB_ECONFLICT,
					"-l mppwidth=%u at %u per node needs "
					"%llu nodes, but -l nodes (%s) gives "
					"%u",
					c->mppwidth, per,
					(unsigned long long)need, w, t->nodes);
		if (!per && c->mppwidth < t->nodes)
			return pbs_fail(c, HB_ECONFLICT,
					"-l mppwidth=%u is fewer PEs than the "
					"%u nodes of -l nodes (%s)",
					c->mppwidth, t->nodes, w);
	}
	if (c->d_mppdepth != NO_DIR && t->cpn &&
	    c->spec->cpus_per_task != c->mppdepth) {
		at_dir(c, c->d_mppdepth);
		return pbs_fail(c, HB_ECONFLICT,
				"-l mppdepth=%u conflicts with ncpus=%u of -l "
				"nodes (%s): %u CPUs per task",
				c->mppdepth, t->cpn, w,
				c->spec->cpus_per_task);
	}
	return 0;
}

/* mppnppn: PEs per node; with mppwidth, the nodes they fill. */
static int mpp_per_node(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	uint32_t d = c->d_mppnppn;
	bool nodes = c->d_nodes != NO_DIR, width = c->d_mppwidth != NO_DIR;
	char w[48];
	uint32_t n;

	if (width && c->mppnppn > c->mppwidth) {
		at_dir(c, d);
		return pbs_fail(c, HB_ECONFLICT,
				"-l mppnppn=%u is more PEs per node than the "
				"%u of -l mppwidth (%s) in all; ALPS refuses "
				"it",
				c->mppnppn, c->mppwidth,
				pbs_where(c, c->d_mppwidth, w));
	}
	if (nodes && c->tn.ppn_set) {
		pbs_set_derived(c, c->d_nodes, HB_F_NTASKS_PER_NODE);
		pbs_set_derived(c, d, HB_F_NTASKS_PER_NODE);
		return pbs_note_at(c, d, "the same as ppn of -l nodes (%s)",
				   pbs_where(c, c->d_nodes, w));
	}
	if (!nodes && !width)
		return pbs_note_at(c, d,
				   "without mppwidth ALPS runs one PE: "
				   "not carried");
	s->ntasks_per_node = c->mppnppn;
	pbs_set_at(c, d, HB_F_NTASKS_PER_NODE);
	if (nodes)
		return 0;
	/* ALPS fills whole nodes and puts the rest on the last one. */
	n = (uint32_t)(((uint64_t)c->mppwidth + c->mppnppn - 1) /
		       c->mppnppn);
	s->nodes_min = s->nodes_max = n;
	pbs_set_derived(c, c->d_mppwidth, HB_F_NODES);
	pbs_set_derived(c, d, HB_F_NODES);
	return pbs_note_at(c, d, "%u PEs at %u per node: %u nodes",
			   c->mppwidth, c->mppnppn, n);
}

/*
 * Cray's Torque shape, as ALPS runs it (aprun -n -N -d): mppwidth
 * tasks in all, mppnppn of them per node, mppdepth CPUs for each.
 * Settled after nodes=, which it must agree with, and refused with
 * select=.
 */
static int settle_mpp(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	int rc = mpp_select(c);

	if (!rc)
		rc = mpp_nodes(c);
	if (rc)
		return rc;
	if (c->d_mppwidth != NO_DIR) {
		s->ntasks = c->mppwidth;
		pbs_set_at(c, c->d_mppwidth, HB_F_NTASKS);
	}
	if (c->d_mppnppn != NO_DIR) {
		rc = mpp_per_node(c);
		if (rc)
			return rc;
	}
	if (c->d_mppdepth == NO_DIR)
		return 0;
	at_dir(c, c->d_mppdepth);
	rc = total_cpus_ok(c, c->d_mppwidth != NO_DIR ? c->mppwidth : 1,
			   c->mppdepth);
	if (rc)
		return rc;
	if (c->d_nodes != NO_DIR && c->tn.cpn) {
		char w[48];

		pbs_set_derived(c, c->d_nodes, HB_F_CPUS_PER_TASK);
		pbs_set_derived(c, c->d_mppdepth, HB_F_CPUS_PER_TASK);
		return pbs_note_at(c, c->d_mppdepth,
				   "the same as ncpus of -l nodes (%s)",
				   pbs_where(c, c->d_nodes, w));
	}
	s->cpus_per_task = c->mppdepth;
	pbs_set_at(c, c->d_mppdepth, HB_F_CPUS_PER_TASK);
	return 0;
}

/*
 * mppnodes: the nodes ALPS may place the PEs on.  Slurm's node list
 * requires every node it names, so the list must name as many nodes as
 * the job has (mppwidth at mppnppn per node, or -l nodes); with no node
 * count it gives one, at most one node a PE.  The hosts of -l nodes or
 * -l host are another list: the two are not mixed.
 */
static int mpp_nodelist(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	uint32_t d = c->d_mppnodes, n = c->mppnodes_n;
	uint32_t hd[2] = {c->tn.hosts.n ? c->d_nodes : NO_DIR,
			  c->host.n ? c->d_host : NO_DIR};
	uint32_t nd[3] = {c->d_nodes, c->d_mppwidth, c->d_mppnppn};
	uint32_t other = latest(hd, 2), pes = s->ntasks ? s->ntasks : 1;
	char w[48];

	if (d == NO_DIR)
		return 0;
	at_dir(c, d);
	if (other != NO_DIR)
		return pbs_fail(c, HB_ECONFLICT,
				"-l mppnodes cannot be mixed with the hosts "
				"of -l %s (%s)",
				other == c->d_host ? "host" : "nodes",
				pbs_where(c, other, w));
	if (hb_jobspec_has(s, HB_F_NODES)) {
		if (n == s->nodes_min)
			return pbs_note_at(c, d,
					   "ALPS's candidate nodes, all of "
					   "them required in Slurm");
		return pbs_fail(c, HB_ECONFLICT,
				"-l mppnodes names %u nodes, but the job has "
				"%u (%s); Slurm requires every listed node",
				n, s->nodes_min,
				pbs_where(c, latest(nd, 3), w));
	}
	if (n > pes)
		return pbs_fail(c, HB_ECONFLICT,
				"-l mppnodes names %u nodes, more than the %u "
				"PEs ALPS places; Slurm requires every listed "
				"node",
				n, pes);
	s->nodes_min = s->nodes_max = n;
	pbs_set_at(c, d, HB_F_NODES);
	return pbs_note_at(c, d,
			   "%u nodes: ALPS's candidate nodes, all of them "
			   "required in Slurm",
			   n);
}

/* -l ncpus beside mppwidth or mppdepth: only the CPUs they give. */
static int mpp_ncpus(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	uint32_t d = c->d_ncpus, m[2] = {c->d_mppwidth, c->d_mppdepth};
	uint64_t want = (uint64_t)(m[0] != NO_DIR ? c->mppwidth : 1) *
			(m[1] != NO_DIR ? c->mppdepth : 1);
	char w[48];

	pbs_where(c, latest(m, 2), w);
	if (c->ncpus != want) {
		at_dir(c, d);
		return pbs_fail(c, HB_ECONFLICT,
				"-l ncpus=%u conflicts with the %llu CPUs of "
				"-l mppwidth x mppdepth (%s)",
				c->ncpus, (unsigned long long)want, w);
	}
	s->cpus_per_task = m[1] != NO_DIR ? c->mppdepth : 1;
	pbs_set_derived(c, d, HB_F_CPUS_PER_TASK);
	if (m[1] != NO_DIR)
		pbs_set_derived(c, m[1], HB_F_CPUS_PER_TASK);
	return pbs_note_at(c, d, "the same as mppwidth x mppdepth (%s)", w);
}

/* -l procs beside mppwidth: the same count, or a conflict. */
static int mpp_procs(struct ctx *c)
{
	uint32_t d = c->d_procs;
	char w[48];

	pbs_where(c, c->d_mppwidth, w);
	if (c->procs != c->mppwidth) {
		at_dir(c, d);
		return pbs_fail(c, HB_ECONFLICT,
				"-l procs=%u conflicts with -l mppwidth=%u "
				"(%s)",
				c->procs, c->mppwidth, w);
	}
	pbs_set_derived(c, d, HB_F_NTASKS);
	pbs_set_derived(c, c->d_mppwidth, HB_F_NTASKS);
	return pbs_note_at(c, d, "the same as -l mppwidth (%s)", w);
}

static int settle_shape(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	char w[48];
	int rc;

	if (c->d_select != NO_DIR && c->d_nodes != NO_DIR) {
		uint32_t later =
		    c->d_select > c->d_nodes ? c->d_select : c->d_nodes;
		uint32_t other =
		    later == c->d_select ? c->d_nodes : c->d_select;

		at_dir(c, later);
		return pbs_fail(c, HB_ECONFLICT,
				"-l %s cannot be mixed with -l %s (%s), as in "
				"PBS",
				later == c->d_select ? "select" : "nodes",
				later == c->d_select ? "nodes" : "select",
				pbs_where(c, other, w));
	}
	if (c->d_select != NO_DIR) {
		rc = settle_select(c);
		if (rc)
			return rc;
	} else if (c->d_nodes != NO_DIR) {
		rc = settle_nodes(c);
		if (rc)
			return rc;
	}
	rc = settle_mpp(c);
	if (rc)
		return rc;
	if (c->d_place != NO_DIR && c->d_select == NO_DIR &&
	    c->place_arr != ARR_NONE) {
		rc = pbs_note_at(c, c->d_place,
				 "placement without select= has "
				 "nothing to arrange");
		if (rc)
			return rc;
	}
	if (c->d_ncpus != NO_DIR) {
		uint32_t d = c->d_ncpus;

		if (c->d_mppwidth != NO_DIR || c->d_mppdepth != NO_DIR) {
			rc = mpp_ncpus(c);
		} else if (c->d_select != NO_DIR) {
			rc = pbs_note_at(c, d,
					 "ignored: select= gives the CPUs");
		} else if (c->d_nodes != NO_DIR) {
			uint32_t per = c->ncpus / s->nodes_min;
			uint32_t tpn =
			    s->ntasks_per_node ? s->ntasks_per_node : 1;

			s->cpus_per_task = per / tpn ? per / tpn : 1;
			pbs_set_at(c, d, HB_F_CPUS_PER_TASK);
			rc = pbs_note_at(c, d,
					 "%u CPUs spread over %u nodes: %u "
					 "per task",
					 c->ncpus, s->nodes_min,
					 s->cpus_per_task);
		} else {
			s->cpus_per_task = c->ncpus;
			pbs_set_at(c, d, HB_F_CPUS_PER_TASK);
			rc = pbs_note_at(c, d, "one task with %u CPUs",
					 c->ncpus);
		}
		if (rc)
			return rc;
	}
	if (c->d_procs != NO_DIR) {
		if (c->d_mppwidth != NO_DIR) {
			rc = mpp_procs(c);
			if (rc)
				return rc;
		} else if (c->d_select != NO_DIR) {
			rc = pbs_note_at(c, c->d_procs,
					 "ignored: select= gives the tasks");
			if (rc)
				return rc;
		} else {
			s->ntasks = c->procs;
			pbs_set_at(c, c->d_procs, HB_F_NTASKS);
		}
	}
	return mpp_nodelist(c);
}

/*
 * mppmem: the memory of each PE (aprun -m), what pmem gives per process;
 * the two must agree.  Read from here on as pmem.
 */
static int mpp_mem(struct ctx *c)
{
	uint32_t d = c->d_mppmem;
	char w[48];

	if (d == NO_DIR || !c->mppmem_mb)
		return 0;
	if (c->d_pmem == NO_DIR || !c->pmem_mb) {
		c->pmem_mb = c->mppmem_mb;
		c->d_pmem = d;
		return 0;
	}
	pbs_where(c, c->d_pmem, w);
	if (c->pmem_mb != c->mppmem_mb) {
		at_dir(c, d > c->d_pmem ? d : c->d_pmem);
		return pbs_fail(c, HB_ECONFLICT,
				"-l mppmem (%llu MiB a PE) conflicts with -l "
				"pmem (%s, %llu MiB a process)",
				(unsigned long long)c->mppmem_mb, w,
				(unsigned long long)c->pmem_mb);
	}
	pbs_set_derived(c, d, HB_F_MEM);
	return pbs_note_at(c, d, "the same as -l pmem (%s)", w);
}

static int settle_mem(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	bool mem, pmem;
	struct hb_shape sh;
	char w[48];
	int rc = mpp_mem(c);

	if (rc)
		return rc;
	mem = c->d_mem != NO_DIR && c->mem_mb;
	pmem = c->d_pmem != NO_DIR && c->pmem_mb;

	if (s->mem_kind == HB_MEM_PER_NODE) {
		/* select= chunks gave memory per node */
		if (mem && pbs_note_at(c, c->d_mem,
				       "ignored: select= chunks give "
				       "memory per node"))
			return HB_ENOMEM;
		if (pmem && pbs_note_at(c, c->d_pmem,
					"ignored: select= chunks "
					"give memory per node"))
			return HB_ENOMEM;
		return 0;
	}
	if (mem && pmem) {
		uint64_t job, proc;

		if (hb_jobspec_shape(s, &sh)) {
			at_dir(c, c->d_pmem);
			return pbs_fail(c, HB_ERANGE,
					"-l pmem: job shape overflows");
		}
		job = (c->mem_mb + sh.nodes - 1) / sh.nodes;
		proc = c->pmem_mb > UINT64_MAX / sh.tasks_per_node
			   ? UINT64_MAX
			   : c->pmem_mb * sh.tasks_per_node;
		if (proc > job) {
			mem = false;
			if (pbs_note_at(c, c->d_mem,
					"dropped: pmem at %s needs more memory "
					"per node (%llu MiB against %llu MiB)",
					pbs_where(c, c->d_pmem, w),
					(unsigned long long)proc,
					(unsigned long long)job))
				return HB_ENOMEM;
		} else {
			pmem = false;
			if (pbs_note_at(
				    c, c->d_pmem,
				    "dropped: the job-wide mem at %s needs at "
				    "least as much per node",
				    pbs_where(c, c->d_mem, w)))
				return HB_ENOMEM;
		}
	}
	if (mem) {
		s->mem_kind = HB_MEM_JOB;
		s->mem_mb = c->mem_mb;
		pbs_set_at(c, c->d_mem, HB_F_MEM);
	} else if (pmem) {
		s->mem_kind = HB_MEM_PER_PROCESS;
		s->mem_mb = c->pmem_mb;
		pbs_set_at(c, c->d_pmem, HB_F_MEM);
	}
	return 0;
}

static int dir_default(struct ctx *c, uint32_t d, const char **path, char which)
{
	const char *p = *path, *n, *sep;
	bool arr = c->spec->narray_ranges != 0;
	size_t len;

	if (d == NO_DIR || !p)
		return 0;
	len = strlen(p);
	if (!len || p[len - 1] != '/') {
		if (strchr(p, '%'))
			return pbs_note_at(c, d,
					   "'%%' in the path: Slurm reads it "
					   "as a file name pattern");
		return 0;
	}
	sep = c->array_opt == 'J' ? "." : "-";
	n = hb_arena_printf(&c->spec->arena, "%s%%x.%c%s%s%s", p, which,
			    arr ? "%A" : "%j", arr ? sep : "", arr ? "%a" : "");
	if (!n)
		return pbs_oom(c);
	*path = n;
	return pbs_note_at(c, d,
			   "a directory: PBS's default name JOB.%cSEQ%s%s is "
			   "used, as %s",
			   which, arr ? sep : "", arr ? "INDEX" : "", n + len);
}

/* GPUs given job-wide or as gres, when nodes/select gave none. */
static int settle_gpus(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	int rc;

	if (c->d_gres != NO_DIR && c->gres_gpus) {
		if (s->gpu_scope != HB_GPU_NONE) {
			rc = pbs_note_at(c, c->d_gres,
					 "gres GPUs dropped: GPUs "
					 "per node are already "
					 "given");
		} else {
			s->gpu_scope = HB_GPU_PER_NODE;
			s->gpus = c->gres_gpus;
			pbs_set_at(c, c->d_gres, HB_F_GPUS);
			rc = 0;
		}
		if (rc)
			return rc;
	}
	if (c->d_ngpus != NO_DIR) {
		if (s->gpu_scope != HB_GPU_NONE) {
			rc = pbs_note_at(c, c->d_ngpus,
					 "ignored: GPUs per node "
					 "are already given");
		} else if (c->ngpus) {
			s->gpu_scope = HB_GPU_PER_JOB;
			s->gpus = c->ngpus;
			pbs_set_at(c, c->d_ngpus, HB_F_GPUS);
			rc = 0;
		} else {
			rc = pbs_note_at(c, c->d_ngpus, "no GPUs");
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* Time limits. */
static int settle_times(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	int rc;

	if (c->d_wall != NO_DIR && c->wall) {
		s->time_limit = c->wall;
		pbs_set_at(c, c->d_wall, HB_F_TIME_LIMIT);
	}
	if (c->d_maxwall != NO_DIR && c->maxwall) {
		if (s->time_limit) {
			rc = pbs_note_at(c, c->d_maxwall,
					 "ignored: walltime is given");
			if (rc)
				return rc;
		} else {
			s->time_limit = c->maxwall;
			pbs_set_at(c, c->d_maxwall, HB_F_TIME_LIMIT);
		}
	}
	if (c->d_minwall != NO_DIR && c->minwall) {
		s->time_min = c->minwall;
		pbs_set_at(c, c->d_minwall, HB_F_TIME_MIN);
	}
	return 0;
}

/* Stage-in files: data inputs (remote side of local@host:remote). */
static int settle_stagein(struct ctx *c)
{
	const char *p = c->stagein;

	if (c->d_stagein == NO_DIR)
		return 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		const char *at = memchr(p, '@', n);
		char *item = pbs_dupn(c, at + 1, (size_t)(p + n - at - 1));

		if (!item || hb_jobspec_add_data(c->spec, item))
			return pbs_oom(c);
		p += n;
		if (*p)
			p++;
	}
	pbs_set_at(c, c->d_stagein, HB_F_DATA);
	return 0;
}

/* -j eo: both streams go to the error file, which is the output now. */
static int join_eo(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	uint32_t d = c->d_join;
	char w[48];
	int rc = 0;

	s->join_output = true;
	if (c->d_out != NO_DIR) {
		pbs_drop_field(c, c->d_out, HB_F_OUTPUT);
		s->output = NULL;
		rc = pbs_note_at(c, c->d_out,
				 "ignored: -j eo at %s sends "
				 "stdout to the error file",
				 pbs_where(c, d, w));
	}
	if (!rc && c->d_errp != NO_DIR) {
		s->output = s->error;
		s->error = NULL;
		pbs_drop_field(c, c->d_errp, HB_F_ERROR);
		pbs_set_at(c, c->d_errp, HB_F_OUTPUT);
		pbs_set_at(c, d, HB_F_ERROR);
		rc = pbs_note_at(c, c->d_errp, "both streams go here (-j eo)");
	} else if (!rc) {
		pbs_set_at(c, d, HB_F_ERROR);
		rc = pbs_note_at(c, d,
				 "eo: both streams go to one "
				 "file, the job's output file "
				 "here (PBS names it JOB.eNNN)");
	}
	return rc;
}

/* -j: the streams apart, or joined into one file. */
static int settle_join(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	uint32_t d = c->d_join;
	char w[48];
	int rc = 0;

	if (d == NO_DIR)
		return 0;
	if (c->join == JOIN_N) {
		s->join_output = false;
		return pbs_note_at(c, d, "streams stay apart (the default)");
	}
	if (c->join != JOIN_OE)
		return join_eo(c);
	s->join_output = true;
	pbs_set_at(c, d, HB_F_ERROR);
	if (c->d_errp != NO_DIR) {
		s->error = NULL;
		pbs_drop_field(c, c->d_errp, HB_F_ERROR);
		rc = pbs_note_at(c, c->d_errp,
				 "ignored: -j oe at %s sends "
				 "stderr to the output file",
				 pbs_where(c, d, w));
	}
	return rc;
}

/* Project: the account, unless -A gives one. */
static int settle_project(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;

	if (c->d_project == NO_DIR)
		return 0;
	if (!s->account)
		return pbs_note_at(c, c->d_project,
				   "PBS Pro project used as the account "
				   "(no -A)") ?:
		       pbs_set_account(c, c->project, c->d_project);
	s->comment = hb_arena_printf(&s->arena, "project=%s", c->project);
	if (!s->comment)
		return pbs_oom(c);
	pbs_set_at(c, c->d_project, HB_F_COMMENT);
	return pbs_note_at(c, c->d_project,
			   "-A gives the account; the project is "
			   "kept as the comment");
}

/* Export: the -v list, after ALL when -V is given. */
static int settle_export(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;

	if (c->d_export == NO_DIR)
		return 0;
	if (s->export_all)
		s->export_spec = hb_arena_printf(
			&s->arena, "ALL%s%s", c->exports.len ? "," : "",
			c->exports.len ? c->exports.data : "");
	else
		s->export_spec = pbs_dup(c, c->exports.data);
	if (!s->export_spec)
		return pbs_oom(c);
	return 0;
}

static int settle_misc(struct ctx *c)
{
	struct hb_jobspec *s = c->spec;
	int rc;

	rc = settle_gpus(c);
	if (!rc)
		rc = settle_times(c);
	if (!rc)
		rc = settle_stagein(c);
	/* A directory gets PBS's default file name, JOB.oSEQ / JOB.eSEQ,
	 * as a Slurm pattern (%x job name, %j job id; an array task's
	 * %A-%a for Torque's -t, %A.%a for PBS Pro's -J). */
	if (!rc)
		rc = dir_default(c, c->d_out, &s->output, 'o');
	if (!rc)
		rc = dir_default(c, c->d_errp, &s->error, 'e');
	if (!rc)
		rc = settle_join(c);
	if (!rc)
		rc = settle_project(c);
	if (!rc)
		rc = settle_export(c);
	return rc;
}

/* Every directive says what it set or why it set nothing. */
static int check_notes(struct ctx *c)
{
	for (uint32_t i = 0; i < c->spec->ndirectives; i++) {
		struct hb_directive *d = &c->spec->directives[i];

		if (d->kind == HB_DIR_PBS && !d->nfields && !d->note) {
			d->note = "no effect";
		}
	}
	return 0;
}

/* Settle what the options left for the end, in this order. */
int pbs_settle(struct ctx *c)
{
	int rc = settle_shape(c);

	if (!rc)
		rc = settle_lists(c);
	if (!rc)
		rc = settle_mem(c);
	if (!rc)
		rc = settle_misc(c);
	if (!rc)
		rc = check_notes(c);
	return rc;
}

/*
 * pbs_int.h - what the files of the PBS reader share: the bounds, the
 * parser state, and the functions one part calls in another.  Not a
 * header for other parts: translate.c uses pbs.h, beside it.
 */
#ifndef HB_PBS_INT_H
#define HB_PBS_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "translators/pbs/pbs.h"

#define NO_DIR UINT32_MAX

/* Caps that keep hostile input linear: items in one list value. */
#define MAX_ITEMS      1024
#define MAX_NAME       255
#define MAX_ENV	       4096
#define MAX_DIRECTIVES 65536

/*
 * The bounds the sbatch parser applies (docs/internals/sbatch.md, Limits),
 * so that a PBS job asks for nothing an sbatch script could not: counts of
 * nodes, tasks and CPUs fit an int (sbatch's parse_int() and
 * verify_node_count()), and so do the job's tasks and CPUs in all; GPU
 * counts, per node and in all, fit 32 bits; a time stays below INT_MAX
 * seconds once rounded up to whole minutes (time_str2mins()); array
 * indices run from 0 to 1000 (Slurm's default MaxArraySize); memory is at
 * most LLONG_MAX MiB.
 */
#define MAX_COUNT	((uint32_t)INT_MAX)
#define MAX_GPUS	UINT32_MAX
#define MAX_TIME	((uint64_t)INT_MAX - 59)
#define MAX_ARRAY_INDEX 1000
#define MAX_MEM_MIB	((uint64_t)LLONG_MAX)

/* A list of distinct short strings (features, hosts), in arena memory. */
struct strset {
	const char **v;
	uint32_t n;
};

/* Torque -l nodes=, as summed up. */
struct tnodes {
	uint32_t nodes, ppn, gpus, cpn;
	uint64_t ntasks;
	bool ppn_set, mixed, excl;
	struct strset feat, hosts;
};

/* PBS Pro -l select=, as summed up. */
struct pselect {
	struct hb_chunk *chunks;
	uint32_t n;
	struct strset cons, hosts;
	const char *gpu_type;
};

enum { ARR_NONE, ARR_FREE, ARR_PACK, ARR_SCATTER, ARR_VSCATTER };
enum { JOIN_N, JOIN_OE, JOIN_EO };

struct ctx {
	struct hb_jobspec *spec;
	struct hb_err *err;
	const char *name;
	bool cli;
	uint32_t loc; /* line, or argv index */
	uint32_t cur; /* the directive being read */

	/* -l resources: the directive that gave each (NO_DIR: none). */
	uint32_t d_nodes, d_select, d_place, d_wall, d_minwall, d_maxwall;
	uint32_t d_mem, d_pmem, d_ncpus, d_procs, d_ngpus, d_naccess;
	uint32_t d_feature, d_gres, d_host;
	uint32_t d_mppwidth, d_mppnppn, d_mppdepth; /* Cray's -l mpp* */
	uint32_t d_mppmem, d_mppnodes;
	struct tnodes tn;
	struct pselect ps;
	int place_arr;
	bool place_excl, naccess_excl;
	uint64_t wall, minwall, maxwall, mem_mb, pmem_mb;
	uint32_t ncpus, procs, ngpus, gres_gpus;
	uint32_t mppwidth, mppnppn, mppdepth;
	uint64_t mppmem_mb;
	uint32_t mppnodes_n; /* the nodes mppnodes names */
	struct strset feature, host, mppnodes;
	const char *gres_lic;

	/* Options settled at the end. */
	uint32_t d_join, d_out, d_errp, d_project, d_wx, d_stagein;
	uint32_t d_export; /* the last -v or -V */
	int join;
	const char *project, *stagein;
	struct hb_buf exports;
	uint32_t nexports;
	bool w_max_run; /* -W max_run_subjobs gave the array limit */
	char array_opt; /* 't' (Torque) or 'J' (PBS Pro): how files are named */

	/* The note note_at() grows: its directive, buffer, length, room. */
	uint32_t note_dir;
	char *note_buf;
	size_t note_len, note_cap;
};

static inline int is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static inline int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!is_digit(*s))
			return 0;
	return 1;
}

static inline struct hb_directive *dir_at(struct ctx *c, uint32_t d)
{
	return &c->spec->directives[d];
}

/* pbs.c: errors, strings, directives and their notes */
int pbs_fail(struct ctx *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int pbs_oom(struct ctx *c);
char *pbs_dup(struct ctx *c, const char *s);
char *pbs_dupn(struct ctx *c, const char *s, size_t n);
const char *pbs_where(struct ctx *c, uint32_t d, char buf[48]);
int pbs_set_account(struct ctx *c, const char *v, uint32_t d);
int pbs_note_at(struct ctx *c, uint32_t d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void pbs_set_at(struct ctx *c, uint32_t d, enum hb_field f);
void pbs_set_derived(struct ctx *c, uint32_t d, enum hb_field f);
void pbs_drop_field(struct ctx *c, uint32_t d, enum hb_field f);
int pbs_new_dir(struct ctx *c, const char *text, size_t len);
int pbs_take_slot(struct ctx *c, uint32_t *slot);
int pbs_set_add(struct ctx *c, struct strset *s, const char *w, size_t n);
int pbs_num32(struct ctx *c, const char *what, const char *v, uint32_t min,
	      uint32_t max, uint32_t *out);

/* A remark on, or a field set by, the directive being read. */
#define NOTE(c, ...) pbs_note_at((c), (c)->cur, __VA_ARGS__)
#define SET(c, f)    pbs_set_at((c), (c)->cur, (f))

/* pbs_resources.c: -l */
int pbs_opt_l(struct ctx *c, const char *arg);

/* pbs_options.c: which letters take a value; -W; every other option */
enum { OPT_NONE, OPT_FLAG, OPT_ARG };
int pbs_opt_kind(char o);
int pbs_opt_W(struct ctx *c, const char *arg);
int pbs_option(struct ctx *c, char opt, const char *arg);

/* pbs_settle.c: resources and options settled once all are read; the
 * Cray mpp* shape and how -l ncpus and -l procs meet it */
int pbs_settle(struct ctx *c);

#endif

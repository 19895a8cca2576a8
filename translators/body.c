/*
 * body.c - what a job script's body tells us: module loads, MPI launch
 * lines, the MPI implementation, and literal settings of variables that
 * must reach every rank (NCCL_*, UCX_*, ...).
 *
 * The body is read, never changed: the launcher runs it byte for byte.
 * This scan is a heuristic over shell text, so it records only what it can
 * read for certain (literal values, plain command words) and leaves the
 * rest to run as written.
 */
#include <stdbool.h>
#include <string.h>

#include "hpcbridge/jobspec.h"

/* Longest logical line (with continuations) the scan looks at. */
#define LINE_MAX_SCAN 4096

/* Variable prefixes that tune communication and must reach every rank. */
#define PFX(s) { s, sizeof(s) - 1 }
#define PFX_IMPL(s) s, sizeof(s) - 1
static const struct {
	const char *s;
	size_t n;
} rank_env_prefixes[] = {
	PFX("NCCL_"),	  PFX("UCX_"),	 PFX("OMP_"),  PFX("FI_"),
	PFX("I_MPI_"),	  PFX("OMPI_MCA_"), PFX("MPICH_"), PFX("PSM2_"),
	PFX("HCOLL_"),	  PFX("MV2_"),	 PFX("CUDA_VISIBLE_DEVICES"),
};

/* Variables only one MPI reads: setting one says which MPI runs.  Hydra's
 * and MPICH's own are read by MPICH's derivatives too, so they say the
 * least (looked at last). */
static const struct {
	const char *s;
	size_t n;
	enum hb_mpi_impl impl;
} impl_env_prefixes[] = {
	{ PFX_IMPL("I_MPI_"), HB_MPI_INTEL },
	{ PFX_IMPL("MV2_"), HB_MPI_MVAPICH2 },
	{ PFX_IMPL("OMPI_"), HB_MPI_OPENMPI },
	{ PFX_IMPL("PRTE_"), HB_MPI_OPENMPI },
	{ PFX_IMPL("HYDRA_"), HB_MPI_MPICH },
	{ PFX_IMPL("MPICH_"), HB_MPI_MPICH },
};
#undef PFX
#undef PFX_IMPL

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

static int is_name_char(char c, int first)
{
	if (c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
		return 1;
	return !first && c >= '0' && c <= '9';
}

static int has_prefix(const char *s, size_t n, const char *p)
{
	size_t pl = strlen(p);

	return n >= pl && memcmp(s, p, pl) == 0;
}

static int word_is(const char *s, size_t n, const char *w)
{
	return n == strlen(w) && memcmp(s, w, n) == 0;
}

/* Next blank-separated word in [*p, end); returns its length, 0 at end. */
static size_t next_word(const char **p, const char *end, const char **w)
{
	/* The bytes that end a word. */
	static const unsigned char stop[256] = {
		[' '] = 1, ['\t'] = 1, [';'] = 1, ['&'] = 1, ['|'] = 1,
	};
	const char *s = *p;

	while (s < end && is_space(*s))
		s++;
	*w = s;
	if (s < end && *s == '#') { /* a comment ends the command */
		*p = end;
		return 0;
	}
	while (s < end && !stop[(unsigned char)*s])
		s++;
	*p = s;
	return (size_t)(s - *w);
}

static enum hb_mpi_impl impl_from_name(const char *s, size_t n)
{
	char low[128];

	if (n >= sizeof(low))
		n = sizeof(low) - 1;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	low[n] = '\0';
	/* Every name below holds "mpi" but "mvapich": most modules (gcc,
	 * cuda, hdf5) are told apart by that alone. */
	if (!strstr(low, "mpi") && !strstr(low, "mvapich"))
		return HB_MPI_UNKNOWN;
	if (strstr(low, "openmpi") || strstr(low, "open-mpi") ||
	    strncmp(low, "ompi", 4) == 0)
		return HB_MPI_OPENMPI;
	if (strstr(low, "impi") || strstr(low, "intel-mpi") ||
	    strstr(low, "intelmpi") || strstr(low, "intel-oneapi-mpi") ||
	    strstr(low, "mpi.hydra") || strstr(low, "mpiexec.hydra"))
		return HB_MPI_INTEL;
	if (strstr(low, "mvapich"))
		return HB_MPI_MVAPICH2;
	if (strstr(low, "mpich"))
		return HB_MPI_MPICH;
	return HB_MPI_UNKNOWN;
}

static int is_rank_env(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(rank_env_prefixes) /
				       sizeof(rank_env_prefixes[0]);
	     i++)
		if (n >= rank_env_prefixes[i].n &&
		    s[0] == rank_env_prefixes[i].s[0] &&
		    memcmp(s, rank_env_prefixes[i].s, rank_env_prefixes[i].n) ==
			    0)
			return 1;
	return 0;
}

struct scan {
	struct hb_jobspec *spec;
	struct hb_err *err;
	uint32_t line;
	const char *text; /* the logical line */
	size_t len;
	/* What each kind of evidence says, strongest first: the launcher's
	 * own name, a module, a variable only one MPI reads, a launcher
	 * flag only one MPI takes; then the weak hints: a variable or flag
	 * of Hydra (MPICH and its derivatives), srun --mpi. */
	enum hb_mpi_impl launch_impl, module_impl, env_impl, flag_impl;
	enum hb_mpi_impl hint_impl;
};

/* The MPI a variable name belongs to, and whether the hint is weak. */
static enum hb_mpi_impl impl_from_env(const char *s, size_t n, bool *weak)
{
	for (size_t i = 0; i < sizeof(impl_env_prefixes) /
				       sizeof(impl_env_prefixes[0]);
	     i++)
		if (n >= impl_env_prefixes[i].n &&
		    !memcmp(s, impl_env_prefixes[i].s, impl_env_prefixes[i].n)) {
			*weak = impl_env_prefixes[i].impl == HB_MPI_MPICH;
			return impl_env_prefixes[i].impl;
		}
	return HB_MPI_UNKNOWN;
}

static void keep(enum hb_mpi_impl *slot, enum hb_mpi_impl m)
{
	if (*slot == HB_MPI_UNKNOWN)
		*slot = m;
}

static int note_directive(struct scan *sc, enum hb_field f, const char *note)
{
	struct hb_prov o = { HB_PROV_FILE, sc->line };
	struct hb_directive *d;
	size_t n = sc->len;

	while (n && is_space(sc->text[n - 1]))
		n--;
	d = hb_jobspec_add_directive(sc->spec, HB_DIR_SCRIPT, o, sc->text, n);
	if (!d)
		return HB_ENOMEM;
	hb_directive_add_field(d, f);
	d->note = note;
	if (!hb_jobspec_has(sc->spec, f))
		hb_jobspec_set_prov(sc->spec, f, o);
	return 0;
}

static int is_ml_subcommand(const char *s, size_t n)
{
	static const char *const subs[] = {
		"load",	  "add",    "try-load", "unload", "rm",	    "del",
		"swap",	  "switch", "purge",	"list",	  "avail",  "av",
		"spider", "show",   "help",	"save",	  "restore", "use",
		"unuse",  "reset",  "refresh",	"whatis", "keyword", NULL,
	};

	for (const char *const *p = subs; *p; p++)
		if (word_is(s, n, *p))
			return 1;
	return 0;
}

/* "module load a b/c", "module add ...", "ml a b" */
static int scan_module(struct scan *sc, const char *p, const char *end)
{
	const char *w;
	size_t n;
	char name[256];
	int any = 0, rc;

	while ((n = next_word(&p, end, &w)) > 0) {
		if (w[0] == '-' || memchr(w, '$', n) || memchr(w, '`', n) ||
		    n >= sizeof(name))
			continue;
		memcpy(name, w, n);
		name[n] = '\0';
		if ((rc = hb_jobspec_add_module(sc->spec, name)))
			return rc;
		if (sc->module_impl == HB_MPI_UNKNOWN)
			sc->module_impl = impl_from_name(w, n);
		any = 1;
	}
	if (!any)
		return 0;
	return note_directive(sc, HB_F_CONTAINER,
			      "module load: selects the image");
}

/* export NAME=VALUE [NAME=VALUE ...] with literal values */
static int scan_export(struct scan *sc, const char *p, const char *end)
{
	const char *w, *eq;
	size_t n, nl, vl;
	char name[128], value[1024];
	int rc, any = 0;

	while ((n = next_word(&p, end, &w)) > 0) {
		eq = memchr(w, '=', n);
		if (!eq || eq == w)
			continue;
		nl = (size_t)(eq - w);
		{
			bool weak = false;
			enum hb_mpi_impl m = impl_from_env(w, nl, &weak);

			keep(weak ? &sc->hint_impl : &sc->env_impl, m);
		}
		if (!is_rank_env(w, nl) || nl >= sizeof(name))
			continue;
		for (size_t i = 0; i < nl; i++)
			if (!is_name_char(w[i], i == 0))
				goto next;
		vl = n - nl - 1;
		eq++;
		/* Strip one level of matching quotes around the value. */
		if (vl >= 2 && (eq[0] == '"' || eq[0] == '\'') &&
		    eq[vl - 1] == eq[0]) {
			eq++;
			vl -= 2;
		}
		if (vl >= sizeof(value) || memchr(eq, '$', vl) ||
		    memchr(eq, '`', vl) || memchr(eq, '"', vl) ||
		    memchr(eq, '\'', vl) || memchr(eq, '\\', vl))
			continue;
		memcpy(name, w, nl);
		name[nl] = '\0';
		memcpy(value, eq, vl);
		value[vl] = '\0';
		if ((rc = hb_jobspec_add_env(sc->spec, name, value)))
			return rc;
		any = 1;
	next:;
	}
	if (!any)
		return 0;
	return note_directive(sc, HB_F_ENV,
			      "exported setting: forwarded to every rank");
}

/* Flags only one launcher takes.  Open MPI's mpirun: --mca, -x, --map-by,
 * -npernode, --oversubscribe; Hydra's mpiexec (MPICH, Intel MPI,
 * MVAPICH2): -ppn, -genv, -genvall, -bootstrap, -launcher, -iface. */
static const char *const ompi_flags[] = {
	"--mca", "-mca",	  "-x",		  "--map-by", "-map-by",
	"-npernode", "--npernode", "--oversubscribe", "--report-bindings",
	"--prefix", NULL,
};
static const char *const hydra_flags[] = {
	"-ppn", "-genv", "-genvall", "-genvlist", "-bootstrap", "-launcher",
	"-iface", "-rr", NULL,
};

static bool word_in(const char *w, size_t n, const char *const *list)
{
	for (const char *const *p = list; *p; p++)
		if (word_is(w, n, *p))
			return true;
	return false;
}

/* The launcher's flags: srun --mpi=pmix (Open MPI's usual PMI under
 * Slurm) or pmi2 (MPICH's and MVAPICH2's) is a weak hint. */
static void scan_launch_flags(struct scan *sc, const char *p, const char *end,
			      bool srun)
{
	const char *w;
	size_t n;

	while ((n = next_word(&p, end, &w)) > 0) {
		if (w[0] != '-')
			break; /* the program: its own flags are not ours */
		if (srun && has_prefix(w, n, "--mpi=pmix"))
			keep(&sc->hint_impl, HB_MPI_OPENMPI);
		else if (srun && has_prefix(w, n, "--mpi=pmi2"))
			keep(&sc->hint_impl, HB_MPI_MPICH);
		else if (!srun && word_in(w, n, ompi_flags))
			keep(&sc->flag_impl, HB_MPI_OPENMPI);
		else if (!srun && word_in(w, n, hydra_flags))
			keep(&sc->hint_impl, HB_MPI_MPICH);
		/* a flag's argument ("-x NAME", "-ppn 4") is skipped as
		 * the next word: not a flag, so it would end the scan */
		if (!srun && (word_in(w, n, ompi_flags) ||
			      word_in(w, n, hydra_flags) || word_is(w, n, "-np") ||
			      word_is(w, n, "-n") || word_is(w, n, "--hostfile") ||
			      word_is(w, n, "-hostfile") || word_is(w, n, "-f") ||
			      word_is(w, n, "-machinefile")) &&
		    !memchr(w, '=', n))
			n = next_word(&p, end, &w);
	}
}

/* A command line: skip "time", "exec", env assignments, then look at the
 * command word. */
static int scan_command(struct scan *sc)
{
	const char *p = sc->text, *end = sc->text + sc->len, *w;
	size_t n;
	int rc;
	char line[LINE_MAX_SCAN + 1];

	for (;;) {
		n = next_word(&p, end, &w);
		if (!n)
			return 0;
		if (word_is(w, n, "time") || word_is(w, n, "exec") ||
		    word_is(w, n, "command") || word_is(w, n, "nohup"))
			continue;
		if (memchr(w, '=', n) && is_name_char(w[0], 1))
			continue;
		break;
	}
	if (word_is(w, n, "module") || word_is(w, n, "ml")) {
		const char *q = p, *sub;
		size_t sn;

		sn = next_word(&q, end, &sub);
		/* "ml NAME" loads; "ml load|add NAME" too; any other Lmod
		 * subcommand (unload, purge, swap, list, ...) loads nothing. */
		if (word_is(w, n, "ml") && sn && sub[0] != '-' &&
		    !is_ml_subcommand(sub, sn))
			return scan_module(sc, p, end);
		if (word_is(sub, sn, "load") || word_is(sub, sn, "add"))
			return scan_module(sc, q, end);
		return 0;
	}
	if (word_is(w, n, "export"))
		return scan_export(sc, p, end);

	/* The command word's last path component. */
	for (const char *s = w + n; s > w; s--) {
		if (s[-1] == '/') {
			n -= (size_t)(s - w);
			w = s;
			break;
		}
	}
	if (!(word_is(w, n, "srun") || word_is(w, n, "mpirun") ||
	      word_is(w, n, "mpiexec") || word_is(w, n, "mpiexec.hydra") ||
	      word_is(w, n, "orterun") || word_is(w, n, "prterun")))
		return 0;
	if (sc->launch_impl == HB_MPI_UNKNOWN) {
		if (word_is(w, n, "mpiexec.hydra"))
			sc->launch_impl = HB_MPI_INTEL;
		else if (word_is(w, n, "orterun") || word_is(w, n, "prterun"))
			sc->launch_impl = HB_MPI_OPENMPI;
	}
	scan_launch_flags(sc, p, end, word_is(w, n, "srun"));
	n = sc->len;
	while (n && is_space(sc->text[n - 1]))
		n--;
	if (n > LINE_MAX_SCAN)
		n = LINE_MAX_SCAN;
	memcpy(line, sc->text, n);
	line[n] = '\0';
	if ((rc = hb_jobspec_add_mpi_line(sc->spec, line)))
		return rc;
	return note_directive(sc, HB_F_MPI,
			      "launch line: runs against the MPI hostfile");
}

int hb_jobspec_scan_body(struct hb_jobspec *spec, struct hb_err *err)
{
	const char *p = spec->script, *end;
	char joined[LINE_MAX_SCAN];
	uint32_t lineno = 0;
	struct scan sc = { .spec = spec, .err = err };
	int rc;

	if (!p)
		return 0;
	end = p + spec->script_len;
	while (p < end) {
		const char *eol;
		size_t jl = 0;
		uint32_t first = lineno + 1;

		/* Join backslash-continued lines into one logical line, as
		 * the shell does; a comment is never continued.  A logical
		 * line too long to hold is not scanned at all, rather than
		 * scanned with a piece missing. */
		bool too_long = false, comment = false;

		sc.text = joined;
		for (;;) {
			size_t n, k = 0;

			eol = memchr(p, '\n', (size_t)(end - p));
			if (!eol)
				eol = end;
			lineno++;
			n = (size_t)(eol - p);
			if (jl == 0) {
				while (k < n && is_space(p[k]))
					k++;
				comment = k < n && p[k] == '#';
			}
			p = eol < end ? eol + 1 : end;
			bool more = !comment && n && eol[-1] == '\\';
			const char *seg = eol - n;

			if (more)
				n--; /* the backslash */
			if (jl == 0 && !(more && p < end)) {
				sc.text = seg; /* one line: read in place */
				jl = n;
				break;
			}
			if (jl + n < sizeof(joined)) {
				memcpy(joined + jl, seg, n);
				jl += n;
			} else {
				too_long = true;
			}
			if (more && p < end)
				continue;
			break;
		}
		if (too_long || jl >= sizeof(joined))
			continue;
		sc.len = jl;
		sc.line = first;
		while (sc.len && is_space(*sc.text)) {
			sc.text++;
			sc.len--;
		}
		if (!sc.len || sc.text[0] == '#')
			continue;
		if ((rc = scan_command(&sc)))
			return hb_err_set(err, rc, spec->source_name, first,
					  "cannot record the script body");
	}

	if (spec->mpi == HB_MPI_UNKNOWN) {
		const enum hb_mpi_impl order[] = {
			sc.launch_impl, sc.module_impl, sc.env_impl,
			sc.flag_impl, sc.hint_impl,
			hb_mpi_from_image(spec->container),
		};

		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
			if (order[i] != HB_MPI_UNKNOWN) {
				spec->mpi = (uint8_t)order[i];
				break;
			}
	}
	return hb_jobspec_settle_fabric(spec) ? hb_err_set(err, HB_ENOMEM,
							    spec->source_name,
							    0,
							    "out of memory")
					      : 0;
}

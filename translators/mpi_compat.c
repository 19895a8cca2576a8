/*
 * mpi_compat.c - the known ways a job's MPI and what it runs on disagree,
 * said as warnings for the fidelity report.
 *
 *  - The script's MPI against its image's.  Open MPI has an ABI of its
 *    own; MPICH, Intel MPI and MVAPICH2 share one (the MPICH ABI
 *    Compatibility Initiative, libmpi.so.12), so a program built against
 *    one of those runs with another's library, never with Open MPI's.
 *  - Hostfiles.  Open MPI 5 launches through PRRTE, whose hostfile
 *    syntax is "host slots=N"; the max_slots=/max-slots= and cpu= forms
 *    belong to Open MPI 4's ORTE.  Hydra (MPICH and its derivatives)
 *    reads "host:N" machinefiles, not slots=.
 *
 * A pure function of the jobspec: the report computes the warnings when
 * it is written, whatever the target.
 */
#include <stdio.h>
#include <string.h>

#include "hpcbridge/jobspec.h"

/* The words each MPI is called by in a message. */
static const char *title(enum hb_mpi_impl m)
{
	static const char *const titles[] = {
		[HB_MPI_UNKNOWN] = "an unknown MPI",
		[HB_MPI_OPENMPI] = "Open MPI",
		[HB_MPI_INTEL] = "Intel MPI",
		[HB_MPI_MPICH] = "MPICH",
		[HB_MPI_MVAPICH2] = "MVAPICH2",
	};

	return (unsigned)m < sizeof(titles) / sizeof(titles[0]) ? titles[m]
								: titles[0];
}

/* Lower-cased copy of s in buf (cut to fit). */
static const char *lower(const char *s, char *buf, size_t len)
{
	size_t n;

	for (n = 0; s[n] && n + 1 < len; n++)
		buf[n] = (char)(s[n] >= 'A' && s[n] <= 'Z' ? s[n] + 32 : s[n]);
	buf[n] = '\0';
	return buf;
}

/* Open MPI's major version as a module or image names it ("openmpi/5.0.3",
 * "OpenMPI/4.1.5-GCC-12.3.0", "openmpi5", "openmpi:5.0"); 0: not said. */
static int ompi_major(const char *name)
{
	char low[256];
	const char *p = strstr(lower(name, low, sizeof(low)), "openmpi");

	if (!p)
		return 0;
	p += 7;
	if (*p == '/' || *p == '-' || *p == ':' || *p == '@')
		p++;
	if (*p >= '1' && *p <= '9' && (p[1] < '0' || p[1] > '9'))
		return *p - '0';
	return 0;
}

static int job_ompi_major(const struct hb_jobspec *spec)
{
	int v = 0;

	for (uint32_t i = 0; !v && i < spec->nmodules; i++)
		v = ompi_major(spec->modules[i]);
	if (!v && spec->container)
		v = ompi_major(spec->container);
	return v;
}

/* Whether the script's text holds word, at the start of a hostfile item
 * (after a blank, a quote or the line's start). */
static bool script_has(const struct hb_jobspec *spec, const char *word)
{
	const char *s = spec->script, *end, *p;
	size_t n = strlen(word);

	if (!s)
		return false;
	end = s + spec->script_len;
	for (p = s; p < end && (p = memmem(p, (size_t)(end - p), word, n));
	     p += n)
		if (p == s || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '"' ||
		    p[-1] == '\'' || p[-1] == '\n')
			return true;
	return false;
}

static int image_check(const struct hb_jobspec *spec,
		       int (*fn)(void *, const char *), void *ctx)
{
	enum hb_mpi_impl img = hb_mpi_from_image(spec->container);
	enum hb_mpi_impl m = (enum hb_mpi_impl)spec->mpi;
	char msg[512];

	if (img == HB_MPI_UNKNOWN || m == HB_MPI_UNKNOWN || img == m)
		return 0;
	if (hb_mpi_abi_compatible(m, img))
		snprintf(msg, sizeof(msg),
			 "the script runs %s but its image %.200s holds %s: "
			 "both keep the MPICH ABI, so the program runs with "
			 "the image's library, but start it with the image's "
			 "mpiexec",
			 title(m), spec->container, title(img));
	else
		snprintf(msg, sizeof(msg),
			 "the script runs %s but its image %.200s holds %s: "
			 "Open MPI's ABI is not MPICH's, so a program built "
			 "against one fails against the other's library; use "
			 "an image with %s",
			 title(m), spec->container, title(img), title(m));
	return fn(ctx, msg);
}

static int hostfile_check(const struct hb_jobspec *spec,
			  int (*fn)(void *, const char *), void *ctx)
{
	static const char *const old_forms[] = { "max_slots=", "max-slots=",
						 "cpu=", NULL };
	enum hb_mpi_impl m = (enum hb_mpi_impl)spec->mpi;
	char msg[256];

	if (m == HB_MPI_OPENMPI && job_ompi_major(spec) >= 5) {
		for (const char *const *w = old_forms; *w; w++) {
			if (!script_has(spec, *w))
				continue;
			snprintf(msg, sizeof(msg),
				 "Open MPI 5 reads hostfiles through PRRTE, "
				 "whose syntax is \"host slots=N\"; the script "
				 "writes %s, a form of Open MPI 4's ORTE",
				 *w);
			return fn(ctx, msg);
		}
	}
	if (hb_mpi_family(m) == HB_MPI_MPICH || m == HB_MPI_INTEL) {
		if (script_has(spec, "slots="))
			return fn(ctx,
				  "the script writes slots= (Open MPI's "
				  "hostfile syntax), but its MPI launches "
				  "with Hydra, whose machinefiles say host:N");
	}
	return 0;
}

int hb_mpi_warnings(const struct hb_jobspec *spec,
		    int (*fn)(void *ctx, const char *msg), void *ctx)
{
	int rc = image_check(spec, fn, ctx);

	return rc ? rc : hostfile_check(spec, fn, ctx);
}

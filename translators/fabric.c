/*
 * fabric.c - what the job needs from the network between its ranks, and
 * which MPI an image holds.
 *
 * A job says it needs RDMA (InfiniBand or RoCE) in words
 * (--hpcbridge-fabric, --constraint=ib) or by the variables its script
 * sets for the communication libraries: UCX, NCCL, Open MPI, Intel MPI's
 * libfabric, MVAPICH2.  Each rule below reads one variable; the first
 * that decides wins, and fabric_why quotes it with its place.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "hpcbridge/jobspec.h"

static const char *const fabric_names[] = {
	[HB_FABRIC_AUTO] = "auto",
	[HB_FABRIC_TCP] = "tcp",
	[HB_FABRIC_RDMA] = "rdma",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *hb_fabric_name(enum hb_fabric f)
{
	return (unsigned)f < NELEM(fabric_names) ? fabric_names[f] : NULL;
}

int hb_fabric_parse(const char *s)
{
	for (size_t i = 0; s && i < NELEM(fabric_names); i++)
		if (!strcasecmp(s, fabric_names[i]))
			return (int)i;
	return -1;
}

/* Copy at most HB_FABRIC_WHY_MAX bytes of text into the arena, control
 * characters made '?': the reason is quoted in logs and messages. */
static const char *why_dup(struct hb_jobspec *spec, const char *text)
{
	char buf[HB_FABRIC_WHY_MAX + 1];
	size_t n = 0;

	for (; text[n] && n < HB_FABRIC_WHY_MAX; n++)
		buf[n] = (unsigned char)text[n] < 0x20 || text[n] == 0x7f
				 ? '?'
				 : text[n];
	buf[n] = '\0';
	return hb_jobspec_strdup(spec, buf);
}

int hb_jobspec_set_fabric(struct hb_jobspec *spec, const char *v,
			  const char *text, struct hb_prov o)
{
	int f = hb_fabric_parse(v);

	if (f < 0)
		return HB_EINVAL;
	spec->fabric = (uint8_t)f;
	spec->fabric_inferred = false;
	if (!(spec->fabric_why = why_dup(spec, text)))
		return HB_ENOMEM;
	hb_jobspec_set_prov(spec, HB_F_FABRIC, o);
	return 0;
}

/* ---- the variables ------------------------------------------------- */

static const char *env_get(const struct hb_jobspec *spec, const char *name)
{
	for (uint32_t i = spec->nenv; i-- > 0;)
		if (!strcmp(spec->env[i].name, name))
			return spec->env[i].value;
	return NULL;
}

/* Whether the comma- or colon-separated list s holds one of words (as a
 * whole item, any case).  A list starting with '^' excludes: it holds
 * nothing. */
static bool list_has(const char *s, const char *const *words)
{
	if (!s || *s == '^')
		return false;
	while (*s) {
		size_t n = strcspn(s, ",:");

		for (const char *const *w = words; *w; w++)
			if (strlen(*w) == n && !strncasecmp(s, *w, n))
				return true;
		s += n;
		if (*s)
			s++;
	}
	return false;
}

/* Whether every item of the list is one of words (and there is one). */
static bool list_only(const char *s, const char *const *words)
{
	bool any = false;

	if (!s || *s == '^' || !*s)
		return false;
	while (*s) {
		size_t n = strcspn(s, ",:");
		bool ok = false;

		for (const char *const *w = words; *w; w++)
			if (strlen(*w) == n && !strncasecmp(s, *w, n))
				ok = true;
		if (!ok && n)
			return false;
		any |= n > 0;
		s += n;
		if (*s)
			s++;
	}
	return any;
}

/* UCX's transports over RDMA verbs (rc, ud, dc and their accelerated
 * and verbs-only forms, and the "ib" alias). */
static const char *const ucx_rdma_tls[] = {
	"rc", "rc_x", "rc_v", "rc_mlx5", "rc_verbs", "ud",    "ud_x",
	"ud_v", "ud_mlx5", "ud_verbs", "dc",  "dc_x",  "dc_mlx5", "ib",
	NULL,
};
/* Transports that never leave TCP or the node. */
static const char *const ucx_tcp_tls[] = {
	"tcp", "sm",   "shm",    "self",    "posix",	"sysv", "cma",
	"knem", "xpmem", "cuda", "cuda_copy", "cuda_ipc", "rocm", NULL,
};
static const char *const ompi_tcp_btls[] = {
	"tcp", "self", "vader", "sm", "smcuda", NULL,
};

/* An RDMA device's name: a verbs device with its port ("mlx5_0:1"), or a
 * name of the drivers that give verbs devices.  A network interface
 * (eth0, ib0: IP over InfiniBand is TCP) is not one. */
static bool rdma_device(const char *s, size_t n)
{
	static const char *const drivers[] = {
		"mlx4_", "mlx5_", "hfi1_", "qib",  "bnxt_re", "irdma", "rxe",
		"siw",   "efa",	  "cxgb4_", "qedr", "ocrdma", "hns_", "erdma",
		"mana_", NULL,
	};
	const char *colon = memchr(s, ':', n);

	for (const char *const *d = drivers; *d; d++)
		if (n >= strlen(*d) && !strncasecmp(s, *d, strlen(*d)))
			return true;
	/* dev:port with a digit port is UCX's verbs form */
	return colon && colon > s && colon + 1 < s + n &&
	       strspn(colon + 1, "0123456789") == (size_t)(s + n - colon - 1);
}

static bool names_rdma_device(const char *v)
{
	if (!v || *v == '^')
		return false;
	while (*v) {
		size_t n = strcspn(v, ",");

		if (n && rdma_device(v, n))
			return true;
		v += n;
		if (*v)
			v++;
	}
	return false;
}

/* The verdict of one rule: a fabric, the variable that decided and, when
 * another one took part, that one. */
struct verdict {
	int fabric; /* enum hb_fabric, or -1: this rule does not decide */
	const char *name, *also;
};

typedef struct verdict (*rule_fn)(const struct hb_jobspec *spec);

#define NONE ((struct verdict){ -1, NULL, NULL })
#define SAY(f, n, a) ((struct verdict){ (f), (n), (a) })

/* The verdict of a list variable: rdma when it holds one of rdma, tcp
 * when it holds nothing but tcp's words (either list may be NULL). */
static struct verdict by_list(const char *v, const char *const *rdma,
			      const char *const *tcp, const char *name,
			      const char *also)
{
	if (rdma && list_has(v, rdma))
		return SAY(HB_FABRIC_RDMA, name, also);
	if (tcp && list_only(v, tcp))
		return SAY(HB_FABRIC_TCP, name, also);
	return NONE;
}

static struct verdict ucx_tls(const struct hb_jobspec *spec)
{
	const char *v = env_get(spec, "UCX_TLS");
	const char *pml = env_get(spec, "OMPI_MCA_pml");
	const char *also = pml && !strcasecmp(pml, "ucx") ? "OMPI_MCA_pml"
							   : NULL;

	return by_list(v, ucx_rdma_tls, ucx_tcp_tls, "UCX_TLS", also);
}

static struct verdict ucx_devices(const struct hb_jobspec *spec)
{
	if (names_rdma_device(env_get(spec, "UCX_NET_DEVICES")))
		return SAY(HB_FABRIC_RDMA, "UCX_NET_DEVICES", NULL);
	return NONE;
}

static bool is_true(const char *v)
{
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true") ||
		     !strcasecmp(v, "yes"));
}

static struct verdict nccl(const struct hb_jobspec *spec)
{
	const char *p2p = is_true(env_get(spec, "NCCL_P2P_DISABLE"))
				  ? "NCCL_P2P_DISABLE"
				  : NULL;
	const char *net = env_get(spec, "NCCL_NET");
	const char *hca = env_get(spec, "NCCL_IB_HCA");

	if (is_true(env_get(spec, "NCCL_IB_DISABLE")))
		return SAY(HB_FABRIC_TCP, "NCCL_IB_DISABLE", p2p);
	if (net && !strcasecmp(net, "Socket"))
		return SAY(HB_FABRIC_TCP, "NCCL_NET", p2p);
	if (net && !strcasecmp(net, "IB"))
		return SAY(HB_FABRIC_RDMA, "NCCL_NET", NULL);
	/* "^mlx5_1" only leaves one out: it says nothing. */
	if (hca && *hca && *hca != '^')
		return SAY(HB_FABRIC_RDMA, "NCCL_IB_HCA", NULL);
	return NONE;
}

static struct verdict ompi_btl(const struct hb_jobspec *spec)
{
	static const char *const openib[] = { "openib", NULL };
	const char *v = env_get(spec, "OMPI_MCA_btl");
	const char *pml = env_get(spec, "OMPI_MCA_pml");
	struct verdict r = by_list(v, openib, ompi_tcp_btls, "OMPI_MCA_btl",
				   NULL);

	if (!v || r.fabric >= 0)
		return r;
	/* "^openib" turns the verbs BTL off; with the UCX PML, UCX still
	 * drives the HCA, so it says nothing then. */
	if (!strcasecmp(v, "^openib") && !(pml && !strcasecmp(pml, "ucx")))
		return SAY(HB_FABRIC_TCP, "OMPI_MCA_btl", NULL);
	return NONE;
}

/* Intel MPI: I_MPI_FABRICS (shm:ofi, or the old shm:dapl and ofa) and
 * libfabric's provider. */
static struct verdict intel_ofi(const struct hb_jobspec *spec)
{
	static const char *const rdma_prov[] = { "verbs", "mlx", "psm2",
						 "psm3", "efa", "verbs;ofi_rxm",
						 NULL };
	static const char *const tcp_prov[] = { "tcp", "sockets",
						"tcp;ofi_rxm", "shm", NULL };
	static const char *const old_rdma[] = { "dapl", "ofa", "tmi", NULL };
	static const char *const old_tcp[] = { "tcp", "shm", NULL };
	const char *fab = env_get(spec, "I_MPI_FABRICS");
	struct verdict r = by_list(env_get(spec, "FI_PROVIDER"), rdma_prov,
				   tcp_prov, "FI_PROVIDER",
				   fab ? "I_MPI_FABRICS" : NULL);

	return r.fabric >= 0 ? r
			     : by_list(fab, old_rdma, old_tcp, "I_MPI_FABRICS",
				       NULL);
}

/* MVAPICH2 runs over verbs; these name the HCA or its RoCE mode. */
static struct verdict mvapich(const struct hb_jobspec *spec)
{
	static const char *const names[] = { "MV2_IBA_HCA", "MV2_USE_RoCE",
					     "MV2_USE_RDMA_CM", NULL };

	for (const char *const *n = names; *n; n++) {
		const char *v = env_get(spec, *n);

		if (v && (n == names ? *v != '\0' : is_true(v)))
			return SAY(HB_FABRIC_RDMA, *n, NULL);
	}
	return NONE;
}

/* In order: the first rule that decides wins.  Transport lists come
 * before device names (UCX_TLS=tcp with a device named is TCP). */
static const rule_fn rules[] = {
	ucx_tls, ucx_devices, nccl, ompi_btl, intel_ofi, mvapich,
};

/* ---- where each was said -------------------------------------------- */

/* The last directive that set field f and whose text holds key (NULL:
 * any), or NULL. */
static struct hb_directive *directive_of(struct hb_jobspec *spec,
					 enum hb_field f, const char *key)
{
	for (uint32_t i = spec->ndirectives; i-- > 0;) {
		struct hb_directive *d = &spec->directives[i];

		for (uint8_t k = 0; k < d->nfields; k++)
			if (d->fields[k] == f &&
			    (!key || (d->text && strstr(d->text, key))))
				return d;
	}
	return NULL;
}

/* "NAME=VALUE" and, when a directive of the script set it, " at
 * file:line"; appended to buf. */
static void quote_var(struct hb_jobspec *spec, const char *name, char *buf,
		      size_t len, struct hb_directive **dp)
{
	size_t used = strlen(buf);
	const char *v = env_get(spec, name);
	char key[96];
	struct hb_directive *d;

	snprintf(key, sizeof(key), "%s=", name);
	d = directive_of(spec, HB_F_ENV, key);
	/* a long value is cut, so that its place still fits */
	if (used < len)
		snprintf(buf + used, len - used, "%s%s=%.80s%s",
			 used ? " with " : "", name, v, strlen(v) > 80 ? "..." : "");
	used = strlen(buf);
	if (d && d->prov.kind == HB_PROV_FILE && used < len)
		snprintf(buf + used, len - used, " at %s:%u",
			 spec->source_name ? spec->source_name : "script",
			 d->prov.line);
	if (dp && !*dp)
		*dp = d;
}

/* Record the fabric decided by directive d (or none), said in why. */
static int decide(struct hb_jobspec *spec, int fabric, const char *why,
		  struct hb_directive *d, bool inferred)
{
	struct hb_prov o = { HB_PROV_DERIVED, 0 };

	spec->fabric = (uint8_t)fabric;
	spec->fabric_inferred = inferred;
	if (!(spec->fabric_why = why_dup(spec, why)))
		return HB_ENOMEM;
	if (d) {
		o = d->prov;
		hb_directive_add_field(d, HB_F_FABRIC);
	}
	hb_jobspec_set_prov(spec, HB_F_FABRIC, o);
	return 0;
}

/* A --constraint naming an RDMA feature: ib, infiniband, rdma, roce (the
 * policy may configure more; placement reads those). */
static bool constraint_rdma(const char *expr)
{
	static const char *const feats[] = { "ib", "infiniband", "rdma",
					     "roce", NULL };
	const char *p = expr;

	while (p && *p) {
		size_t n = strcspn(p, "&|,[]*()");

		for (const char *const *f = feats; n && *f; f++)
			if (strlen(*f) == n && !strncasecmp(p, *f, n))
				return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

int hb_jobspec_settle_fabric(struct hb_jobspec *spec)
{
	char why[HB_FABRIC_WHY_MAX + 1];
	struct hb_directive *d = NULL;

	if (hb_jobspec_has(spec, HB_F_FABRIC))
		return 0; /* said in words, or read back */
	why[0] = '\0';
	if (spec->constraint && constraint_rdma(spec->constraint)) {
		/* One form whether an #SBATCH line, a flag or SBATCH_
		 * variable said it (or a PBS feature): Slurm's. */
		d = directive_of(spec, HB_F_CONSTRAINT, NULL);
		snprintf(why, sizeof(why), "--constraint=%.200s",
			 spec->constraint);
		if (d && d->prov.kind == HB_PROV_FILE)
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 " at %s:%u", spec->source_name, d->prov.line);
		return decide(spec, HB_FABRIC_RDMA, why, d, false);
	}
	if (!spec->nenv)
		return 0;
	for (size_t i = 0; i < NELEM(rules); i++) {
		struct verdict v = rules[i](spec);

		if (v.fabric < 0)
			continue;
		quote_var(spec, v.name, why, sizeof(why), &d);
		if (v.also && env_get(spec, v.also))
			quote_var(spec, v.also, why, sizeof(why), NULL);
		return decide(spec, v.fabric, why, d, true);
	}
	return 0;
}

int hb_jobspec_fabric_from_script(struct hb_jobspec *spec, const char *script)
{
	struct hb_jobspec tmp;
	struct hb_err err = { 0 };
	int rc;

	if ((rc = hb_jobspec_settle_fabric(spec)) || !script ||
	    hb_jobspec_has(spec, HB_F_FABRIC))
		return rc;
	hb_jobspec_init(&tmp, "script"); /* "at script:7" */
	tmp.script = script;
	tmp.script_len = (uint32_t)strnlen(script, UINT32_MAX);
	rc = hb_jobspec_scan_body(&tmp, &err);
	if (!rc && hb_jobspec_has(&tmp, HB_F_FABRIC)) {
		spec->fabric = tmp.fabric;
		spec->fabric_inferred = tmp.fabric_inferred;
		spec->fabric_why = tmp.fabric_why
					   ? hb_jobspec_strdup(spec, tmp.fabric_why)
					   : NULL;
		if (tmp.fabric_why && !spec->fabric_why)
			rc = HB_ENOMEM;
		hb_jobspec_set_prov(spec, HB_F_FABRIC,
				    (struct hb_prov){ HB_PROV_DERIVED, 0 });
	}
	hb_jobspec_free(&tmp);
	return rc;
}

/* ---- images --------------------------------------------------------- */

enum hb_mpi_impl hb_mpi_from_image(const char *image)
{
	static const struct {
		const char *word;
		enum hb_mpi_impl impl;
	} words[] = {
		/* in order: an image naming two ("intel-mpich-bench")
		 * is the first's; "intel" alone comes last */
		{ "mvapich", HB_MPI_MVAPICH2 },	 { "openmpi", HB_MPI_OPENMPI },
		{ "open-mpi", HB_MPI_OPENMPI },	 { "intel-mpi", HB_MPI_INTEL },
		{ "intelmpi", HB_MPI_INTEL },	 { "impi", HB_MPI_INTEL },
		{ "oneapi-hpc", HB_MPI_INTEL },	 { "hpckit", HB_MPI_INTEL },
		{ "mpich", HB_MPI_MPICH },	 { "intel", HB_MPI_INTEL },
	};
	char low[512];
	size_t n;

	if (!image)
		return HB_MPI_UNKNOWN;
	for (n = 0; image[n] && n + 1 < sizeof(low); n++)
		low[n] = (char)(image[n] >= 'A' && image[n] <= 'Z'
					? image[n] + 32
					: image[n]);
	low[n] = '\0';
	for (size_t i = 0; i < NELEM(words); i++)
		if (strstr(low, words[i].word))
			return words[i].impl;
	return HB_MPI_UNKNOWN;
}

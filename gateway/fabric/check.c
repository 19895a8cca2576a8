/*
 * check.c - the doctor's checks over a node's inventory and a job
 * script: what is missing for RDMA, GPUDirect and NCCL, every reason a
 * multi-node job would run over TCP, and whether the MPI a script
 * expects is the one the node (or its image) has.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fabric_int.h"

#define DOC "see docs/doctor.md"

/* The reasons a job would use TCP, joined with "; ". */
struct reasons {
	char text[768];
	size_t n;
};

static void because(struct reasons *r, const char *why)
{
	size_t len = strlen(r->text);

	snprintf(r->text + len, sizeof(r->text) - len, "%s%s",
		 r->n ? "; " : "", why);
	r->n++;
}

/* --- RDMA --------------------------------------------------------------- */

static int has_roce_v2(const struct hb_fab_port *p)
{
	for (uint32_t i = 0; i < p->ngids; i++)
		if (p->gids[i].type != HB_FAB_GID_ROCE_V1)
			return 1;
	return 0;
}

static void check_port(const struct hb_fab_rdma_dev *d,
		       const struct hb_fab_port *p, struct hb_fab_findings *f)
{
	const char *layer = p->link == HB_FAB_LINK_ETH ? "Ethernet (RoCE)"
						       : hb_fab_link_name(p->link);

	if (p->state != HB_FAB_PORT_ACTIVE) {
		hb_fab_add(f, HB_FAB_WARN, "rdma.port_down",
			   p->link == HB_FAB_LINK_IB
				   ? "check the cable and that a subnet manager "
				     "(opensm or the switch's) runs: `ibstat` "
				     "shows State: Active when it does"
				   : "check the cable and the switch port; "
				     "`ibv_devinfo` shows PORT_ACTIVE when "
				     "the link is up",
			   "%s port %u (%s) is %s, not ACTIVE", d->name, p->num,
			   layer, hb_fab_port_state_name(p->state));
		return;
	}
	if (p->link == HB_FAB_LINK_ETH && !p->ngids) {
		hb_fab_add(f, HB_FAB_WARN, "rdma.roce_no_gid",
			   "give the port's network interface an IP address: "
			   "RoCE's GIDs are made from the interface's "
			   "addresses (`show_gids` lists them)",
			   "%s port %u is Ethernet (RoCE) with no GID: no "
			   "RDMA connection can be made over it",
			   d->name, p->num);
		return;
	}
	if (p->link == HB_FAB_LINK_ETH && !has_roce_v2(p))
		hb_fab_add(f, HB_FAB_WARN, "rdma.roce_v1_only",
			   "RoCE v1 does not cross an IP router; set the "
			   "interface up for RoCE v2 (an IP address on it) "
			   "or keep the job in one L2 domain",
			   "%s port %u has only RoCE v1 GIDs", d->name,
			   p->num);
	hb_fab_add(f, HB_FAB_OK, "rdma.port", NULL,
		   "%s port %u: %s, ACTIVE, %g Gb/s (%ux), %u GID%s", d->name,
		   p->num, layer, p->gbps, p->width, p->ngids,
		   p->ngids == 1 ? "" : "s");
}

/* The ports that can carry RDMA. */
static size_t check_rdma(const struct hb_fab_node *n,
			 struct hb_fab_findings *f, struct reasons *r)
{
	size_t usable = 0, ports = 0;

	if (!n->ndevs) {
		hb_fab_add(f, HB_FAB_WARN, "rdma.no_device",
			   "on an RDMA host, load the adapter's kernel "
			   "driver (mlx5_ib, ...) and install rdma-core's "
			   "providers (Debian: ibverbs-providers); "
			   "`ibv_devices` should list the device",
			   "no RDMA device on this node%s%s",
			   n->rdma_note[0] ? ": " : "", n->rdma_note);
		because(r, "no RDMA device");
		return 0;
	}
	for (size_t i = 0; i < n->ndevs; i++)
		for (uint32_t j = 0; j < n->devs[i].nports; j++) {
			check_port(&n->devs[i], &n->devs[i].ports[j], f);
			usable += fab_port_usable(&n->devs[i].ports[j]);
			ports++;
		}
	if (!usable)
		because(r, ports ? "no RDMA port is ACTIVE with a usable GID"
				 : "the RDMA devices have no port");
	return usable;
}

/* --- GPUs, GPUDirect, NCCL ----------------------------------------------- */

static void check_gpus(const struct hb_fab_node *n, size_t usable,
		       struct hb_fab_findings *f)
{
	struct reasons miss = { "", 0 };
	char list[512] = "", v[32];
	size_t nvidia = 0, len = 0;

	for (size_t i = 0; i < n->ngpus; i++) {
		nvidia += n->gpus[i].vendor == 0x10de;
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len,
					"%s%s 0x%04x at %s", i ? ", " : "",
					fab_gpu_vendor(n->gpus[i].vendor),
					n->gpus[i].device, n->gpus[i].pci);
	}
	if (!n->ngpus)
		hb_fab_add(f, HB_FAB_OK, "gpu.none", NULL,
			   "no GPU on this node");
	else
		hb_fab_add(f, HB_FAB_OK, "gpu.found", NULL, "%zu GPU%s: %s",
			   n->ngpus, n->ngpus == 1 ? "" : "s", list);
	if (nvidia && !n->nvidia_driver[0])
		hb_fab_add(f, HB_FAB_WARN, "gpu.no_driver",
			   "load the NVIDIA kernel driver (`modprobe nvidia`); "
			   "/proc/driver/nvidia/version appears when it is",
			   "NVIDIA GPUs but the NVIDIA driver is not loaded");
	if (n->ngpus) {
		if (!usable)
			because(&miss, "a usable RDMA port");
		if (nvidia && !n->peermem)
			because(&miss, "the nvidia_peermem module");
		if (nvidia && !n->nvidia_driver[0])
			because(&miss, "the NVIDIA driver");
		if (miss.n)
			hb_fab_add(f, HB_FAB_WARN, "gpudirect.missing",
				   "GPUDirect RDMA needs GPUs, an RDMA port "
				   "and, for NVIDIA, `modprobe nvidia_peermem` "
				   "(nv_peer_mem before driver 470); without "
				   "it transfers go through host memory",
				   "GPUDirect RDMA is not possible here: "
				   "missing %s",
				   miss.text);
		else
			hb_fab_add(f, HB_FAB_OK, "gpudirect.ok", NULL,
				   "GPUDirect RDMA: GPUs, RDMA and the "
				   "peer-memory module are all here");
	}
	hb_fab_nccl_version_text(n->nccl_version, v, sizeof(v));
	if (n->nccl_version)
		hb_fab_add(f, HB_FAB_OK, "nccl.found", NULL, "NCCL %s", v);
	else if (n->ngpus)
		hb_fab_add(f, HB_FAB_WARN, "nccl.missing",
			   "install NCCL (libnccl2) on the node, or run the "
			   "job in an image that brings it",
			   "NCCL is not on this node (%s)", n->nccl_note);
	else
		hb_fab_add(f, HB_FAB_OK, "nccl.absent", NULL,
			   "NCCL is not on this node (%s); no GPU needs it",
			   n->nccl_note[0] ? n->nccl_note : "not present");
}

/* --- MPI --------------------------------------------------------------- */

static void check_mpi(const struct hb_fab_node *n, size_t usable,
		      struct hb_fab_findings *f, struct reasons *r)
{
	const struct hb_fab_mpi *m = &n->mpi;

	if (m->ompi_version[0]) {
		hb_fab_add(f, HB_FAB_OK, "mpi.openmpi", NULL,
			   "Open MPI %s: UCX %s, openib %s, CUDA-aware %s",
			   m->ompi_version, m->ompi_ucx ? "yes" : "no",
			   m->ompi_openib ? "yes" : "no",
			   m->ompi_cuda < 0 ? "unknown"
			   : m->ompi_cuda	? "yes"
						: "no");
		if (!m->ompi_ucx) {
			hb_fab_add(f, HB_FAB_WARN, "mpi.no_ucx",
				   "use an Open MPI built --with-ucx (`ompi_info "
				   "| grep pml` lists ucx); Open MPI 4.1 keeps "
				   "openib off InfiniBand and 5.0 has no openib",
				   "Open MPI %s was built without UCX (no "
				   "pml/ucx component)",
				   m->ompi_version);
			because(r, "Open MPI built without UCX");
		}
		if (n->ngpus && m->ompi_cuda != 1)
			hb_fab_add(f, HB_FAB_WARN, "mpi.not_cuda_aware",
				   "GPU buffers must be copied to the host "
				   "before each MPI call; use an Open MPI built "
				   "--with-cuda (and UCX with CUDA)",
				   "Open MPI %s is not CUDA-aware",
				   m->ompi_version);
	}
	if (m->other[0])
		hb_fab_add(f, HB_FAB_OK, "mpi.other", NULL, "another MPI: %s",
			   m->other);
	if (!m->ompi_version[0] && !m->other[0])
		hb_fab_add(f, HB_FAB_WARN, "mpi.none",
			   "jobs that bring their MPI in an image do not need "
			   "one here; others need `module load` of one",
			   "no MPI on this node's PATH (neither ompi_info nor "
			   "mpichversion nor mpiexec answered)");
	(void)usable;
}

/* --- variables that turn RDMA off ----------------------------------------- */

static int truthy(const char *v)
{
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true") ||
		     !strcasecmp(v, "yes"));
}

/* Whether the comma list names one of the words (a prefix of an
 * item, case aside: "rc" covers "rc_x", "rc_verbs"). */
static int names_any(const char *list, const char *const *words)
{
	for (const char *t = list; *t;) {
		size_t len;

		while (*t == ',' || isspace((unsigned char)*t))
			t++;
		len = strcspn(t, ",");
		for (const char *const *w = words; *w; w++)
			if (strlen(*w) <= len && !strncasecmp(t, *w, strlen(*w)))
				return 1;
		t += len;
	}
	return 0;
}

static void env_finding(struct hb_fab_findings *f, const char *prefix,
			const char *code, const char *hint, const char *where,
			const char *var, const char *val, const char *what)
{
	char c[96];

	snprintf(c, sizeof(c), "%s.%s", prefix, code);
	hb_fab_add(f, HB_FAB_WARN, c, hint, "%s sets %s=%s: %s", where, var,
		   val, what);
}

/* The NCCL, UCX and Open MPI variables that keep a job off RDMA. */
static void check_env(struct hb_fab_findings *f, const char *prefix,
		      const char *where, hb_fab_env_fn env, void *ctx,
		      struct reasons *r)
{
	static const char *const rdma_tls[] = { "rc", "ud", "dc", "ib",
						"all", "rdma", NULL };
	static const char *const rdma_btl[] = { "openib", "uct", "ofi", NULL };
	const char *v;

	if (!env)
		return;
	if (truthy(v = env(ctx, "NCCL_IB_DISABLE"))) {
		env_finding(f, prefix, "nccl_ib_disabled",
			    "unset it unless the job must avoid InfiniBand "
			    "(some RL codes do); NCCL then uses its socket "
			    "transport",
			    where, "NCCL_IB_DISABLE", v,
			    "NCCL will not use InfiniBand or RoCE");
		because(r, "NCCL_IB_DISABLE is set");
	}
	if ((v = env(ctx, "NCCL_NET")) && !strcasecmp(v, "Socket")) {
		env_finding(f, prefix, "nccl_net_socket", "unset NCCL_NET",
			    where, "NCCL_NET", v, "NCCL will use TCP sockets");
		because(r, "NCCL_NET=Socket");
	}
	if (truthy(v = env(ctx, "NCCL_P2P_DISABLE")))
		env_finding(f, prefix, "nccl_p2p_disabled",
			    "fine when meant (some RL algorithms need it); "
			    "otherwise unset it",
			    where, "NCCL_P2P_DISABLE", v,
			    "GPUs on one node talk through host memory, not "
			    "NVLink or PCIe peer to peer");
	if ((v = env(ctx, "UCX_TLS")) && *v != '^' &&
	    !names_any(v, rdma_tls)) {
		env_finding(f, prefix, "ucx_tls_tcp",
			    "add rc (or dc, ud) to UCX_TLS, or unset it",
			    where, "UCX_TLS", v,
			    "UCX has no RDMA transport to use");
		because(r, "UCX_TLS names no RDMA transport");
	}
	if ((v = env(ctx, "OMPI_MCA_pml")) && !strcmp(v, "ob1")) {
		env_finding(f, prefix, "ompi_pml_ob1",
			    "use OMPI_MCA_pml=ucx on RDMA", where,
			    "OMPI_MCA_pml", v,
			    "Open MPI's ob1 goes through its BTLs, TCP on "
			    "InfiniBand in 4.1 and later");
		because(r, "OMPI_MCA_pml=ob1");
	}
	if ((v = env(ctx, "OMPI_MCA_btl")) && *v != '^' &&
	    !names_any(v, rdma_btl)) {
		env_finding(f, prefix, "ompi_btl_tcp",
			    "unset OMPI_MCA_btl, or use OMPI_MCA_pml=ucx",
			    where, "OMPI_MCA_btl", v,
			    "Open MPI may only use these byte-transfer layers, "
			    "none of them RDMA");
		because(r, "OMPI_MCA_btl names no RDMA transport");
	}
}

void hb_fab_check_node(const struct hb_fab_node *n, hb_fab_env_fn env,
		       void *env_ctx, struct hb_fab_findings *f)
{
	struct reasons r = { "", 0 };
	size_t usable = check_rdma(n, f, &r);

	check_gpus(n, usable, f);
	check_mpi(n, usable, f, &r);
	check_env(f, "env", "the environment", env, env_ctx, &r);
	if (r.n)
		hb_fab_add(f, HB_FAB_WARN, "fabric.tcp_fallback",
			   "a job that needs RDMA (--hpcbridge-fabric=rdma) "
			   "must not run here; " DOC,
			   "a multi-node job started here would run over "
			   "TCP: %s",
			   r.text);
	else
		hb_fab_add(f, HB_FAB_OK, "fabric.rdma", NULL,
			   "multi-node jobs here can use RDMA (%zu usable "
			   "port%s)",
			   usable, usable == 1 ? "" : "s");
}

/* --- the job's MPI ------------------------------------------------------ */

const char *hb_fab_mpi_family(const char *t)
{
	char low[256];
	size_t i;

	if (!t)
		return NULL;
	for (i = 0; t[i] && i + 1 < sizeof(low); i++)
		low[i] = (char)tolower((unsigned char)t[i]);
	low[i] = '\0';
	if (strstr(low, "mvapich"))
		return "MVAPICH2";
	if (strstr(low, "openmpi") || strstr(low, "open mpi") ||
	    strstr(low, "open-mpi") || strstr(low, "ompi") ||
	    strstr(low, "openrte"))
		return "OpenMPI";
	if (strstr(low, "intel") || strstr(low, "impi") ||
	    strstr(low, "oneapi"))
		return "Intel";
	if (strstr(low, "mpich"))
		return "MPICH";
	return NULL;
}

/* MPICH, Intel MPI and MVAPICH2 share MPICH's ABI. */
static int mpich_abi(const char *fam)
{
	return fam && strcmp(fam, "OpenMPI");
}

static const char *spec_env(void *ctx, const char *name)
{
	const struct hb_jobspec *spec = ctx;

	for (uint32_t i = spec->nenv; i-- > 0;)
		if (spec->env[i].name && !strcmp(spec->env[i].name, name))
			return spec->env[i].value;
	return NULL;
}

static void check_image(const struct hb_jobspec *spec, const char *name,
			const char *want, struct hb_fab_findings *f)
{
	const char *img = hb_fab_mpi_family(spec->container);

	if (!img) {
		hb_fab_add(f, HB_FAB_WARN, "job.image.unknown",
			   "run `ompi_info` or `mpichversion` in the image; a "
			   "tag naming the MPI (openmpi4.1, mpich4) lets "
			   "this check tell",
			   "%s: the image %s does not say which MPI it holds",
			   name, spec->container);
	} else if (!want || !strcmp(img, want)) {
		hb_fab_add(f, HB_FAB_OK, "job.image.match", NULL,
			   "%s: the image %s holds %s%s", name,
			   spec->container, img,
			   want ? ", as the script expects" : "");
	} else if (mpich_abi(img) && mpich_abi(want)) {
		hb_fab_add(f, HB_FAB_WARN, "job.image.abi",
			   "the script's mpirun and the image's libraries "
			   "should come from one MPI; mixing MPICH-ABI builds "
			   "fails on launcher options and PMI versions",
			   "%s: the script expects %s, the image %s holds %s "
			   "(both MPICH's ABI)",
			   name, want, spec->container, img);
	} else {
		hb_fab_add(f, HB_FAB_FAIL, "job.image.mismatch",
			   "use an image built with the MPI the script "
			   "launches with, or change the launch lines",
			   "%s: the script expects %s, but the image %s holds "
			   "%s",
			   name, want, spec->container, img);
	}
}

static void check_job_mpi(const struct hb_jobspec *spec, const char *name,
			  const struct hb_fab_node *n,
			  struct hb_fab_findings *f)
{
	const char *want = hb_fab_mpi_family(hb_mpi_impl_name(spec->mpi));
	const char *ompi = n->mpi.ompi_version[0] ? "OpenMPI" : NULL;
	const char *other = hb_fab_mpi_family(n->mpi.other);
	/* In an image the node's MPI does not run the job. */
	enum hb_fab_level miss = spec->container ? HB_FAB_WARN : HB_FAB_FAIL;

	if (!want)
		hb_fab_add(f, HB_FAB_OK, "job.mpi.unknown", NULL,
			   "%s: the script does not say which MPI it uses "
			   "(%u launch line%s)",
			   name, spec->nmpi_lines,
			   spec->nmpi_lines == 1 ? "" : "s");
	else if ((ompi && !strcmp(want, ompi)) ||
		 (other && !strcmp(want, other)))
		hb_fab_add(f, HB_FAB_OK, "job.mpi.match", NULL,
			   "%s expects %s, and this node has it%s%s", name,
			   want, ompi && !strcmp(want, ompi) ? ": " : "",
			   ompi && !strcmp(want, ompi) ? n->mpi.ompi_version
						       : "");
	else if (ompi || other)
		hb_fab_add(f, miss, "job.mpi.mismatch",
			   "load the MPI the script expects (`module load`), "
			   "or run it in an image that has it",
			   "%s expects %s, but this node has %s%s%s", name, want,
			   ompi ? "Open MPI " : "",
			   ompi ? n->mpi.ompi_version : "",
			   ompi ? "" : n->mpi.other);
	else
		hb_fab_add(f, HB_FAB_WARN, "job.mpi.none_here",
			   "the job needs its MPI on the nodes it runs on, or "
			   "in its image",
			   "%s expects %s; this node has no MPI", name, want);
	if (spec->container)
		check_image(spec, name, want, f);
}

void hb_fab_check_job(const struct hb_jobspec *spec, const char *name,
		      const struct hb_fab_node *n, struct hb_fab_findings *f)
{
	struct reasons r = { "", 0 };
	int usable = 0;

	check_job_mpi(spec, name, n, f);
	for (size_t i = 0; i < n->ndevs; i++)
		for (uint32_t j = 0; j < n->devs[i].nports; j++)
			usable += fab_port_usable(&n->devs[i].ports[j]);
	if (spec->fabric == HB_FABRIC_RDMA && !usable)
		hb_fab_add(f, HB_FAB_FAIL, "job.fabric.no_rdma",
			   "send it to nodes with an ACTIVE RDMA port; "
			   "placement keeps it off a side that offers none",
			   "%s needs RDMA (%s) and this node has no usable "
			   "RDMA port",
			   name, spec->fabric_why ? spec->fabric_why : "said");
	else if (spec->fabric == HB_FABRIC_RDMA)
		hb_fab_add(f, HB_FAB_OK, "job.fabric.rdma", NULL,
			   "%s needs RDMA (%s): this node has it", name,
			   spec->fabric_why ? spec->fabric_why : "said");
	else if (spec->fabric == HB_FABRIC_TCP)
		hb_fab_add(f, HB_FAB_OK, "job.fabric.tcp", NULL,
			   "%s runs over TCP (%s)", name,
			   spec->fabric_why ? spec->fabric_why : "said");
	check_env(f, "job.env", name, spec_env, (void *)spec, &r);
	if (r.n && spec->fabric == HB_FABRIC_RDMA)
		hb_fab_add(f, HB_FAB_FAIL, "job.fabric.contradiction",
			   "drop the variables that turn RDMA off, or ask "
			   "for --hpcbridge-fabric=tcp",
			   "%s asks for RDMA but turns it off: %s", name,
			   r.text);
}

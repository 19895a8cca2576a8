/*
 * test_fabric.c - the fabric inventory and the doctor's node and job
 * checks: the fake provider as an InfiniBand host, a RoCE host, a host
 * without RDMA, GPUs with and without NCCL; the variables that turn RDMA
 * off; ompi_info's text; NCCL's version codes; the GPU scan over a
 * made-up sysfs; the real provider's RDMA list against sysfs; the child
 * runner.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hpcbridge/doc.h"
#include "hpcbridge/fabric.h"
#include "hpcbridge/translate.h"
#include "test_fabric_util.h"
#include "testutil.h"

/* --- hosts for the fake provider --------------------------------------- */

static struct hb_fab_rdma_dev ib_dev, roce_dev;
static struct hb_fab_gpu two_a100[2];

static void set_gid(struct hb_fab_port *p, uint16_t idx, uint8_t type,
		    const char *text)
{
	struct hb_fab_gid *g = &p->gids[p->ngids++];

	g->index = idx;
	g->type = type;
	snprintf(g->text, sizeof(g->text), "%s", text);
}

static void make_devs(void)
{
	struct hb_fab_port *p;

	memset(&ib_dev, 0, sizeof(ib_dev));
	snprintf(ib_dev.name, sizeof(ib_dev.name), "mlx5_0");
	snprintf(ib_dev.guid, sizeof(ib_dev.guid), "0002:c903:00a1:b2c0");
	ib_dev.nports = 1;
	p = &ib_dev.ports[0];
	p->num = 1;
	p->state = HB_FAB_PORT_ACTIVE;
	p->link = HB_FAB_LINK_IB;
	p->width = 4;
	p->gbps = 200;
	set_gid(p, 0, HB_FAB_GID_IB,
		"fe80:0000:0000:0000:0002:c903:00a1:b2c1");

	memset(&roce_dev, 0, sizeof(roce_dev));
	snprintf(roce_dev.name, sizeof(roce_dev.name), "mlx5_1");
	roce_dev.nports = 1;
	p = &roce_dev.ports[0];
	p->num = 1;
	p->state = HB_FAB_PORT_ACTIVE;
	p->link = HB_FAB_LINK_ETH;
	p->width = 1;
	p->gbps = 100;
	set_gid(p, 0, HB_FAB_GID_ROCE_V1,
		"fe80:0000:0000:0000:0a42:a1ff:fe00:0001");
	set_gid(p, 1, HB_FAB_GID_ROCE_V2,
		"fe80:0000:0000:0000:0a42:a1ff:fe00:0001");
	set_gid(p, 3, HB_FAB_GID_ROCE_V2,
		"0000:0000:0000:0000:0000:ffff:0a00:0005");

	for (int i = 0; i < 2; i++) {
		snprintf(two_a100[i].pci, sizeof(two_a100[i].pci),
			 "0000:%02x:00.0", 0x3b + i);
		two_a100[i].vendor = 0x10de;
		two_a100[i].device = 0x20b2;
		two_a100[i].pci_class = 0x030200;
	}
}

/* An Open MPI 4.1.5 with UCX and CUDA. */
static void good_mpi(struct hb_fab_node *c)
{
	snprintf(c->mpi.ompi_version, sizeof(c->mpi.ompi_version), "4.1.5");
	c->mpi.ompi_ucx = true;
	c->mpi.ompi_openib = false;
	c->mpi.ompi_cuda = 1;
}

/* The InfiniBand GPU host: RDMA, GPUs, driver, peer memory, NCCL. */
static void ib_host(struct hb_fab_node *c)
{
	memset(c, 0, sizeof(*c));
	make_devs();
	c->devs = &ib_dev;
	c->ndevs = 1;
	c->gpus = two_a100;
	c->ngpus = 2;
	snprintf(c->nvidia_driver, sizeof(c->nvidia_driver),
		 "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15");
	c->peermem = true;
	c->nccl_version = 21903;
	good_mpi(c);
}

struct env_pair {
	const char *name, *value;
};

static const char *env_from(void *ctx, const char *name)
{
	for (const struct env_pair *e = ctx; e->name; e++)
		if (!strcmp(e->name, name))
			return e->value;
	return NULL;
}

/* Inventory through the fake provider, then the checks. */
static void run(const struct hb_fab_node *canned, const struct env_pair *env,
		struct hb_fab_node *n, struct hb_fab_findings *f)
{
	struct hb_fab_provider p;
	struct hb_err err = { 0 };

	memset(n, 0, sizeof(*n));
	memset(f, 0, sizeof(*f));
	hb_fab_fake_provider(canned, &p);
	assert_int_equal(hb_fab_inventory(&p, n, &err), 0);
	hb_fab_check_node(n, env ? env_from : NULL, (void *)env, f);
	assert_false(f->oom);
}

/* --- the hosts ----------------------------------------------------------- */

static void test_ib_host(void **state)
{
	struct hb_fab_node c, n;
	struct hb_fab_findings f;
	cJSON *j;
	const cJSON *port;

	(void)state;
	ib_host(&c);
	run(&c, NULL, &n, &f);
	assert_int_equal(n.ndevs, 1);
	assert_string_equal(n.devs[0].name, "mlx5_0");
	assert_non_null(strstr(must(&f, "rdma.port", HB_FAB_OK)->msg,
			       "mlx5_0 port 1: InfiniBand, ACTIVE, 200 Gb/s (4x)"));
	must(&f, "fabric.rdma", HB_FAB_OK);
	assert_null(hb_fab_find(&f, "fabric.tcp_fallback"));
	must(&f, "gpudirect.ok", HB_FAB_OK);
	assert_string_equal(must(&f, "nccl.found", HB_FAB_OK)->msg,
			    "NCCL 2.19.3");
	must(&f, "gpu.found", HB_FAB_OK);
	assert_int_equal(hb_fab_worst(&f), HB_FAB_OK);

	/* The inventory as the doctor prints it. */
	j = hb_fab_node_json(&n);
	assert_non_null(j);
	port = hb_doc_get(cJSON_GetArrayItem(hb_doc_get(j, "rdma_devices"), 0),
			  "ports");
	port = cJSON_GetArrayItem(port, 0);
	assert_string_equal(hb_doc_str(port, "link_layer"), "InfiniBand");
	assert_string_equal(hb_doc_str(port, "state"), "ACTIVE");
	assert_string_equal(
		hb_doc_str(cJSON_GetArrayItem(hb_doc_get(port, "gids"), 0),
			   "type"),
		"IB");
	assert_string_equal(hb_doc_str(hb_doc_get(j, "nccl"), "version"),
			    "2.19.3");
	assert_string_equal(
		hb_doc_str(cJSON_GetArrayItem(hb_doc_get(j, "gpus"), 0),
			   "device_id"),
		"0x20b2");
	assert_true(cJSON_IsTrue(hb_doc_get(j, "mpi.openmpi.cuda")));
	cJSON_Delete(j);
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);
}

static void test_roce_host(void **state)
{
	struct hb_fab_node c, n;
	struct hb_fab_findings f;

	(void)state;
	ib_host(&c);
	c.devs = &roce_dev;
	c.peermem = false; /* nvidia_peermem not loaded */
	run(&c, NULL, &n, &f);
	assert_non_null(strstr(must(&f, "rdma.port", HB_FAB_OK)->msg,
			       "Ethernet (RoCE), ACTIVE, 100 Gb/s (1x), 3 GIDs"));
	assert_null(hb_fab_find(&f, "rdma.roce_v1_only"));
	must(&f, "fabric.rdma", HB_FAB_OK);
	assert_non_null(strstr(must(&f, "gpudirect.missing", HB_FAB_WARN)->msg,
			       "nvidia_peermem"));
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);

	/* RoCE v1 only: usable, but not across routers. */
	roce_dev.ports[0].ngids = 1;
	run(&c, NULL, &n, &f);
	must(&f, "rdma.roce_v1_only", HB_FAB_WARN);
	must(&f, "fabric.rdma", HB_FAB_OK);
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);

	/* No GID at all (no IP on the interface): TCP. */
	roce_dev.ports[0].ngids = 0;
	run(&c, NULL, &n, &f);
	must(&f, "rdma.roce_no_gid", HB_FAB_WARN);
	assert_non_null(strstr(must(&f, "fabric.tcp_fallback", HB_FAB_WARN)->msg,
			       "no RDMA port is ACTIVE with a usable GID"));
	assert_non_null(strstr(hb_fab_find(&f, "gpudirect.missing")->msg,
			       "a usable RDMA port"));
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);
}

static void test_no_rdma(void **state)
{
	struct hb_fab_node c = { 0 }, n;
	struct hb_fab_findings f;

	(void)state;
	snprintf(c.rdma_note, sizeof(c.rdma_note),
		 "libibverbs lists no RDMA device");
	snprintf(c.nccl_note, sizeof(c.nccl_note),
		 "libnccl.so.2 is not present");
	good_mpi(&c);
	run(&c, NULL, &n, &f);
	assert_non_null(strstr(must(&f, "rdma.no_device", HB_FAB_WARN)->msg,
			       "libibverbs lists no RDMA device"));
	assert_string_equal(must(&f, "fabric.tcp_fallback", HB_FAB_WARN)->msg,
			    "a multi-node job started here would run over "
			    "TCP: no RDMA device");
	must(&f, "gpu.none", HB_FAB_OK);
	must(&f, "nccl.absent", HB_FAB_OK);
	assert_null(hb_fab_find(&f, "gpudirect.missing"));
	/* A node without RDMA is a fine TCP node: a warning, never a
	 * failure. */
	assert_int_equal(hb_fab_worst(&f), HB_FAB_WARN);
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);
}

static void test_port_down(void **state)
{
	struct hb_fab_node c, n;
	struct hb_fab_findings f;

	(void)state;
	ib_host(&c);
	ib_dev.ports[0].state = HB_FAB_PORT_DOWN;
	run(&c, NULL, &n, &f);
	assert_non_null(strstr(must(&f, "rdma.port_down", HB_FAB_WARN)->msg,
			       "mlx5_0 port 1 (InfiniBand) is DOWN"));
	assert_non_null(strstr(must(&f, "fabric.tcp_fallback", HB_FAB_WARN)->msg,
			       "no RDMA port is ACTIVE"));
	must(&f, "gpudirect.missing", HB_FAB_WARN);
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);
}

static void test_gpus_nccl(void **state)
{
	struct hb_fab_node c, n;
	struct hb_fab_findings f;

	(void)state;
	/* GPUs without NCCL and an Open MPI that is not CUDA-aware. */
	ib_host(&c);
	c.nccl_version = 0;
	snprintf(c.nccl_note, sizeof(c.nccl_note),
		 "libnccl.so.2 is not present");
	c.mpi.ompi_cuda = 0;
	run(&c, NULL, &n, &f);
	assert_non_null(strstr(must(&f, "nccl.missing", HB_FAB_WARN)->msg,
			       "libnccl.so.2 is not present"));
	must(&f, "mpi.not_cuda_aware", HB_FAB_WARN);
	assert_null(hb_fab_find(&f, "nccl.found"));
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);

	/* The same GPUs with an older NCCL: its version in the old form. */
	c.nccl_version = 2804;
	c.nvidia_driver[0] = '\0';
	run(&c, NULL, &n, &f);
	assert_string_equal(must(&f, "nccl.found", HB_FAB_OK)->msg,
			    "NCCL 2.8.4");
	must(&f, "gpu.no_driver", HB_FAB_WARN);
	assert_non_null(strstr(hb_fab_find(&f, "gpudirect.missing")->msg,
			       "the NVIDIA driver"));
	assert_null(hb_fab_find(&f, "nccl.missing"));
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);
}

static void test_env_turns_rdma_off(void **state)
{
	static const struct env_pair off[] = {
		{ "NCCL_IB_DISABLE", "1" },   { "NCCL_P2P_DISABLE", "1" },
		{ "UCX_TLS", "tcp,self,sm" }, { "OMPI_MCA_btl", "tcp,self" },
		{ "OMPI_MCA_pml", "ob1" },    { NULL, NULL }
	};
	static const struct env_pair on[] = {
		{ "UCX_TLS", "rc_x,sm,self" },
		{ "OMPI_MCA_btl", "^openib" },
		{ "NCCL_IB_DISABLE", "0" },
		{ NULL, NULL }
	};
	struct hb_fab_node c, n;
	struct hb_fab_findings f;
	const char *msg;

	(void)state;
	ib_host(&c);
	run(&c, off, &n, &f);
	must(&f, "env.nccl_ib_disabled", HB_FAB_WARN);
	must(&f, "env.nccl_p2p_disabled", HB_FAB_WARN);
	must(&f, "env.ucx_tls_tcp", HB_FAB_WARN);
	must(&f, "env.ompi_btl_tcp", HB_FAB_WARN);
	must(&f, "env.ompi_pml_ob1", HB_FAB_WARN);
	msg = must(&f, "fabric.tcp_fallback", HB_FAB_WARN)->msg;
	assert_non_null(strstr(msg, "NCCL_IB_DISABLE is set"));
	assert_non_null(strstr(msg, "UCX_TLS names no RDMA transport"));
	/* P2P off keeps RDMA between nodes: not a reason for TCP. */
	assert_null(strstr(msg, "P2P"));
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);

	run(&c, on, &n, &f);
	assert_null(hb_fab_find(&f, "env.ucx_tls_tcp"));
	assert_null(hb_fab_find(&f, "env.ompi_btl_tcp"));
	assert_null(hb_fab_find(&f, "env.nccl_ib_disabled"));
	must(&f, "fabric.rdma", HB_FAB_OK);
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);
}

static void test_mpi_findings(void **state)
{
	struct hb_fab_node c, n;
	struct hb_fab_findings f;

	(void)state;
	ib_host(&c);
	c.mpi.ompi_ucx = false;
	run(&c, NULL, &n, &f);
	must(&f, "mpi.no_ucx", HB_FAB_WARN);
	assert_non_null(strstr(must(&f, "fabric.tcp_fallback", HB_FAB_WARN)->msg,
			       "Open MPI built without UCX"));
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);

	memset(&c.mpi, 0, sizeof(c.mpi));
	run(&c, NULL, &n, &f);
	must(&f, "mpi.none", HB_FAB_WARN);
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);

	snprintf(c.mpi.other, sizeof(c.mpi.other), "MPICH Version:\t4.0.2");
	run(&c, NULL, &n, &f);
	must(&f, "mpi.other", HB_FAB_OK);
	assert_null(hb_fab_find(&f, "mpi.none"));
	hb_fab_findings_free(&f);
	hb_fab_node_free(&n);
}

/* --- the job's MPI and fabric --------------------------------------------- */

static void parse(const char *text, struct hb_jobspec *spec)
{
	struct hb_err err = { 0 };

	hb_jobspec_init(spec, "job.sh");
	if (hb_parse_any(text, strlen(text), "job.sh", NULL, spec, &err))
		fail_msg("%s", err.msg);
}

static void test_job(void **state)
{
	struct hb_fab_node c, n;
	struct hb_fab_findings f = { 0 };
	struct hb_jobspec spec;
	struct hb_fab_provider p;
	struct hb_err err = { 0 };

	(void)state;
	memset(&c, 0, sizeof(c));
	good_mpi(&c); /* Open MPI, no RDMA */
	hb_fab_fake_provider(&c, &p);
	memset(&n, 0, sizeof(n));
	assert_int_equal(hb_fab_inventory(&p, &n, &err), 0);

	/* Intel MPI expected, Open MPI here: the job cannot run here. */
	parse("#!/bin/bash\n#SBATCH -N 2\nmodule load intel-mpi/2021.9\n"
	      "export NCCL_IB_DISABLE=1\nmpirun ./a.out\n",
	      &spec);
	spec.fabric = HB_FABRIC_RDMA;
	spec.fabric_why = "--hpcbridge-fabric=rdma";
	hb_fab_check_job(&spec, "job.sh", &n, &f);
	assert_non_null(strstr(must(&f, "job.mpi.mismatch", HB_FAB_FAIL)->msg,
			       "job.sh expects Intel, but this node has Open "
			       "MPI 4.1.5"));
	assert_non_null(strstr(must(&f, "job.fabric.no_rdma", HB_FAB_FAIL)->msg,
			       "--hpcbridge-fabric=rdma"));
	must(&f, "job.env.nccl_ib_disabled", HB_FAB_WARN);
	must(&f, "job.fabric.contradiction", HB_FAB_FAIL);
	hb_fab_findings_free(&f);
	hb_jobspec_free(&spec);

	/* Open MPI in an image that says it holds MPICH. */
	parse("#!/bin/bash\n#SBATCH --container=ghcr.io/x/mpich:4.1\n"
	      "module load openmpi/4.1\nmpirun ./a.out\n",
	      &spec);
	hb_fab_check_job(&spec, "job.sh", &n, &f);
	must(&f, "job.mpi.match", HB_FAB_OK);
	assert_non_null(strstr(must(&f, "job.image.mismatch", HB_FAB_FAIL)->msg,
			       "expects OpenMPI, but the image "
			       "ghcr.io/x/mpich:4.1 holds MPICH"));
	hb_fab_findings_free(&f);
	hb_jobspec_free(&spec);

	/* Intel MPI in an MVAPICH2 image: MPICH's ABI, a warning; the
	 * node's Open MPI does not matter in an image. */
	parse("#!/bin/bash\n#SBATCH --container=reg/mvapich2-2.3:latest\n"
	      "module load intel-mpi\nmpirun ./a.out\n",
	      &spec);
	hb_fab_check_job(&spec, "job.sh", &n, &f);
	must(&f, "job.image.abi", HB_FAB_WARN);
	must(&f, "job.mpi.mismatch", HB_FAB_WARN);
	assert_int_equal(hb_fab_worst(&f), HB_FAB_WARN);
	hb_fab_findings_free(&f);
	hb_jobspec_free(&spec);
	hb_fab_node_free(&n);
}

static void test_mpi_family(void **state)
{
	(void)state;
	assert_string_equal(hb_fab_mpi_family("nvcr.io/x/openmpi:4.1"),
			    "OpenMPI");
	assert_string_equal(hb_fab_mpi_family("mpioperator/openmpi"),
			    "OpenMPI");
	assert_string_equal(hb_fab_mpi_family("MVAPICH2 2.3.7"), "MVAPICH2");
	assert_string_equal(hb_fab_mpi_family("mpich:4"), "MPICH");
	assert_string_equal(hb_fab_mpi_family("Intel(R) MPI Library"),
			    "Intel");
	assert_string_equal(hb_fab_mpi_family("OpenMPI"), "OpenMPI");
	assert_null(hb_fab_mpi_family("ubuntu:22.04"));
	assert_null(hb_fab_mpi_family(NULL));
}

/* --- pieces of the real provider ------------------------------------------ */

static void test_nccl_decode(void **state)
{
	char v[32];
	int a, b, c;

	(void)state;
	hb_fab_nccl_version_text(22703, v, sizeof(v));
	assert_string_equal(v, "2.27.3");
	hb_fab_nccl_version_text(20906, v, sizeof(v));
	assert_string_equal(v, "2.9.6");
	hb_fab_nccl_version_text(2804, v, sizeof(v));
	assert_string_equal(v, "2.8.4");
	hb_fab_nccl_version_text(0, v, sizeof(v));
	assert_string_equal(v, "not present");
	assert_int_equal(hb_fab_nccl_decode(-1, &a, &b, &c), HB_EINVAL);
}

static void test_ompi_info(void **state)
{
	static const char text[] =
		"package:Debian OpenMPI\n"
		"ompi:version:full:4.1.4\n"
		"mca:btl:openib:version:\"mca:2.1.0\"\n"
		"mca:btl:tcp:version:\"mca:2.1.0\"\n"
		"mca:pml:ob1:version:\"mca:2.1.0\"\n"
		"mca:pml:ucx:version:\"mca:2.1.0\"\n";
	static const char all[] =
		"mca:opal:base:param:opal_built_with_cuda_support:value:false\n"
		"mca:mpi:base:param:mpi_built_with_cuda_support:value:true\n";
	struct hb_fab_mpi m;

	(void)state;
	hb_fab_parse_ompi_info(text, all, &m);
	assert_string_equal(m.ompi_version, "4.1.4");
	assert_true(m.ompi_ucx);
	assert_true(m.ompi_openib);
	assert_int_equal(m.ompi_cuda, 1);
	/* Without --all the CUDA support is unknown; without pml/ucx, no
	 * UCX. */
	hb_fab_parse_ompi_info("ompi:version:full:5.0.3\n"
			       "mca:pml:ob1:version:x\n",
			       NULL, &m);
	assert_string_equal(m.ompi_version, "5.0.3");
	assert_false(m.ompi_ucx);
	assert_false(m.ompi_openib);
	assert_int_equal(m.ompi_cuda, -1);
	hb_fab_parse_ompi_info("not ompi_info\n", NULL, &m);
	assert_string_equal(m.ompi_version, "");
}

static void put(const char *root, const char *rel, const char *text)
{
	char path[1024], dir[1024], *slash;
	FILE *f;

	mkdir(root, 0755);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + strlen(root) + 1; (slash = strchr(p, '/'));
	     p = slash + 1) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	if (!text) {
		mkdir(path, 0755);
		return;
	}
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static void test_scan_gpus(void **state)
{
	char root[] = "/tmp/hb-fabric-XXXXXX", sys[64], proc[64], cmd[128];
	struct hb_fab_node n = { 0 };
	struct hb_err err = { 0 };

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(sys, sizeof(sys), "%s/sys", root);
	snprintf(proc, sizeof(proc), "%s/proc", root);
	put(sys, "bus/pci/devices/0000:3b:00.0/vendor", "0x10de\n");
	put(sys, "bus/pci/devices/0000:3b:00.0/device", "0x20b2\n");
	put(sys, "bus/pci/devices/0000:3b:00.0/class", "0x030200\n");
	/* Intel's VGA: a display controller, not a GPU we count. */
	put(sys, "bus/pci/devices/0000:00:02.0/vendor", "0x8086\n");
	put(sys, "bus/pci/devices/0000:00:02.0/device", "0x0d57\n");
	put(sys, "bus/pci/devices/0000:00:02.0/class", "0x030000\n");
	put(sys, "bus/pci/devices/0000:5e:00.0/vendor", "0x1002\n");
	put(sys, "bus/pci/devices/0000:5e:00.0/device", "0x740c\n");
	put(sys, "bus/pci/devices/0000:5e:00.0/class", "0x038000\n");
	/* NVIDIA's audio function on the same card: class 0x0403. */
	put(sys, "bus/pci/devices/0000:3b:00.1/vendor", "0x10de\n");
	put(sys, "bus/pci/devices/0000:3b:00.1/device", "0x10f0\n");
	put(sys, "bus/pci/devices/0000:3b:00.1/class", "0x040300\n");
	put(sys, "module/nvidia_peermem", NULL);
	put(proc, "driver/nvidia/version",
	    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n"
	    "GCC version: gcc version 12.2.0\n");
	assert_int_equal(hb_fab_scan_gpus(sys, proc, &n, &err), 0);
	assert_int_equal(n.ngpus, 2);
	for (size_t i = 0; i < n.ngpus; i++)
		if (n.gpus[i].vendor == 0x10de) {
			assert_string_equal(n.gpus[i].pci, "0000:3b:00.0");
			assert_int_equal(n.gpus[i].device, 0x20b2);
		} else {
			assert_int_equal(n.gpus[i].vendor, 0x1002);
			assert_int_equal(n.gpus[i].pci_class, 0x038000);
		}
	assert_true(n.peermem);
	assert_string_equal(n.nvidia_driver, "NVRM version: NVIDIA UNIX "
					     "x86_64 Kernel Module  550.54.15");
	hb_fab_node_free(&n);
	/* No PCI bus at all: an error that names the path. */
	snprintf(sys, sizeof(sys), "%s/none", root);
	assert_int_equal(hb_fab_scan_gpus(sys, proc, &n, &err), HB_EIO);
	assert_non_null(strstr(err.msg, "bus/pci/devices"));
	hb_fab_node_free(&n);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

/* The real provider's RDMA part lists what the kernel has: as many
 * devices as /sys/class/infiniband holds (none on these machines). */
static void test_real_rdma(void **state)
{
	struct hb_fab_provider p;
	struct hb_fab_node n = { 0 };
	struct hb_err err = { 0 };
	DIR *d = opendir("/sys/class/infiniband");
	size_t kernel = 0;
	struct dirent *e;

	(void)state;
	while (d && (e = readdir(d)))
		kernel += e->d_name[0] != '.';
	if (d)
		closedir(d);
	hb_fab_real_provider(NULL, &p);
	assert_string_equal(p.name, "real");
	assert_int_equal(p.rdma(p.ctx, &n, &err), 0);
	assert_int_equal(n.ndevs, kernel);
	if (!kernel)
		assert_string_equal(n.rdma_note,
				    "libibverbs lists no RDMA device");
	hb_fab_node_free(&n);
}

static void test_run(void **state)
{
	const char *const echo[] = { "printf", "a\\nb", NULL };
	const char *const none[] = { "hb-no-such-program-here", NULL };
	const char *const slow[] = { "sleep", "10", NULL };
	const char *const fails[] = { "false", NULL };
	struct hb_buf b;
	struct hb_err err = { 0 };
	int st;

	(void)state;
	hb_buf_init(&b, 0);
	assert_int_equal(hb_fab_run(echo, 5000, 1024, &b, &st, &err), 0);
	assert_int_equal(st, 0);
	assert_string_equal(b.data, "a\nb");
	hb_buf_reset(&b);
	/* Output past max is read and dropped. */
	assert_int_equal(hb_fab_run(echo, 5000, 1, &b, &st, &err), 0);
	assert_int_equal(b.len, 1);
	hb_buf_reset(&b);
	assert_int_equal(hb_fab_run(none, 5000, 1024, &b, &st, &err),
			 HB_ENOENT);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_fab_run(slow, 200, 1024, &b, &st, &err),
			 HB_ETIMEDOUT);
	assert_non_null(strstr(err.msg, "timed out"));
	assert_int_equal(hb_fab_run(fails, 5000, 1024, &b, &st, &err), 0);
	assert_int_equal(st, 1);
	hb_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ib_host),
		cmocka_unit_test(test_roce_host),
		cmocka_unit_test(test_no_rdma),
		cmocka_unit_test(test_port_down),
		cmocka_unit_test(test_gpus_nccl),
		cmocka_unit_test(test_env_turns_rdma_off),
		cmocka_unit_test(test_mpi_findings),
		cmocka_unit_test(test_job),
		cmocka_unit_test(test_mpi_family),
		cmocka_unit_test(test_nccl_decode),
		cmocka_unit_test(test_ompi_info),
		cmocka_unit_test(test_scan_gpus),
		cmocka_unit_test(test_real_rdma),
		cmocka_unit_test(test_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

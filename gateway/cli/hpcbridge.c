/*
 * hpcbridge.c - the hpcbridge command: dispatch to subcommands.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "translate", hb_cmd_translate,
	  "translate sbatch/PBS scripts and MPIJob/TrainJob manifests" },
	{ "submit", hb_cmd_submit, "submit a script through hpcbridged" },
	{ "qsub", hb_cmd_qsub, "submit a PBS job as qsub does (also as qsub)" },
	{ "jobs", hb_cmd_jobs, "list jobs" },
	{ "status", hb_cmd_status, "show a job, its placement and history" },
	{ "cancel", hb_cmd_cancel, "cancel a job" },
	{ "shadow", hb_cmd_shadow, "run as a burst job's Slurm proxy" },
	{ "explain", hb_cmd_explain, "say where a job would run, and why" },
	{ "policy", hb_cmd_policy, "check a placement policy" },
	{ "report", hb_cmd_report, "chargeback report from the cost ledger" },
	{ "ckpt", hb_cmd_ckpt,
	  "push, pull, verify, list and retain checkpoints in S3" },
	{ "qstat", hb_cmd_qstat, "your jobs in PBS's qstat formats" },
	{ "qdel", hb_cmd_qdel, "cancel jobs by their PBS ids" },
	{ "doctor", hb_cmd_doctor,
	  "check this node's fabric (RDMA, GPUs, NCCL, MPI) and both sides" },
	{ "sandbox", hb_cmd_sandbox,
	  "a local Slurm with hpcbridge, for pilots and tests" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: hpcbridge [--help] [--version] COMMAND [ARGS...]\n"
		   "\n"
		   "hpcbridge runs unchanged Slurm and PBS jobs on Slurm or on "
		   "Kubernetes.\n"
		   "\n"
		   "commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-12s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f, "\nRun 'hpcbridge COMMAND --help' for a command's "
		   "options.\n");
}

int main(int argc, char **argv)
{
	const char *base = argv[0] ? strrchr(argv[0], '/') : NULL;

	/* installed as qsub, qstat or qdel (a link): that command */
	base = base ? base + 1 : argv[0] ? argv[0] : "";
	if (!strcmp(base, "qsub"))
		return hb_cmd_qsub(argc, argv);
	if (!strcmp(base, "qstat"))
		return hb_cmd_qstat(argc, argv);
	if (!strcmp(base, "qdel"))
		return hb_cmd_qdel(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return HB_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return HB_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("hpcbridge %s\n", HB_VERSION);
		return HB_EXIT_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "hpcbridge: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return HB_EXIT_USAGE;
}

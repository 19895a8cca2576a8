/*
 * cli.h - the hpcbridge command's subcommands and their shared pieces.
 */
#ifndef HPCBRIDGE_CLI_H
#define HPCBRIDGE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

/* Exit codes shared by every subcommand. */
enum {
	HB_EXIT_OK = 0,
	HB_EXIT_INPUT = 1, /* bad input: the message names its location */
	HB_EXIT_USAGE = 2, /* bad command line */
	HB_EXIT_REMOTE = 3 /* the daemon refused, or could not be reached */
};

int hb_cmd_translate(int argc, char **argv);
int hb_cmd_submit(int argc, char **argv);
int hb_cmd_jobs(int argc, char **argv);
int hb_cmd_status(int argc, char **argv);
int hb_cmd_cancel(int argc, char **argv);
int hb_cmd_shadow(int argc, char **argv);
int hb_cmd_sandbox(int argc, char **argv);
int hb_cmd_explain(int argc, char **argv);
int hb_cmd_policy(int argc, char **argv);
int hb_cmd_doctor(int argc, char **argv);
int hb_cmd_report(int argc, char **argv);
int hb_cmd_ckpt(int argc, char **argv);
/* qstat and qdel in PBS's formats (cmd_pbs_stat.c); also run when the
 * program is called qstat or qdel. */
int hb_cmd_qstat(int argc, char **argv);
int hb_cmd_qdel(int argc, char **argv);
/* hpcbridge report --reconcile (cmd_reconcile.c): the ledger's Slurm side
 * in the store at state against slurmdbd, for periods ending in
 * [from_ms, to_ms); fmt 0 table, 1 csv, 2 json.  Returns 0 when nothing
 * differs, 1 when something does, 2 on error (printed). */
int hb_cli_reconcile(const char *state, int64_t from_ms, int64_t to_ms,
		     int fmt);

/* Read a whole file ("-" is standard input) of at most max bytes into b,
 * which this initialises; the caller frees it with hb_buf_free() whatever
 * the result. */
int hb_cli_read_file(const char *path, size_t max, struct hb_buf *b,
		     struct hb_err *err);

/* Load the configuration file at path (at most 1 MiB; NULL: the built-in
 * defaults) into cfg, which the caller zeroes first and frees with
 * hb_config_free() whatever the result.  Errors name the file and line. */
struct hb_config;
struct cJSON;
int hb_cli_load_config(const char *path, struct hb_config *cfg,
		       struct hb_err *err);

/* The configuration file the CLI reads: config, else $HPCBRIDGE_CONFIG,
 * else /etc/hpcbridge/hpcbridge.yaml if it can be read; NULL: the
 * built-in defaults. */
const char *hb_cli_config_path(const char *config);

/* The server name PBS job ids end with ("123.NAME"): cfg's
 * pbs.server_name, else (or with cfg NULL) this host's short name. */
void hb_cli_pbs_server(const struct hb_config *cfg, char *buf, size_t n);

/* The uid of daemon.user in the configuration (config, else
 * $HPCBRIDGE_CONFIG, else the system file if it can be read): the server
 * check trusts a socket served by it besides root.  0 (root) without a
 * configuration; an error names the file. */
int hb_cli_daemon_uid(const char *config, uid_t *uid, struct hb_err *err);

/* A daemon request {"op": op, "id": id}; NULL when out of memory.  Caller
 * frees with cJSON_Delete(). */
struct cJSON *hb_cli_id_request(const char *op, const char *id);

/* Send req (taken) to the daemon: its socket from socket, else
 * $HPCBRIDGE_SOCKET, else the configuration (config, $HPCBRIDGE_CONFIG or
 * the system file).  0 with *reply set when the reply says ok; otherwise
 * the error is printed, prefixed "hpcbridge CMD: ", and an exit code is
 * returned. */
int hb_cli_call(const char *cmd, const char *socket, const char *config,
		struct cJSON *req, struct cJSON **reply);

/* The daemon's "submit" request for script (len bytes, NUL-terminated)
 * named name: refused, with the line of the first byte that is not UTF-8,
 * unless the script is UTF-8; with the current directory and the
 * environment (variables that are not UTF-8 left out, with a warning).
 * NULL on error (printed, "hpcbridge CMD: ").  Caller frees with
 * cJSON_Delete(). */
struct cJSON *hb_cli_submit_request(const char *cmd, const char *name,
				    const struct hb_buf *script);

/* hpcbridge qsub (cmd_qsub.c), also run when invoked as "qsub". */
int hb_cmd_qsub(int argc, char **argv);

#endif

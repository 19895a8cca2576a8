/*
 * slurmc_submit.c - submitting a batch job and asking when one would
 * start (will_run): the request checked, Slurm's job description filled
 * from it, and the submission as another user by a child that has become
 * that user.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gateway/slurm/slurmc_int.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/log.h"
#include "hpcbridge/slurmc.h"
#include "hpcbridge/user.h"

/*
 * Exported by libslurm 22.05 but not declared in its public headers
 * (slurm.h names it as the way to free slurm_job_will_run2()'s answer;
 * it lives in src/common/slurm_protocol_defs.c).
 */
extern void slurm_free_will_run_response_msg(will_run_response_msg_t *msg);

/* Most environment entries a request may carry. */
#define ENV_MAX 16384
/* The environment of a request that brings none. */
#define DEFAULT_PATH "PATH=/usr/local/bin:/usr/bin:/bin"
/* The most a submission as another user may take, the child's whole life
 * (libslurm's own timeouts, MessageTimeout 10 s by default, end it
 * sooner). */
#define AS_USER_TIMEOUT_MS 60000
/* (a variable: the unit test shortens it) */
static int as_user_timeout_ms = AS_USER_TIMEOUT_MS;
/* How often the parent looks whether that child was stopped. */
#define AS_USER_TICK_MS 50

/* ------------------------------------------------------- submission */

int hb_slurmc_gres_to_tres(const char *gres, struct hb_buf *out)
{
	size_t old = out->len;
	const char *p = gres, *end;
	int rc = 0;

	if (!gres || !*gres)
		return HB_EINVAL;
	for (;;) {
		size_t n;

		end = strchr(p, ',');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n == 0) {
			rc = HB_EINVAL;
			break;
		}
		if (p != gres && (rc = hb_buf_putc(out, ',')))
			break;
		if (n >= 5 &&
		    (!strncmp(p, "gres:", 5) || !strncmp(p, "gres/", 5))) {
			p += 5;
			n -= 5;
			if (n == 0 || *p == ',') {
				rc = HB_EINVAL; /* "gres:" alone */
				break;
			}
		}
		if ((rc = hb_buf_puts(out, "gres:")) ||
		    (rc = hb_buf_append(out, p, n)))
			break;
		if (!end)
			break;
		p = end + 1;
	}
	if (rc) {
		out->len = old;
		if (out->data)
			out->data[old] = '\0';
	}
	return rc;
}

/* The gres-syntax members, by name. */
static const struct {
	const char *name;
	size_t off;
} gres_members[] = {
	{ "gres", offsetof(struct hb_slurmc_submit, gres) },
	{ "gres_per_job", offsetof(struct hb_slurmc_submit, gres_per_job) },
	{ "gres_per_task", offsetof(struct hb_slurmc_submit, gres_per_task) },
};

#define GRES_OF(req, i)                                                   \
	(*(const char *const *)((const char *)(req) + gres_members[i].off))

/* The members added for jobspecs: nodes, times, GPUs, signal, mail. */
static int check_more(const struct hb_slurmc_submit *req, struct hb_err *err)
{
	uint16_t a, b, f;

	if (req->nodes_max >= NO_VAL ||
	    (req->nodes_max && req->nodes_max < req->nodes))
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "nodes_max: %u is out of range (nodes %u)",
				  req->nodes_max, req->nodes);
	if (req->time_min >= NO_VAL && req->time_min != HB_SLURMC_INFINITE)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "time_min: %u minutes is out of range",
				  req->time_min);
	if (req->begin_time > INT64_MAX || req->deadline > INT64_MAX)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "begin_time or deadline out of range");
	if (req->requeue > HB_SLURMC_REQUEUE_YES)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "requeue: %u is not HB_SLURMC_REQUEUE_*",
				  req->requeue);
	if (req->signal && !hb_slurmc_parse_signal(req->signal, &a, &b, &f))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "signal: '%s' is not [{R|B}:]SIG[@seconds]",
				  req->signal);
	if (req->mail_type && !hb_slurmc_parse_mail_type(req->mail_type, &a))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "mail_type: '%s' has an unknown type",
				  req->mail_type);
	for (size_t i = 0; i < sizeof(gres_members) / sizeof(gres_members[0]);
	     i++) {
		const char *g = GRES_OF(req, i);
		struct hb_buf t;
		int rc;

		if (!g)
			continue;
		hb_buf_init(&t, 0);
		rc = hb_slurmc_gres_to_tres(g, &t);
		hb_buf_free(&t);
		if (rc)
			return hb_err_set(err, rc, NULL, 0,
					  "%s: '%s' is not a list of "
					  "name[:type][:count]",
					  gres_members[i].name, g);
	}
	return 0;
}

int hb_slurmc_submit_check(const struct hb_slurmc_submit *req,
			   struct hb_err *err)
{
	size_t i;

	if (!req)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "no request");
	if (!req->script || !*req->script)
		return hb_err_set(err, HB_EINVAL, NULL, 0, "script: missing");
	if (strncmp(req->script, "#!", 2))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "script: must start with \"#!\" (an "
				  "interpreter line)");
	if (req->as_user && (req->uid >= NO_VAL || req->gid >= NO_VAL))
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "uid/gid: %u/%u is not a usable id", req->uid,
				  req->gid);
	if (req->env) {
		for (i = 0; req->env[i]; i++) {
			const char *eq = strchr(req->env[i], '=');

			if (i >= ENV_MAX)
				return hb_err_set(err, HB_ETOOBIG, NULL, 0,
						  "env: more than %d entries",
						  ENV_MAX);
			if (!eq || eq == req->env[i])
				return hb_err_set(err, HB_EINVAL, NULL, 0,
						  "env[%zu]: not NAME=value",
						  i);
		}
	}
	if (req->time_limit >= NO_VAL && req->time_limit != HB_SLURMC_INFINITE)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "time_limit: %u minutes is out of range",
				  req->time_limit);
	if (req->nodes >= NO_VAL)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "nodes: %u is out of range", req->nodes);
	if (req->ntasks >= NO_VAL)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "ntasks: %u is out of range", req->ntasks);
	if (req->ntasks_per_node >= NO_VAL16)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "ntasks_per_node: %u is out of range",
				  req->ntasks_per_node);
	if (req->cpus_per_task >= NO_VAL16)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "cpus_per_task: %u is out of range",
				  req->cpus_per_task);
	if ((uint64_t)(req->ntasks
			       ? req->ntasks
			       : req->nodes * (uint64_t)req->ntasks_per_node) *
		    (req->cpus_per_task ? req->cpus_per_task : 1) >=
	    NO_VAL)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "ntasks x cpus_per_task: too many CPUs");
	if ((req->mem_per_node_mb || req->mem_whole_node) +
		    !!req->mem_per_cpu_mb + !!req->mem_per_gpu_mb >
	    1)
		return hb_err_set(err, HB_ECONFLICT, NULL, 0,
				  "mem_per_node_mb, mem_per_cpu_mb and "
				  "mem_per_gpu_mb: give one");
	if (req->mem_per_node_mb >= MEM_PER_CPU ||
	    req->mem_per_cpu_mb >= MEM_PER_CPU ||
	    req->mem_per_gpu_mb >= MEM_PER_CPU)
		return hb_err_set(err, HB_ERANGE, NULL, 0,
				  "memory: %llu MB is out of range",
				  (unsigned long long)(req->mem_per_node_mb |
						       req->mem_per_cpu_mb |
						       req->mem_per_gpu_mb));
	return check_more(req, err);
}

/* What a job_desc_msg_t borrows besides the request's own strings. */
struct desc_mem {
	char **env;
	struct hb_buf tres; /* tres_per_node, tres_per_job, tres_per_task and
			     * mem_per_tres, one after the other */
	char host[256];
	char cwd[PATH_MAX];
};

static void desc_mem_free(struct desc_mem *m)
{
	free(m->env);
	hb_buf_free(&m->tres);
}

/* The GPU and other gres requests, and memory per GPU, into m->tres:
 * each string starts at an offset recorded before the next is added (the
 * buffer may move), then the pointers are set. */
static int fill_tres(job_desc_msg_t *d, const struct hb_slurmc_submit *req,
		     struct desc_mem *m, struct hb_err *err)
{
	size_t at[4];
	char **to[4] = { &d->tres_per_node, &d->tres_per_job,
			 &d->tres_per_task, &d->mem_per_tres };
	bool set[4] = { false };
	int rc = 0;

	for (size_t i = 0; i < 4; i++) {
		const char *g = i < 3 ? GRES_OF(req, i) : NULL;

		at[i] = m->tres.len;
		if (i == 3 && req->mem_per_gpu_mb) {
			rc = hb_buf_printf(&m->tres, "gres:gpu:%llu",
					   (unsigned long long)
						   req->mem_per_gpu_mb);
		} else if (g) {
			rc = hb_slurmc_gres_to_tres(g, &m->tres);
		} else {
			continue;
		}
		if (rc || (rc = hb_buf_putc(&m->tres, '\0')))
			return hb_err_set(err, rc, NULL, 0, "%s: '%s'",
					  i < 3 ? gres_members[i].name
						: "mem_per_gpu_mb",
					  g ? g : "");
		set[i] = true;
	}
	for (size_t i = 0; i < 4; i++)
		if (set[i])
			*to[i] = m->tres.data + at[i];
	return 0;
}

/* The members added for jobspecs (checked by check_more()). */
static void fill_more(job_desc_msg_t *d, const struct hb_slurmc_submit *req)
{
	uint16_t sig, secs, flags;

	if (req->nodes_max)
		d->max_nodes = req->nodes_max;
	d->qos = (char *)req->qos;
	d->features = (char *)req->constraint;
	d->licenses = (char *)req->licenses;
	d->req_nodes = (char *)req->nodelist;
	d->exc_nodes = (char *)req->exclude;
	if (req->exclusive)
		d->shared = JOB_SHARED_NONE;
	if (req->time_min == HB_SLURMC_INFINITE)
		d->time_min = INFINITE;
	else if (req->time_min)
		d->time_min = req->time_min;
	if (req->begin_time)
		d->begin_time = (time_t)req->begin_time;
	if (req->deadline)
		d->deadline = (time_t)req->deadline;
	if (req->signal && hb_slurmc_parse_signal(req->signal, &sig, &secs,
						  &flags)) {
		d->warn_signal = sig;
		d->warn_time = secs;
		d->warn_flags = flags;
	}
	d->std_in = (char *)req->input;
	d->array_inx = (char *)req->array;
	d->dependency = (char *)req->dependency;
	if (req->mail_type)
		(void)hb_slurmc_parse_mail_type(req->mail_type, &d->mail_type);
	d->mail_user = (char *)req->mail_user;
	if (req->requeue)
		d->requeue = req->requeue == HB_SLURMC_REQUEUE_YES;
	d->container = (char *)req->container;
}

/*
 * Fill d (initialised by slurm_init_job_desc_msg) from req.  d borrows
 * req's strings and m's memory; nothing in it is Slurm's to free.
 */
static int fill_desc(job_desc_msg_t *d, const struct hb_slurmc_submit *req,
		     struct desc_mem *m, struct hb_err *err)
{
	static const char *const default_env[] = { DEFAULT_PATH, NULL };
	const char *const *env = req->env ? req->env : default_env;
	size_t n = 0, i;
	int rc;

	hb_buf_init(&m->tres, 64 * 1024);
	while (env[n])
		n++;
	if (n == 0) {
		env = default_env;
		n = 1;
	}
	m->env = calloc(n + 1, sizeof(*m->env));
	if (!m->env)
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	for (i = 0; i < n; i++)
		m->env[i] = (char *)env[i];
	d->environment = m->env;
	d->env_size = (uint32_t)n;

	d->script = (char *)req->script;
	d->name = (char *)req->name;
	d->partition = (char *)req->partition;
	d->account = (char *)req->account;
	d->comment = (char *)req->comment;
	d->std_out = (char *)req->output;
	d->std_err = (char *)req->error;
	if (req->as_user) {
		d->user_id = req->uid;
		d->group_id = req->gid;
	} else {
		d->user_id = (uint32_t)getuid();
		d->group_id = (uint32_t)getgid();
	}
	if (req->work_dir) {
		d->work_dir = (char *)req->work_dir;
	} else {
		if (!getcwd(m->cwd, sizeof(m->cwd)))
			snprintf(m->cwd, sizeof(m->cwd), "/");
		d->work_dir = m->cwd;
	}
	/* The submitting host, which will_run requires (submit sets it
	 * itself when missing). */
	if (gethostname(m->host, sizeof(m->host)) == 0) {
		char *dot;

		m->host[sizeof(m->host) - 1] = '\0';
		if ((dot = strchr(m->host, '.')))
			*dot = '\0';
		if (m->host[0])
			d->alloc_node = m->host;
	}
	if (req->time_limit == HB_SLURMC_INFINITE)
		d->time_limit = INFINITE;
	else if (req->time_limit)
		d->time_limit = req->time_limit;
	if (req->nodes) {
		d->min_nodes = req->nodes;
		d->max_nodes = req->nodes;
	}
	if (req->ntasks)
		d->num_tasks = req->ntasks;
	else if (req->nodes && req->ntasks_per_node)
		d->num_tasks = req->nodes * req->ntasks_per_node;
	if (req->ntasks_per_node)
		d->ntasks_per_node = req->ntasks_per_node;
	if (req->cpus_per_task)
		d->cpus_per_task = req->cpus_per_task;
	/* As sbatch: the job needs a CPU per task, times cpus_per_task. */
	d->min_cpus =
		(d->num_tasks && d->num_tasks != NO_VAL ? d->num_tasks : 1) *
		(req->cpus_per_task ? req->cpus_per_task : 1);
	if (req->mem_per_node_mb || req->mem_whole_node)
		d->pn_min_memory = req->mem_per_node_mb;
	else if (req->mem_per_cpu_mb)
		d->pn_min_memory = req->mem_per_cpu_mb | MEM_PER_CPU;
	if ((rc = fill_tres(d, req, m, err)))
		return rc;
	if (req->hold)
		d->priority = 0;
	fill_more(d, req);
	return 0;
}

static int set_admin_comment(uint32_t job_id, const char *text,
			     struct hb_err *err)
{
	job_desc_msg_t d;

	slurm_init_job_desc_msg(&d);
	d.job_id = job_id;
	d.admin_comment = (char *)text;
	if (slurm_update_job(&d) != SLURM_SUCCESS)
		return fail_slurm(err, slurm_errno_of(SLURM_ERROR),
				  "slurm_update_job(admin_comment)");
	return 0;
}

/* What scontrol release does: the priority back to Slurm's choice. */
static int release_job(uint32_t job_id, struct hb_err *err)
{
	job_desc_msg_t d;

	slurm_init_job_desc_msg(&d);
	d.job_id = job_id;
	d.priority = INFINITE;
	if (slurm_update_job(&d) != SLURM_SUCCESS)
		return fail_slurm(err, slurm_errno_of(SLURM_ERROR),
				  "slurm_update_job(release)");
	return 0;
}

/* ------------------------------------------- submission as the user */

/*
 * A job submitted for another user is submitted by a process that has
 * become that user (uid, gid, supplementary groups), so that munge
 * authenticates the RPC as the user and slurmctld applies RootOnly,
 * AllowGroups, associations, limits and job_submit policies keyed on
 * submit_uid to the user, as for the user's own sbatch.
 *
 * The child is forked from a threaded process (the daemon's workers and
 * watch threads, the sanitizers' own).  Between fork() and execve() it
 * makes async-signal-safe calls only: a lock another thread held at the
 * fork (malloc's, libslurm's, the logger's) is never released in it.  It
 * sets up its descriptors, becomes the user and runs this same program
 * again (CHILD_EXE HB_SLURMC_CHILD_ARG), whose hb_slurmc_child_main()
 * reads the request as JSON on stdin, makes the libslurm call in a fresh
 * image and writes one struct as_user_reply on stdout.  The parent keeps
 * root for what only root may do afterwards (the admin comment), acting
 * by job id.
 */

/* The program the child runs: this one, even if its file was replaced
 * or removed since it started. */
#define CHILD_EXE "/proc/self/exe"
/* Its argv[0], as ps shows it. */
#define CHILD_NAME "hb-slurm-submit"
/* The largest request (JSON) the child takes. */
#define CHILD_REQ_MAX (32u * 1024 * 1024)

/* What the child's environment keeps of ours, besides SLURM_CONF. */
static const char *const child_env_keep[] = {
	"ASAN_OPTIONS",
	"LSAN_OPTIONS",
	"UBSAN_OPTIONS",
};

/* What the child tells the parent, in one write. */
struct as_user_reply {
	int32_t stage;	 /* AS_* below */
	int32_t err;	 /* AS_DROP, AS_EXEC: errno; AS_SLURM: Slurm's
			  * error, 0 */
	uint32_t job_id; /* AS_SLURM, err 0 */
	char text[256];	 /* AS_SLURM: slurm_strerror(); AS_REQUEST: why;
			  * AS_DROP: why, or "" (strerror(err)) */
};

enum {
	AS_DROP = 1,	/* the child could not become the user, or is not */
	AS_SLURM = 2,	/* Slurm answered */
	AS_EXEC = 3,	/* the program could not be started */
	AS_REQUEST = 4, /* the program refused the request */
};

/*
 * The request as it travels to the child: every member that fill_desc()
 * reads, but as_user (implied) and admin_comment (set by the parent).  A
 * member added to struct hb_slurmc_submit is added here too.  64-bit
 * counts travel as decimal strings (a JSON number is a double).
 */
enum req_type { RQ_STR, RQ_U16, RQ_U32, RQ_U64, RQ_BOOL, RQ_ENV };

static const struct req_field {
	const char *name;
	enum req_type type;
	bool required;
	size_t off;
} req_fields[] = {
#define RQ(m, t, r) { #m, t, r, offsetof(struct hb_slurmc_submit, m) }
	RQ(script, RQ_STR, true),
	RQ(name, RQ_STR, false),
	RQ(partition, RQ_STR, false),
	RQ(account, RQ_STR, false),
	RQ(uid, RQ_U32, true),
	RQ(gid, RQ_U32, true),
	RQ(work_dir, RQ_STR, true),
	RQ(env, RQ_ENV, false),
	RQ(time_limit, RQ_U32, false),
	RQ(nodes, RQ_U32, false),
	RQ(ntasks, RQ_U32, false),
	RQ(ntasks_per_node, RQ_U16, false),
	RQ(cpus_per_task, RQ_U16, false),
	RQ(mem_per_node_mb, RQ_U64, false),
	RQ(mem_per_cpu_mb, RQ_U64, false),
	RQ(gres, RQ_STR, false),
	RQ(output, RQ_STR, false),
	RQ(error, RQ_STR, false),
	RQ(comment, RQ_STR, false),
	RQ(hold, RQ_BOOL, false),
	RQ(nodes_max, RQ_U32, false),
	RQ(mem_whole_node, RQ_BOOL, false),
	RQ(mem_per_gpu_mb, RQ_U64, false),
	RQ(gres_per_job, RQ_STR, false),
	RQ(gres_per_task, RQ_STR, false),
	RQ(qos, RQ_STR, false),
	RQ(constraint, RQ_STR, false),
	RQ(licenses, RQ_STR, false),
	RQ(nodelist, RQ_STR, false),
	RQ(exclude, RQ_STR, false),
	RQ(exclusive, RQ_BOOL, false),
	RQ(time_min, RQ_U32, false),
	RQ(begin_time, RQ_U64, false),
	RQ(deadline, RQ_U64, false),
	RQ(signal, RQ_STR, false),
	RQ(input, RQ_STR, false),
	RQ(array, RQ_STR, false),
	RQ(dependency, RQ_STR, false),
	RQ(mail_type, RQ_STR, false),
	RQ(mail_user, RQ_STR, false),
	RQ(requeue, RQ_U16, false),
	RQ(container, RQ_STR, false),
#undef RQ
};

#define REQ_NFIELDS (sizeof(req_fields) / sizeof(req_fields[0]))

/* One member of req as JSON; NULL with *absent for an unset string or
 * environment, NULL alone when out of memory. */
static cJSON *req_value(const struct req_field *f,
			const struct hb_slurmc_submit *req, bool *absent)
{
	const char *p = (const char *)req + f->off;
	const char *const *env;
	char num[24];
	cJSON *v;

	*absent = false;
	switch (f->type) {
	case RQ_STR:
		if (!*(const char *const *)p)
			break;
		return cJSON_CreateString(*(const char *const *)p);
	case RQ_U16:
		return cJSON_CreateNumber(*(const uint16_t *)p);
	case RQ_U32:
		return cJSON_CreateNumber(*(const uint32_t *)p);
	case RQ_U64:
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)*(const uint64_t *)p);
		return cJSON_CreateString(num);
	case RQ_BOOL:
		return cJSON_CreateBool(*(const bool *)p);
	case RQ_ENV:
		env = *(const char *const *const *)p;
		if (!env)
			break;
		if (!(v = cJSON_CreateArray()))
			return NULL;
		for (size_t i = 0; env[i]; i++) {
			cJSON *s = cJSON_CreateString(env[i]);

			if (!s || !cJSON_AddItemToArray(v, s)) {
				cJSON_Delete(s);
				cJSON_Delete(v);
				return NULL;
			}
		}
		return v;
	}
	*absent = true;
	return NULL;
}

/* req (already checked) as JSON text for the child; caller frees *out
 * with free(). */
static int req_to_json(const struct hb_slurmc_submit *req, char **out,
		       size_t *len, struct hb_err *err)
{
	cJSON *o = cJSON_CreateObject();
	char *text = NULL;
	int rc = 0;

	*out = NULL;
	if (!o)
		goto nomem;
	for (size_t i = 0; i < REQ_NFIELDS; i++) {
		bool absent;
		cJSON *v = req_value(&req_fields[i], req, &absent);

		if (absent)
			continue;
		if (!v || !cJSON_AddItemToObject(o, req_fields[i].name, v)) {
			cJSON_Delete(v);
			goto nomem;
		}
	}
	if (!(text = cJSON_PrintUnformatted(o)))
		goto nomem;
	*len = strlen(text);
	if (*len > CHILD_REQ_MAX) {
		rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
				"request: %zu bytes as JSON, over the %u a "
				"submission as another user takes",
				*len, CHILD_REQ_MAX);
		free(text);
		text = NULL;
	}
	cJSON_Delete(o);
	*out = text;
	return rc;
nomem:
	cJSON_Delete(o);
	return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
}

/* A JSON number that is an integer from 0 to max into *out. */
static bool json_uint(const cJSON *v, double max, uint32_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	if (!(d >= 0 && d <= max) || d != (double)(uint32_t)d)
		return false;
	*out = (uint32_t)d;
	return true;
}

/* A decimal string into *out: digits only, no sign, no blank. */
static bool json_u64(const cJSON *v, uint64_t *out)
{
	unsigned long long n;
	char *end;

	if (!cJSON_IsString(v) || v->valuestring[0] < '0' ||
	    v->valuestring[0] > '9')
		return false;
	errno = 0;
	n = strtoull(v->valuestring, &end, 10);
	if (errno || *end)
		return false;
	*out = n;
	return true;
}

/* The environment array v into *env (NULL-terminated, borrowing v's
 * strings; caller frees with free()). */
static int json_env(const cJSON *v, char ***env, struct hb_err *err)
{
	const cJSON *s;
	size_t n = 0;
	char **e;

	if (!cJSON_IsArray(v))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "request.env: not an array");
	cJSON_ArrayForEach (s, v) {
		if (++n > ENV_MAX)
			return hb_err_set(err, HB_ETOOBIG, NULL, 0,
					  "request.env: more than %d entries",
					  ENV_MAX);
	}
	if (!(e = calloc(n + 1, sizeof(*e))))
		return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	n = 0;
	cJSON_ArrayForEach (s, v) {
		if (!cJSON_IsString(s)) {
			free(e);
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "request.env[%zu]: not a string", n);
		}
		e[n++] = s->valuestring;
	}
	*env = e;
	return 0;
}

/* One member v of the request into req. */
static int req_member(const struct req_field *f, const cJSON *v,
		      struct hb_slurmc_submit *req, char ***env,
		      struct hb_err *err)
{
	char *p = (char *)req + f->off;
	uint32_t n;

	switch (f->type) {
	case RQ_STR:
		if (!cJSON_IsString(v))
			break;
		*(const char **)p = v->valuestring;
		return 0;
	case RQ_U16:
		if (!json_uint(v, UINT16_MAX, &n))
			return hb_err_set(err, HB_ERANGE, NULL, 0,
					  "request.%s: not an integer from 0 "
					  "to %u",
					  f->name, UINT16_MAX);
		*(uint16_t *)p = (uint16_t)n;
		return 0;
	case RQ_U32:
		if (!json_uint(v, UINT32_MAX, &n))
			return hb_err_set(err, HB_ERANGE, NULL, 0,
					  "request.%s: not an integer from 0 "
					  "to %u",
					  f->name, UINT32_MAX);
		*(uint32_t *)p = n;
		return 0;
	case RQ_U64:
		if (!json_u64(v, (uint64_t *)p))
			return hb_err_set(err, HB_ERANGE, NULL, 0,
					  "request.%s: not a decimal string "
					  "of an integer from 0 to 2^64-1",
					  f->name);
		return 0;
	case RQ_BOOL:
		if (!cJSON_IsBool(v))
			break;
		*(bool *)p = cJSON_IsTrue(v);
		return 0;
	case RQ_ENV:
		if (json_env(v, env, err))
			return err->code;
		*(const char *const **)p = (const char *const *)*env;
		return 0;
	}
	return hb_err_set(err, HB_EINVAL, NULL, 0, "request.%s: not a %s",
			  f->name, f->type == RQ_BOOL ? "boolean" : "string");
}

/*
 * The child's request, text[0..len) (req_to_json's JSON), into *req: every
 * member of the right type and in range, none unknown or given twice,
 * script, uid, gid and work_dir present, then hb_slurmc_submit_check().
 * req's strings borrow from *tree, its env is *env: the caller frees both
 * (cJSON_Delete, free), on error too.
 */
static int req_from_json(const char *text, size_t len,
			 struct hb_slurmc_submit *req, cJSON **tree,
			 char ***env, struct hb_err *err)
{
	bool seen[REQ_NFIELDS] = { false };
	const cJSON *v;
	int rc;

	memset(req, 0, sizeof(*req));
	*env = NULL;
	*tree = cJSON_ParseWithLength(text, len);
	if (!*tree)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "request: not JSON (%zu bytes)", len);
	if (!cJSON_IsObject(*tree))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "request: not a JSON object");
	cJSON_ArrayForEach (v, *tree) {
		size_t i = 0;

		while (i < REQ_NFIELDS && strcmp(req_fields[i].name, v->string))
			i++;
		if (i == REQ_NFIELDS)
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "request: unknown member '%.64s'",
					  v->string);
		if (seen[i])
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "request.%s: given twice",
					  req_fields[i].name);
		seen[i] = true;
		if ((rc = req_member(&req_fields[i], v, req, env, err)))
			return rc;
	}
	for (size_t i = 0; i < REQ_NFIELDS; i++)
		if (req_fields[i].required && !seen[i])
			return hb_err_set(err, HB_EINVAL, NULL, 0,
					  "request.%s: missing",
					  req_fields[i].name);
	req->as_user = true;
	return hb_slurmc_submit_check(req, err);
}

/* Write all of r on fd (async-signal-safe). */
static void say_parent(int fd, const struct as_user_reply *r)
{
	const char *p = (const char *)r;
	size_t left = sizeof(*r);

	while (left) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		left -= (size_t)n;
	}
}

/* Copy a literal into r->text (async-signal-safe). */
#define REPLY_TEXT(r, lit)                                                     \
	do {                                                                   \
		_Static_assert(sizeof(lit) <= sizeof((r)->text), "too long");  \
		memcpy((r)->text, lit, sizeof(lit));                           \
	} while (0)

/*
 * In the child: become uid/gid with the supplementary groups given (see
 * hb_user_become()).  0, or -1 with r->err set.  Async-signal-safe.
 */
static int drop_to(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups,
		   struct as_user_reply *r)
{
	int e = hb_user_become(uid, gid, groups, ngroups);

	if (!e)
		return 0;
	r->err = e > 0 ? e : EPERM;
	if (e < 0)
		REPLY_TEXT(r, "privileges not dropped");
	return -1;
}

/*
 * The child, from fork() to execve(): async-signal-safe calls only.
 * in, out and errfd become its stdin, stdout and stderr, and every other
 * descriptor is closed; every signal gets its default action and is
 * unblocked; it becomes the user and runs the program.  What fails is
 * answered on out (stage and errno).  Never returns.
 */
static void exec_child(int in, int out, int errfd, uid_t uid, gid_t gid,
		       const gid_t *groups, size_t ngroups, char *const argv[],
		       char *const envp[])
{
	struct as_user_reply r = { .stage = AS_EXEC };
	int fd[3] = { in, out, errfd }, moved[3];
	struct sigaction dfl;
	sigset_t set;

	sigfillset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	/* above 2 first, so that none is overwritten by another's dup2 */
	for (int i = 0; i < 3; i++) {
		if ((moved[i] = fcntl(fd[i], F_DUPFD_CLOEXEC, 3)) < 0) {
			r.err = errno;
			say_parent(out, &r);
			_exit(127);
		}
	}
	for (int i = 0; i < 3; i++) {
		if (dup2(moved[i], i) < 0) {
			r.err = errno;
			say_parent(moved[1], &r);
			_exit(127);
		}
	}
	hb_close_from(3);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
	r.stage = AS_DROP;
	if (drop_to(uid, gid, groups, ngroups, &r)) {
		say_parent(STDOUT_FILENO, &r);
		_exit(127);
	}
	/* set after the change of uid, which clears it */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	execve(CHILD_EXE, argv, envp);
	r.stage = AS_EXEC;
	r.err = errno;
	say_parent(STDOUT_FILENO, &r);
	_exit(127);
}

/* Milliseconds since t0 on CLOCK_MONOTONIC (a timespec, as the tests
 * take it too). */
static long ms_since(const struct timespec *t0)
{
	return (long)(hb_clock_mono_ms() -
		      ((int64_t)t0->tv_sec * 1000 + t0->tv_nsec / 1000000));
}

/* Printable ASCII only: text a user's process wrote goes into our
 * messages. */
static void clean_text(char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			*s = '?';
}

/* The last line the child left on its stderr (fd, non-blocking; -1:
 * none) as ": LINE", or "" when it wrote nothing. */
static void child_stderr(int fd, char *out, size_t size)
{
	char buf[4096];
	size_t len = 0;
	ssize_t n;

	out[0] = '\0';
	if (fd < 0)
		return;
	/* keep the last sizeof(buf) - 1 bytes */
	for (;;) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1) {
			memmove(buf, buf + len / 2, len - len / 2);
			len -= len / 2;
		}
	}
	buf[len] = '\0';
	if (!len)
		return;
	{
		const char *line = hb_slurmc_last_line(buf);
		char clean[200];

		snprintf(clean, sizeof(clean), "%s", line);
		clean_text(clean);
		if (clean[0])
			snprintf(out, size, ": %s", clean);
	}
}

/*
 * The parent: read the child's answer from fd until it is whole, the
 * child ends, is stopped (a user may stop a process of theirs: it is
 * killed at once rather than waited for), or the deadline passes; then
 * make sure it is gone and reap it.  0 with *r whole, else an error,
 * with the last line of the child's stderr (errfd; -1: none) when it
 * ended without an answer.
 */
static int as_user_wait(pid_t pid, int fd, int errfd, struct as_user_reply *r,
			uid_t uid, struct hb_err *err)
{
	struct timespec t0;
	size_t len = 0;
	int status = 0, reaped = 0, stopped = 0, timed_out = 0;
	char why[256];
	pid_t w;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (len < sizeof(*r)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n = poll(&pfd, 1, AS_USER_TICK_MS);

		if (n > 0) {
			ssize_t k = read(fd, (char *)r + len, sizeof(*r) - len);

			if (k > 0) {
				len += (size_t)k;
				continue;
			}
			if (k == 0 || (errno != EINTR && errno != EAGAIN))
				break; /* EOF: the child is gone */
		} else if (n < 0 && errno != EINTR) {
			break;
		} else if (n == 0 && reaped) {
			break; /* it ended, and said all it will */
		}
		if (!reaped) {
			w = waitpid(pid, &status, WNOHANG | WUNTRACED);
			if (w == pid && WIFSTOPPED(status)) {
				stopped = WSTOPSIG(status);
				break;
			}
			if (w == pid || (w < 0 && errno == ECHILD))
				reaped = 1;
		}
		if (ms_since(&t0) >= as_user_timeout_ms) {
			timed_out = 1;
			break;
		}
	}
	if (!reaped) {
		/* done, or given up on: it ends now either way */
		kill(pid, SIGKILL);
		while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
			;
	}
	if (len == sizeof(*r))
		return 0;
	if (stopped)
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "the submission as uid %u was stopped "
				  "(signal %d) and was killed",
				  (unsigned)uid, stopped);
	if (timed_out)
		return hb_err_set(err, HB_ETIMEDOUT, NULL, 0,
				  "the submission as uid %u took over %d ms "
				  "and was killed",
				  (unsigned)uid, as_user_timeout_ms);
	child_stderr(errfd, why, sizeof(why));
	if (WIFSIGNALED(status))
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "the submission as uid %u died (signal "
				  "%d)%s",
				  (unsigned)uid, WTERMSIG(status), why);
	return hb_err_set(err, HB_EIO, NULL, 0,
			  "the submission as uid %u ended without an "
			  "answer%s",
			  (unsigned)uid, why);
}

/* What the child answered, as our error or *job_id. */
static int as_user_answer(struct as_user_reply *r, uid_t uid, gid_t gid,
			  uint32_t *job_id, struct hb_err *err)
{
	int code;

	r->text[sizeof(r->text) - 1] = '\0';
	clean_text(r->text);
	switch (r->stage) {
	case AS_DROP:
		return hb_err_set(err, HB_EPERM, NULL, 0,
				  "cannot submit as uid %u gid %u: %s",
				  (unsigned)uid, (unsigned)gid,
				  r->text[0] ? r->text : strerror(r->err));
	case AS_EXEC:
		return hb_err_set(err, HB_EIO, NULL, 0,
				  "cannot run %s for the submission as uid "
				  "%u: %s",
				  CHILD_EXE, (unsigned)uid, strerror(r->err));
	case AS_REQUEST:
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "the submission as uid %u refused its "
				  "request: %s",
				  (unsigned)uid, r->text);
	case AS_SLURM:
		break;
	default:
		return hb_err_set(err, HB_EPROTO, NULL, 0,
				  "the submission as uid %u gave no answer",
				  (unsigned)uid);
	}
	if (r->err) {
		code = hb_slurmc_errcode(r->err);
		hb_metrics_side_error("slurm");
		return hb_err_set(err, code ? code : HB_ESLURM, NULL, 0,
				  "slurm_submit_batch_job as uid %u: %s "
				  "(Slurm error %d)",
				  (unsigned)uid, r->text, (int)r->err);
	}
	*job_id = r->job_id;
	return 0;
}

/* "NAME=value" in a new string; NULL when out of memory. */
static char *env_entry(const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s=%s", name, value);
	return s;
}

static void free_strv(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

/* The child's whole environment: SLURM_CONF=conf and the sanitizers'
 * options we have.  Caller frees with free_strv(). */
static int child_env(const char *conf, char ***out, struct hb_err *err)
{
	size_t nkeep = sizeof(child_env_keep) / sizeof(child_env_keep[0]);
	char **v = calloc(nkeep + 2, sizeof(*v));
	size_t n = 0;

	if (!v || !(v[n++] = env_entry("SLURM_CONF", conf)))
		goto nomem;
	for (size_t i = 0; i < nkeep; i++) {
		const char *val = getenv(child_env_keep[i]);

		if (val && !(v[n++] = env_entry(child_env_keep[i], val)))
			goto nomem;
	}
	*out = v;
	return 0;
nomem:
	free_strv(v);
	return hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
}

/* A sealed memory file holding text[0..len), read from its start: the
 * child's stdin.  The descriptor, or a negative error. */
static int request_file(const char *text, size_t len, struct hb_err *err)
{
	int fd = memfd_create(CHILD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t off = 0;
	int rc;

	if (fd < 0)
		return hb_err_set(err, HB_EIO, NULL, 0, "memfd_create: %s",
				  strerror(errno));
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) <
		    0 ||
	    lseek(fd, 0, SEEK_SET) < 0)
		goto fail;
	return fd;
fail:
	rc = hb_err_set(err, HB_EIO, NULL, 0, "the request file: %s",
			strerror(errno ? errno : EIO));
	close(fd);
	return rc;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* req (checked, as_user for uid other than ours) submitted by a child
 * that has become the user and runs this program again, with conf. */
static int submit_as_user(const char *conf, const struct hb_slurmc_submit *req,
			  uint32_t *job_id, struct hb_err *err)
{
	char *argv[] = { CHILD_NAME, HB_SLURMC_CHILD_ARG, NULL };
	struct hb_slurmc_submit copy = *req;
	struct as_user_reply r = { 0 };
	uid_t uid = (uid_t)req->uid;
	gid_t gid = (gid_t)req->gid;
	char cwd[PATH_MAX], *text = NULL, **envp = NULL;
	int in = -1, out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	gid_t *groups = NULL;
	size_t ngroups = 0, len = 0;
	int rc;
	pid_t pid;

	/* as a direct submission would: our working directory */
	if (!copy.work_dir) {
		if (!getcwd(cwd, sizeof(cwd)))
			snprintf(cwd, sizeof(cwd), "/");
		copy.work_dir = cwd;
	}
	if ((rc = hb_user_lookup(uid, gid, &groups, &ngroups, NULL, err)) ||
	    (rc = req_to_json(&copy, &text, &len, err)) ||
	    (rc = child_env(conf, &envp, err)))
		goto out;
	if ((in = request_file(text, len, err)) < 0) {
		rc = in;
		goto out;
	}
	/* stderr does not block the child: what does not fit is lost */
	if (pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(errp, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = hb_err_set(err, HB_EIO, NULL, 0, "pipe: %s",
				strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid == 0)
		exec_child(in, out[1], errp[1], uid, gid, groups, ngroups, argv,
			   envp);
	if (pid < 0) {
		rc = hb_err_set(err, HB_EIO, NULL, 0, "fork: %s",
				strerror(errno));
		goto out;
	}
	close_fd(&in);
	close_fd(&out[1]);
	close_fd(&errp[1]);
	if (!(rc = as_user_wait(pid, out[0], errp[0], &r, uid, err)))
		rc = as_user_answer(&r, uid, gid, job_id, err);
out:
	close_fd(&in);
	for (int i = 0; i < 2; i++) {
		close_fd(&out[i]);
		close_fd(&errp[i]);
	}
	free(text);
	free_strv(envp);
	free(groups);
	return rc;
}

/*
 * The job id a child answered is taken only when Slurm shows that job as
 * uid's: once it ran the program again the child was the user's own
 * process, and the user may have answered in its place.
 */
static int check_owner(uint32_t job_id, uid_t uid, struct hb_err *err)
{
	job_info_msg_t *resp = NULL;
	int rc = 0;

	if (slurm_load_job(&resp, job_id, SHOW_ALL) != SLURM_SUCCESS)
		return fail_slurm(err, slurm_errno_of(SLURM_ERROR),
				  "slurm_load_job (the job just submitted)");
	if (!resp || !resp->record_count)
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"job %u: Slurm shows no such job", job_id);
	for (uint32_t i = 0; !rc && i < resp->record_count; i++)
		if (resp->job_array[i].user_id != (uint32_t)uid)
			rc = hb_err_set(err, HB_EPERM, NULL, 0,
					"the submission as uid %u answered "
					"job %u, which is uid %u's",
					(unsigned)uid, job_id,
					resp->job_array[i].user_id);
	if (resp)
		slurm_free_job_info_msg(resp);
	return rc;
}

/* ----------------------------------------- the child's program side */

/* Read all of fd into b (whose max bounds it). */
static int read_all(int fd, struct hb_buf *b, struct hb_err *err)
{
	char chunk[65536];
	int rc;

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return hb_err_set(err, HB_EIO, NULL, 0,
					  "request: read: %s", strerror(errno));
		if (n == 0)
			return 0;
		if ((rc = hb_buf_append(b, chunk, (size_t)n)))
			return hb_err_set(err, rc, NULL, 0,
					  "request: over %zu bytes", b->max);
	}
}

/* The child's work: read the request on stdin, check that this process
 * is its user, submit; *r gets the answer. */
static void child_submit(struct as_user_reply *r)
{
	const char *conf = getenv("SLURM_CONF");
	submit_response_msg_t *resp = NULL;
	struct hb_slurmc_submit req;
	struct desc_mem m = { 0 };
	struct hb_err err = { 0 };
	cJSON *tree = NULL;
	char **env = NULL;
	struct hb_buf in;
	job_desc_msg_t d;

	r->stage = AS_REQUEST;
	hb_buf_init(&in, CHILD_REQ_MAX);
	if (read_all(STDIN_FILENO, &in, &err) ||
	    req_from_json(in.data ? in.data : "", in.len, &req, &tree, &env,
			  &err))
		goto out;
	if (getuid() != req.uid || geteuid() != req.uid ||
	    getgid() != req.gid || getegid() != req.gid) {
		r->stage = AS_DROP;
		r->err = EPERM;
		snprintf(r->text, sizeof(r->text),
			 "this process is uid %u gid %u, not the request's",
			 (unsigned)getuid(), (unsigned)getgid());
		goto out;
	}
	if (!conf || !*conf) {
		hb_err_set(&err, HB_EINVAL, NULL, 0, "SLURM_CONF: not set");
		goto out;
	}
	if (hb_slurmc_check_conf_file(conf, &err))
		goto out;
	slurm_init(conf);
	slurm_init_job_desc_msg(&d);
	if (fill_desc(&d, &req, &m, &err))
		goto out;
	r->stage = AS_SLURM;
	if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) {
		const char *t;

		r->err = slurm_errno_of(SLURM_ERROR);
		t = r->err == SLURM_ERROR ? "unspecified error"
					  : slurm_strerror(r->err);
		snprintf(r->text, sizeof(r->text), "%s", t ? t : "unknown");
	} else if (resp) {
		r->job_id = resp->job_id;
	} else {
		r->err = SLURM_ERROR;
		snprintf(r->text, sizeof(r->text), "no answer");
	}
out:
	if (r->stage == AS_REQUEST)
		snprintf(r->text, sizeof(r->text), "%.*s",
			 (int)sizeof(r->text) - 1, err.msg);
	if (resp)
		slurm_free_submit_response_response_msg(resp);
	desc_mem_free(&m);
	free(env);
	cJSON_Delete(tree);
	hb_buf_free(&in);
}

int hb_slurmc_child_main(int argc, char **argv)
{
	struct as_user_reply r = { 0 };
	struct rlimit no_core = { 0, 0 };
	sigset_t none;

	if (argc != 2 || !argv || !argv[1] ||
	    strcmp(argv[1], HB_SLURMC_CHILD_ARG))
		return -1;
	/* execve() made the process dumpable again (it runs a program the
	 * user may read): the answer pipe is the parent's, keep it so */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	setrlimit(RLIMIT_CORE, &no_core);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	child_submit(&r);
	say_parent(STDOUT_FILENO, &r);
	_exit(0);
}

int hb_slurmc_submit(struct hb_slurmc *c, const struct hb_slurmc_submit *req,
		     uint32_t *job_id, struct hb_err *err)
{
	submit_response_msg_t *resp = NULL;
	struct hb_slurmc_submit r;
	struct desc_mem m = { 0 };
	job_desc_msg_t d;
	uint32_t id = 0;
	bool tag;
	int rc;

	if (!c || !job_id)
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_submit: no handle or output");
	if ((rc = hb_slurmc_submit_check(req, err)))
		return rc;
	/*
	 * The admin comment is set after the submission, as root (users may
	 * not set it), and Slurm refuses to update a job that has ended: a
	 * short job could finish untagged in between.  A tagged job is
	 * submitted held, tagged, then released, unless it was asked held.
	 */
	r = *req;
	tag = req->admin_comment && *req->admin_comment;
	r.hold = req->hold || tag;
	slurm_init_job_desc_msg(&d);
	if (r.as_user && r.uid != (uint32_t)geteuid()) {
		if ((rc = submit_as_user(c->conf, &r, &id, err)) ||
		    (rc = check_owner(id, (uid_t)r.uid, err)))
			goto out;
	} else if ((rc = fill_desc(&d, &r, &m, err))) {
		goto out;
	} else if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) {
		rc = fail_slurm(err, slurm_errno_of(SLURM_ERROR),
				"slurm_submit_batch_job");
		goto out;
	} else {
		id = resp->job_id;
	}
	*job_id = id;
	if (tag) {
		rc = set_admin_comment(id, req->admin_comment, err);
		if (!rc && !req->hold)
			rc = release_job(id, err);
		if (rc) {
			/* all or nothing: the held job never ran */
			struct hb_err cerr = { 0 };

			int crc = hb_slurmc_cancel(c, id, 0, &cerr);

			if (crc && crc != HB_SLURMC_DONE)
				hb_log(HB_LOG_ERROR,
				       "Slurm job %u, submitted held but not "
				       "tagged (%s), is not cancelled either: "
				       "%s; it stays held",
				       id, err->msg, cerr.msg);
		}
	}
out:
	if (resp)
		slurm_free_submit_response_response_msg(resp);
	desc_mem_free(&m);
	return rc;
}

int hb_slurmc_will_run(struct hb_slurmc *c, const struct hb_slurmc_submit *req,
		       time_t *start, char *nodes, size_t nodes_size,
		       struct hb_err *err)
{
	will_run_response_msg_t *resp = NULL;
	struct desc_mem m = { 0 };
	job_desc_msg_t d;
	int rc;

	if (!c || !start || (!nodes && nodes_size))
		return hb_err_set(err, HB_EINVAL, NULL, 0,
				  "hb_slurmc_will_run: bad arguments");
	if ((rc = hb_slurmc_submit_check(req, err)))
		return rc;
	slurm_init_job_desc_msg(&d);
	if ((rc = fill_desc(&d, req, &m, err)))
		goto out;
	d.priority = NO_VAL; /* a held job would never start */
	if (slurm_job_will_run2(&d, &resp) != SLURM_SUCCESS) {
		rc = fail_slurm(err, slurm_errno_of(SLURM_ERROR),
				"slurm_job_will_run2");
		goto out;
	}
	if (!resp) {
		rc = hb_err_set(err, HB_EPROTO, NULL, 0,
				"slurm_job_will_run2: no answer");
		goto out;
	}
	*start = resp->start_time;
	if (nodes_size) {
		const char *nl = resp->node_list ? resp->node_list : "";
		int n = snprintf(nodes, nodes_size, "%s", nl);

		if (n < 0 || (size_t)n >= nodes_size)
			rc = hb_err_set(err, HB_ETOOBIG, NULL, 0,
					"node list of %zu bytes does not fit "
					"in %zu",
					strlen(nl), nodes_size);
	}
out:
	if (resp)
		slurm_free_will_run_response_msg(resp);
	desc_mem_free(&m);
	return rc;
}

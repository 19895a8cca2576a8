/*
 * faults.c - fault injection, switched per test through the admin
 * endpoint /_hb/faults.
 *
 *   POST /_hb/faults {"latency_ms":200,"error_500":3,"error_429":2,
 *                     "retry_after":1,"gone_next_watch":1,
 *                     "drop_watches":true,"refuse_ms":1500,
 *                     "path":"/mpijobs","method":"POST"}
 *   GET /_hb/faults     the current settings and counts
 *   DELETE /_hb/faults  back to no faults
 *
 * Counted faults (error_500, error_429, gone_next_watch) are used up by
 * the requests they hit; latency stays until changed.  path (a substring
 * of the request path) and method narrow latency and the error counts.
 * drop_watches and refuse_ms act once, when posted.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubemu.h"

struct km_faults {
	pthread_mutex_t mu;
	int latency_ms;
	int n500, n429, retry_after;
	int gone;
	char *path, *method;
	/* What was injected so far. */
	long done500, done429, done_gone, done_drop, done_refuse;
};

struct km_faults *km_faults_new(void)
{
	struct km_faults *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	pthread_mutex_init(&f->mu, NULL);
	f->retry_after = 1;
	return f;
}

void km_faults_free(struct km_faults *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->mu);
	free(f->path);
	free(f->method);
	free(f);
}

static int applies(const struct km_faults *f, const char *method,
		   const char *path)
{
	return (!f->path || strstr(path, f->path)) &&
	       (!f->method || !strcmp(method, f->method));
}

enum km_fault_act km_faults_take(struct km_faults *f, const char *method,
				 const char *path, int watch, int *delay_ms,
				 int *retry_after)
{
	enum km_fault_act act = KM_FAULT_NONE;

	(void)watch;
	*delay_ms = 0;
	*retry_after = 0;
	pthread_mutex_lock(&f->mu);
	if (applies(f, method, path)) {
		*delay_ms = f->latency_ms;
		if (f->n500 > 0) {
			f->n500--;
			f->done500++;
			act = KM_FAULT_500;
		} else if (f->n429 > 0) {
			f->n429--;
			f->done429++;
			*retry_after = f->retry_after;
			act = KM_FAULT_429;
		}
	}
	pthread_mutex_unlock(&f->mu);
	return act;
}

int km_faults_take_gone(struct km_faults *f)
{
	int g = 0;

	pthread_mutex_lock(&f->mu);
	if (f->gone > 0) {
		f->gone--;
		f->done_gone++;
		g = 1;
	}
	pthread_mutex_unlock(&f->mu);
	return g;
}

static int int_member(const cJSON *o, const char *key, int *out, char *err,
		      size_t cap)
{
	const cJSON *v = km_get(o, key);

	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > 86400000 ||
	    v->valuedouble != (double)(int)v->valuedouble) {
		snprintf(err, cap, "%s must be a non-negative integer", key);
		return HB_EINVAL;
	}
	*out = v->valueint;
	return 0;
}

static int str_member(const cJSON *o, const char *key, char **out, char *err,
		      size_t cap)
{
	const cJSON *v = km_get(o, key);

	if (!v)
		return 0;
	if (cJSON_IsNull(v) || (cJSON_IsString(v) && !*v->valuestring)) {
		free(*out);
		*out = NULL;
		return 0;
	}
	if (!cJSON_IsString(v)) {
		snprintf(err, cap, "%s must be a string", key);
		return HB_EINVAL;
	}
	free(*out);
	*out = strdup(v->valuestring);
	return *out ? 0 : HB_ENOMEM;
}

static char *state_json(struct km_faults *f)
{
	cJSON *o = cJSON_CreateObject();
	char *txt;

	if (!o)
		return NULL;
	km_set_num(o, "latency_ms", f->latency_ms);
	km_set_num(o, "error_500", f->n500);
	km_set_num(o, "error_429", f->n429);
	km_set_num(o, "retry_after", f->retry_after);
	km_set_num(o, "gone_next_watch", f->gone);
	km_set(o, "path",
	       f->path ? cJSON_CreateString(f->path) : cJSON_CreateNull());
	km_set(o, "method",
	       f->method ? cJSON_CreateString(f->method) : cJSON_CreateNull());
	km_set_num(o, "injected_500", (double)f->done500);
	km_set_num(o, "injected_429", (double)f->done429);
	km_set_num(o, "injected_gone", (double)f->done_gone);
	km_set_num(o, "drops", (double)f->done_drop);
	km_set_num(o, "refusals", (double)f->done_refuse);
	txt = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return txt;
}

int km_faults_admin(struct km_faults *f, const char *method, const char *body,
		    size_t len, int *drop, int *refuse_ms, char **reply,
		    int *http_code)
{
	char err[256] = "";
	cJSON *o = NULL;
	int rc = 0;

	*drop = 0;
	*refuse_ms = 0;
	*reply = NULL;
	*http_code = 200;
	pthread_mutex_lock(&f->mu);
	if (!strcmp(method, "DELETE")) {
		f->latency_ms = f->n500 = f->n429 = f->gone = 0;
		f->retry_after = 1;
		free(f->path);
		free(f->method);
		f->path = f->method = NULL;
	} else if (!strcmp(method, "POST") || !strcmp(method, "PUT")) {
		const cJSON *d;

		o = cJSON_ParseWithLength(body ? body : "", len);
		if (!cJSON_IsObject(o)) {
			snprintf(err, sizeof(err),
				 "the body must be a JSON "
				 "object");
			rc = HB_EINVAL;
			goto out;
		}
		if ((rc = int_member(o, "latency_ms", &f->latency_ms, err,
				     sizeof(err))) ||
		    (rc = int_member(o, "error_500", &f->n500, err,
				     sizeof(err))) ||
		    (rc = int_member(o, "error_429", &f->n429, err,
				     sizeof(err))) ||
		    (rc = int_member(o, "retry_after", &f->retry_after, err,
				     sizeof(err))) ||
		    (rc = int_member(o, "gone_next_watch", &f->gone, err,
				     sizeof(err))) ||
		    (rc = int_member(o, "refuse_ms", refuse_ms, err,
				     sizeof(err))) ||
		    (rc = str_member(o, "path", &f->path, err, sizeof(err))) ||
		    (rc = str_member(o, "method", &f->method, err,
				     sizeof(err))))
			goto out;
		d = km_get(o, "drop_watches");
		if (d && !cJSON_IsBool(d)) {
			snprintf(err, sizeof(err),
				 "drop_watches must be a boolean");
			rc = HB_EINVAL;
			goto out;
		}
		*drop = cJSON_IsTrue(d);
		if (*drop)
			f->done_drop++;
		if (*refuse_ms)
			f->done_refuse++;
	} else if (strcmp(method, "GET")) {
		*http_code = 405;
		snprintf(err, sizeof(err), "use GET, POST or DELETE");
		rc = HB_EINVAL;
		goto out;
	}
out:
	if (rc) {
		cJSON *e = cJSON_CreateObject();

		if (*http_code == 200)
			*http_code = 400;
		*refuse_ms = 0;
		*drop = 0;
		km_set_str(e, "error", err[0] ? err : "invalid request");
		*reply = cJSON_PrintUnformatted(e);
		cJSON_Delete(e);
	} else {
		*reply = state_json(f);
	}
	pthread_mutex_unlock(&f->mu);
	cJSON_Delete(o);
	return rc;
}

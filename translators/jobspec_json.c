/*
 * jobspec_json.c - the jobspec as JSON ("hpcbridge translate --to jobspec")
 * and back.  The daemon stores jobs in this form, so reading it back is as
 * strict as any other input: a wrong type or value names its key.
 *
 * Keys appear only for fields that are set.  One table lists the plain
 * string and integer fields so both directions stay in step.
 */
#include <stddef.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hpcbridge/translate.h"
#include "hpcbridge/units.h"

#define STR_FIELD(key, member, field)                                          \
	{                                                                      \
		key, offsetof(struct hb_jobspec, member), field                \
	}

static const struct str_field {
	const char *key;
	size_t off;
	enum hb_field field;
} str_fields[] = {
	STR_FIELD("name", name, HB_F_NAME),
	STR_FIELD("user", user, HB_F_USER),
	STR_FIELD("account", account, HB_F_ACCOUNT),
	STR_FIELD("partition", partition, HB_F_PARTITION),
	STR_FIELD("qos", qos, HB_F_QOS),
	STR_FIELD("comment", comment, HB_F_COMMENT),
	STR_FIELD("licenses", licenses, HB_F_LICENSES),
	STR_FIELD("constraint", constraint, HB_F_CONSTRAINT),
	STR_FIELD("nodelist", nodelist, HB_F_NODELIST),
	STR_FIELD("exclude", exclude, HB_F_EXCLUDE),
	STR_FIELD("begin", begin, HB_F_BEGIN),
	STR_FIELD("deadline", deadline, HB_F_DEADLINE),
	STR_FIELD("signal", signal, HB_F_SIGNAL),
	STR_FIELD("output", output, HB_F_OUTPUT),
	STR_FIELD("error", error, HB_F_ERROR),
	STR_FIELD("input", input, HB_F_INPUT),
	STR_FIELD("chdir", chdir, HB_F_CHDIR),
	STR_FIELD("keep", keep, HB_F_KEEP),
	STR_FIELD("dependency", dependency, HB_F_DEPENDENCY),
	STR_FIELD("mail_type", mail_type, HB_F_MAIL_TYPE),
	STR_FIELD("mail_user", mail_user, HB_F_MAIL_USER),
	STR_FIELD("export", export_spec, HB_F_EXPORT),
	STR_FIELD("container", container, HB_F_CONTAINER),
	STR_FIELD("checkpoint_dir", checkpoint_dir, HB_F_CHECKPOINT),
	STR_FIELD("interpreter", interpreter, HB_F_SCRIPT),
};

#define U32_FIELD(key, member, field)                                          \
	{                                                                      \
		key, offsetof(struct hb_jobspec, member), field                \
	}

static const struct u32_field {
	const char *key;
	size_t off;
	enum hb_field field;
} u32_fields[] = {
	U32_FIELD("nodes_min", nodes_min, HB_F_NODES),
	U32_FIELD("nodes_max", nodes_max, HB_F_NODES),
	U32_FIELD("ntasks", ntasks, HB_F_NTASKS),
	U32_FIELD("ntasks_per_node", ntasks_per_node, HB_F_NTASKS_PER_NODE),
	U32_FIELD("cpus_per_task", cpus_per_task, HB_F_CPUS_PER_TASK),
};

static const char *const source_names[] = {
	[HB_SRC_UNKNOWN] = "unknown",	[HB_SRC_SBATCH] = "sbatch",
	[HB_SRC_PBS] = "pbs",		[HB_SRC_MPIJOB] = "mpijob",
	[HB_SRC_TRAINJOB] = "trainjob",
};

static const char *const mem_kinds[] = {
	[HB_MEM_NONE] = "none",	      [HB_MEM_PER_NODE] = "per_node",
	[HB_MEM_PER_CPU] = "per_cpu", [HB_MEM_PER_GPU] = "per_gpu",
	[HB_MEM_JOB] = "job",	      [HB_MEM_PER_PROCESS] = "per_process",
};

static const char *const gpu_scopes[] = {
	[HB_GPU_NONE] = "none",
	[HB_GPU_PER_JOB] = "job",
	[HB_GPU_PER_NODE] = "node",
	[HB_GPU_PER_TASK] = "task",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

static void add_time(cJSON *o, const char *key, uint64_t t)
{
	if (t == HB_TIME_UNLIMITED)
		cJSON_AddStringToObject(o, key, "UNLIMITED");
	else
		cJSON_AddNumberToObject(o, key, (double)t);
}

static cJSON *str_array(const char *const *v, uint32_t n)
{
	cJSON *a = cJSON_CreateArray();

	for (uint32_t i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

cJSON *hb_jobspec_to_json(const struct hb_jobspec *spec)
{
	cJSON *o = cJSON_CreateObject(), *x;
	struct hb_shape shape;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", "jobspec");
	cJSON_AddStringToObject(o, "source",
				spec->source < NELEM(source_names)
					? source_names[spec->source]
					: "unknown");
	cJSON_AddStringToObject(o, "source_name", spec->source_name);
	for (size_t i = 0; i < NELEM(str_fields); i++) {
		const char *v = *(const char *const *)((const char *)spec +
						       str_fields[i].off);
		if (v)
			cJSON_AddStringToObject(o, str_fields[i].key, v);
	}
	for (size_t i = 0; i < NELEM(u32_fields); i++) {
		uint32_t v = *(const uint32_t *)((const char *)spec +
						 u32_fields[i].off);
		if (v)
			cJSON_AddNumberToObject(o, u32_fields[i].key, v);
	}
	if (spec->mem_kind != HB_MEM_NONE &&
	    spec->mem_kind < NELEM(mem_kinds)) {
		x = cJSON_AddObjectToObject(o, "mem");
		cJSON_AddStringToObject(x, "kind", mem_kinds[spec->mem_kind]);
		cJSON_AddNumberToObject(x, "mb", (double)spec->mem_mb);
	}
	if (spec->gpu_scope != HB_GPU_NONE &&
	    spec->gpu_scope < NELEM(gpu_scopes)) {
		x = cJSON_AddObjectToObject(o, "gpus");
		cJSON_AddStringToObject(x, "scope",
					gpu_scopes[spec->gpu_scope]);
		cJSON_AddNumberToObject(x, "count", spec->gpus);
		if (spec->gpu_type)
			cJSON_AddStringToObject(x, "type", spec->gpu_type);
	}
	if (spec->exclusive)
		cJSON_AddTrueToObject(o, "exclusive");
	if (spec->join_output)
		cJSON_AddTrueToObject(o, "join_output");
	if (spec->export_all)
		cJSON_AddTrueToObject(o, "export_all");
	if (spec->requeue >= 0)
		cJSON_AddBoolToObject(o, "requeue", spec->requeue);
	if (hb_jobspec_has(spec, HB_F_TIME_LIMIT))
		add_time(o, "time_limit", spec->time_limit);
	if (hb_jobspec_has(spec, HB_F_TIME_MIN))
		add_time(o, "time_min", spec->time_min);
	if (spec->nchunks) {
		x = cJSON_AddArrayToObject(o, "chunks");
		for (uint32_t i = 0; x && i < spec->nchunks; i++) {
			const struct hb_chunk *c = &spec->chunks[i];
			cJSON *co = cJSON_CreateObject();

			cJSON_AddItemToArray(x, co);
			cJSON_AddNumberToObject(co, "count", c->count);
			cJSON_AddNumberToObject(co, "ncpus", c->ncpus);
			cJSON_AddNumberToObject(co, "mpiprocs", c->mpiprocs);
			cJSON_AddNumberToObject(co, "ompthreads",
						c->ompthreads);
			cJSON_AddNumberToObject(co, "ngpus", c->ngpus);
			cJSON_AddNumberToObject(co, "mem_mb",
						(double)c->mem_mb);
		}
	}
	if (spec->array) {
		cJSON *ranges;

		x = cJSON_AddObjectToObject(o, "array");
		cJSON_AddStringToObject(x, "spec", spec->array);
		ranges = cJSON_AddArrayToObject(x, "ranges");
		for (uint32_t i = 0; ranges && i < spec->narray_ranges; i++) {
			const struct hb_range *r = &spec->array_ranges[i];
			cJSON *t = cJSON_CreateArray();

			cJSON_AddItemToArray(t, cJSON_CreateNumber(r->start));
			cJSON_AddItemToArray(t, cJSON_CreateNumber(r->end));
			cJSON_AddItemToArray(t, cJSON_CreateNumber(r->step));
			cJSON_AddItemToArray(ranges, t);
		}
		if (spec->array_max_running)
			cJSON_AddNumberToObject(x, "max_running",
						spec->array_max_running);
	}
	if (spec->nenv) {
		x = cJSON_AddArrayToObject(o, "env");
		for (uint32_t i = 0; x && i < spec->nenv; i++) {
			cJSON *e = cJSON_CreateObject();

			cJSON_AddItemToArray(x, e);
			cJSON_AddStringToObject(e, "name", spec->env[i].name);
			if (spec->env[i].value)
				cJSON_AddStringToObject(e, "value",
							spec->env[i].value);
		}
	}
	if (spec->mpi)
		cJSON_AddStringToObject(
			o, "mpi",
			hb_mpi_impl_name((enum hb_mpi_impl)spec->mpi));
	if (hb_jobspec_has(spec, HB_F_FABRIC)) {
		cJSON_AddStringToObject(
			o, "fabric",
			hb_fabric_name((enum hb_fabric)spec->fabric));
		if (spec->fabric_why)
			cJSON_AddStringToObject(o, "fabric_why",
						spec->fabric_why);
		if (spec->fabric_inferred)
			cJSON_AddTrueToObject(o, "fabric_inferred");
	}
	if (spec->nmpi_lines)
		cJSON_AddItemToObject(
			o, "mpi_lines",
			str_array(spec->mpi_lines, spec->nmpi_lines));
	if (spec->nmodules)
		cJSON_AddItemToObject(o, "modules",
				      str_array(spec->modules, spec->nmodules));
	if (spec->ndata)
		cJSON_AddItemToObject(o, "data",
				      str_array(spec->data, spec->ndata));
	if (hb_jobspec_shape(spec, &shape) == 0) {
		x = cJSON_AddObjectToObject(o, "shape");
		cJSON_AddNumberToObject(x, "nodes", shape.nodes);
		cJSON_AddNumberToObject(x, "tasks_per_node",
					shape.tasks_per_node);
		cJSON_AddNumberToObject(x, "ntasks", shape.ntasks);
		cJSON_AddNumberToObject(x, "cpus_per_task",
					shape.cpus_per_task);
		cJSON_AddNumberToObject(x, "cpus_per_node",
					shape.cpus_per_node);
		cJSON_AddNumberToObject(x, "gpus_per_node",
					shape.gpus_per_node);
		cJSON_AddNumberToObject(x, "mem_per_node_mb",
					(double)shape.mem_per_node_mb);
		if (shape.whole_node_mem)
			cJSON_AddTrueToObject(x, "whole_node_mem");
	}
	if (spec->script)
		cJSON_AddStringToObject(o, "script", spec->script);
	return o;
}

/* Reading back: strict. */

struct rd {
	struct hb_jobspec *spec;
	struct hb_err *err;
	const char *name;
};

static const struct hb_prov derived = { HB_PROV_DERIVED, 0 };

static int bad(struct rd *r, const char *key, const char *what)
{
	return hb_err_set(r->err, HB_EINVAL, r->name, 0, "%s: %s", key, what);
}

static int get_uint(struct rd *r, const cJSON *v, const char *key, uint64_t max,
		    uint64_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return bad(r, key, "must be a number");
	d = v->valuedouble;
	if (d < 0 || d > (double)max || d != (double)(uint64_t)d)
		return bad(r, key, "must be a whole number in range");
	*out = (uint64_t)d;
	return 0;
}

static int get_time(struct rd *r, const cJSON *v, const char *key,
		    uint64_t *out)
{
	if (cJSON_IsString(v) && strcmp(v->valuestring, "UNLIMITED") == 0) {
		*out = HB_TIME_UNLIMITED;
		return 0;
	}
	return get_uint(r, v, key, UINT32_MAX * 60ULL, out);
}

static int get_str_list(struct rd *r, const cJSON *v, const char *key,
			int (*add)(struct hb_jobspec *, const char *))
{
	const cJSON *it;

	if (!cJSON_IsArray(v))
		return bad(r, key, "must be an array of strings");
	cJSON_ArrayForEach (it, v) {
		if (!cJSON_IsString(it))
			return bad(r, key, "must be an array of strings");
		if (add(r->spec, it->valuestring))
			return hb_err_set(r->err, HB_ENOMEM, NULL, 0,
					  "out of memory");
	}
	return 0;
}

static int read_mem(struct rd *r, const cJSON *v)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(v, "kind");
	int i;
	uint64_t mb;

	if (!cJSON_IsObject(v) || !cJSON_IsString(k))
		return bad(r, "mem", "must be {kind, mb}");
	i = lookup(mem_kinds, NELEM(mem_kinds), k->valuestring);
	if (i <= 0)
		return bad(r, "mem.kind", "unknown memory kind");
	if (get_uint(r, cJSON_GetObjectItemCaseSensitive(v, "mb"), "mem.mb",
		     UINT64_MAX >> 12, &mb))
		return HB_EINVAL;
	r->spec->mem_kind = (uint8_t)i;
	r->spec->mem_mb = mb;
	hb_jobspec_set_prov(r->spec, HB_F_MEM, derived);
	return 0;
}

static int read_gpus(struct rd *r, const cJSON *v)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, "scope");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "type");
	uint64_t n;
	int i;

	if (!cJSON_IsObject(v) || !cJSON_IsString(s))
		return bad(r, "gpus", "must be {scope, count[, type]}");
	i = lookup(gpu_scopes, NELEM(gpu_scopes), s->valuestring);
	if (i <= 0)
		return bad(r, "gpus.scope", "unknown GPU scope");
	if (get_uint(r, cJSON_GetObjectItemCaseSensitive(v, "count"),
		     "gpus.count", UINT32_MAX, &n))
		return HB_EINVAL;
	if (t && !cJSON_IsString(t))
		return bad(r, "gpus.type", "must be a string");
	r->spec->gpu_scope = (uint8_t)i;
	r->spec->gpus = (uint32_t)n;
	if (t)
		r->spec->gpu_type = hb_jobspec_strdup(r->spec, t->valuestring);
	hb_jobspec_set_prov(r->spec, HB_F_GPUS, derived);
	return 0;
}

static int read_array(struct rd *r, const cJSON *v)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, "spec");
	const cJSON *ranges = cJSON_GetObjectItemCaseSensitive(v, "ranges");
	const cJSON *mr = cJSON_GetObjectItemCaseSensitive(v, "max_running");
	const cJSON *it;
	uint32_t n = 0;
	uint64_t x = 0;

	if (!cJSON_IsObject(v) || !cJSON_IsString(s) || !cJSON_IsArray(ranges))
		return bad(r, "array", "must be {spec, ranges[, max_running]}");
	n = (uint32_t)cJSON_GetArraySize(ranges);
	r->spec->array = hb_jobspec_strdup(r->spec, s->valuestring);
	r->spec->array_ranges = hb_arena_alloc(
		&r->spec->arena, (n ? n : 1) * sizeof(struct hb_range));
	if (!r->spec->array || !r->spec->array_ranges)
		return hb_err_set(r->err, HB_ENOMEM, NULL, 0, "out of memory");
	n = 0;
	cJSON_ArrayForEach (it, ranges) {
		uint64_t a, b, c;

		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3 ||
		    get_uint(r, cJSON_GetArrayItem(it, 0), "array.ranges",
			     UINT32_MAX, &a) ||
		    get_uint(r, cJSON_GetArrayItem(it, 1), "array.ranges",
			     UINT32_MAX, &b) ||
		    get_uint(r, cJSON_GetArrayItem(it, 2), "array.ranges",
			     UINT32_MAX, &c) ||
		    c == 0 || b < a)
			return bad(r, "array.ranges",
				   "each range must be [start, end, step>0]");
		r->spec->array_ranges[n].start = (uint32_t)a;
		r->spec->array_ranges[n].end = (uint32_t)b;
		r->spec->array_ranges[n].step = (uint32_t)c;
		n++;
	}
	r->spec->narray_ranges = n;
	if (mr) {
		if (get_uint(r, mr, "array.max_running", UINT32_MAX, &x))
			return HB_EINVAL;
		r->spec->array_max_running = (uint32_t)x;
	}
	hb_jobspec_set_prov(r->spec, HB_F_ARRAY, derived);
	return 0;
}

static int read_env(struct rd *r, const cJSON *v)
{
	const cJSON *it;

	if (!cJSON_IsArray(v))
		return bad(r, "env", "must be an array of {name, value}");
	cJSON_ArrayForEach (it, v) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
		const cJSON *val =
			cJSON_GetObjectItemCaseSensitive(it, "value");

		if (!cJSON_IsString(n) || !n->valuestring[0] ||
		    (val && !cJSON_IsString(val)))
			return bad(r, "env",
				   "must be an array of {name, value} with "
				   "non-empty names");
		if (hb_jobspec_add_env(r->spec, n->valuestring,
				       val ? val->valuestring : NULL))
			return hb_err_set(r->err, HB_ENOMEM, NULL, 0,
					  "out of memory");
	}
	hb_jobspec_set_prov(r->spec, HB_F_ENV, derived);
	return 0;
}

static int read_chunks(struct rd *r, const cJSON *v)
{
	static const char *const keys[] = { "count", "ncpus", "mpiprocs",
					    "ompthreads", "ngpus" };
	const cJSON *it;
	uint32_t n, i = 0;

	if (!cJSON_IsArray(v))
		return bad(r, "chunks", "must be an array");
	n = (uint32_t)cJSON_GetArraySize(v);
	r->spec->chunks = hb_arena_alloc(&r->spec->arena,
					 (n ? n : 1) * sizeof(struct hb_chunk));
	if (!r->spec->chunks)
		return hb_err_set(r->err, HB_ENOMEM, NULL, 0, "out of memory");
	cJSON_ArrayForEach (it, v) {
		struct hb_chunk *c = &r->spec->chunks[i++];
		uint32_t *dst[] = { &c->count, &c->ncpus, &c->mpiprocs,
				    &c->ompthreads, &c->ngpus };
		uint64_t x = 0;

		for (size_t k = 0; k < NELEM(keys); k++) {
			if (get_uint(r,
				     cJSON_GetObjectItemCaseSensitive(it,
								      keys[k]),
				     "chunks", UINT32_MAX, &x))
				return HB_EINVAL;
			*dst[k] = (uint32_t)x;
		}
		if (get_uint(r, cJSON_GetObjectItemCaseSensitive(it, "mem_mb"),
			     "chunks", UINT64_MAX >> 12, &c->mem_mb))
			return HB_EINVAL;
	}
	r->spec->nchunks = n;
	hb_jobspec_set_prov(r->spec, HB_F_HETEROGENEOUS, derived);
	return 0;
}

static int read_bool(struct rd *r, const cJSON *v, const char *key, bool *out,
		     enum hb_field f)
{
	if (!cJSON_IsBool(v))
		return bad(r, key, "must be true or false");
	*out = cJSON_IsTrue(v);
	if (f != HB__F_COUNT)
		hb_jobspec_set_prov(r->spec, f, derived);
	return 0;
}

/* "fabric": "rdma", "fabric_why": "...", "fabric_inferred": true.  The
 * reason is user text that reaches the daemon's messages: printable, one
 * line, at most HB_FABRIC_WHY_MAX bytes. */
static int read_fabric(struct rd *r, const cJSON *it)
{
	struct hb_jobspec *spec = r->spec;
	const char *key = it->string;
	bool b;
	int f;

	if (!strcmp(key, "fabric_inferred"))
		return read_bool(r, it, key, &spec->fabric_inferred,
				 HB__F_COUNT);
	if (!cJSON_IsString(it))
		return bad(r, key, "must be a string");
	if (!strcmp(key, "fabric")) {
		if ((f = hb_fabric_parse(it->valuestring)) < 0)
			return bad(r, key, "must be auto, tcp or rdma");
		spec->fabric = (uint8_t)f;
		hb_jobspec_set_prov(spec, HB_F_FABRIC, derived);
		return 0;
	}
	b = strlen(it->valuestring) <= HB_FABRIC_WHY_MAX;
	for (const char *p = it->valuestring; b && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			b = false;
	if (!b)
		return hb_err_set(r->err, HB_EINVAL, r->name, 0,
				  "%s: must be one printable line of at most "
				  "%d bytes",
				  key, HB_FABRIC_WHY_MAX);
	if (!(spec->fabric_why = hb_jobspec_strdup(spec, it->valuestring)))
		return hb_err_set(r->err, HB_ENOMEM, NULL, 0, "out of memory");
	return 0;
}

static int read_key(struct rd *r, const cJSON *it)
{
	const char *key = it->string;
	struct hb_jobspec *spec = r->spec;
	uint64_t x = 0;
	bool b;
	int i;

	for (size_t k = 0; k < NELEM(str_fields); k++) {
		if (strcmp(key, str_fields[k].key))
			continue;
		if (!cJSON_IsString(it))
			return bad(r, key, "must be a string");
		*(const char **)((char *)spec + str_fields[k].off) =
			hb_jobspec_strdup(spec, it->valuestring);
		if (!*(const char **)((char *)spec + str_fields[k].off))
			return hb_err_set(r->err, HB_ENOMEM, NULL, 0,
					  "out of memory");
		hb_jobspec_set_prov(spec, str_fields[k].field, derived);
		return 0;
	}
	for (size_t k = 0; k < NELEM(u32_fields); k++) {
		if (strcmp(key, u32_fields[k].key))
			continue;
		if (get_uint(r, it, key, UINT32_MAX, &x))
			return HB_EINVAL;
		*(uint32_t *)((char *)spec + u32_fields[k].off) = (uint32_t)x;
		hb_jobspec_set_prov(spec, u32_fields[k].field, derived);
		return 0;
	}
	if (!strcmp(key, "kind")) {
		if (!cJSON_IsString(it) || strcmp(it->valuestring, "jobspec"))
			return bad(r, key, "must be \"jobspec\"");
		return 0;
	}
	if (!strcmp(key, "source_name"))
		return cJSON_IsString(it) ? 0 : bad(r, key, "must be a string");
	if (!strcmp(key, "shape")) /* derived: recomputed, not read */
		return cJSON_IsObject(it) ? 0 : bad(r, key, "must be an object");
	if (!strcmp(key, "source")) {
		if (!cJSON_IsString(it) ||
		    (i = lookup(source_names, NELEM(source_names),
				it->valuestring)) < 0)
			return bad(r, key, "unknown source kind");
		spec->source = (uint8_t)i;
		return 0;
	}
	if (!strcmp(key, "mem"))
		return read_mem(r, it);
	if (!strcmp(key, "gpus"))
		return read_gpus(r, it);
	if (!strcmp(key, "array"))
		return read_array(r, it);
	if (!strcmp(key, "env"))
		return read_env(r, it);
	if (!strcmp(key, "chunks"))
		return read_chunks(r, it);
	if (!strcmp(key, "exclusive"))
		return read_bool(r, it, key, &spec->exclusive, HB_F_EXCLUSIVE);
	if (!strcmp(key, "join_output"))
		return read_bool(r, it, key, &spec->join_output, HB_F_ERROR);
	if (!strcmp(key, "export_all"))
		return read_bool(r, it, key, &spec->export_all, HB_F_EXPORT);
	if (!strcmp(key, "requeue")) {
		if (read_bool(r, it, key, &b, HB_F_REQUEUE))
			return HB_EINVAL;
		spec->requeue = b;
		return 0;
	}
	if (!strcmp(key, "time_limit")) {
		if (get_time(r, it, key, &spec->time_limit))
			return HB_EINVAL;
		hb_jobspec_set_prov(spec, HB_F_TIME_LIMIT, derived);
		return 0;
	}
	if (!strcmp(key, "time_min")) {
		if (get_time(r, it, key, &spec->time_min))
			return HB_EINVAL;
		hb_jobspec_set_prov(spec, HB_F_TIME_MIN, derived);
		return 0;
	}
	if (!strcmp(key, "mpi")) {
		i = cJSON_IsString(it) ? (int)hb_mpi_impl_parse(it->valuestring)
				       : HB_MPI_UNKNOWN;
		if (i == HB_MPI_UNKNOWN)
			return bad(r, key,
				   "must be OpenMPI, Intel, MPICH or MVAPICH2");
		spec->mpi = (uint8_t)i;
		hb_jobspec_set_prov(spec, HB_F_MPI, derived);
		return 0;
	}
	if (!strcmp(key, "fabric") || !strcmp(key, "fabric_why") ||
	    !strcmp(key, "fabric_inferred"))
		return read_fabric(r, it);
	if (!strcmp(key, "mpi_lines"))
		return get_str_list(r, it, key, hb_jobspec_add_mpi_line);
	if (!strcmp(key, "modules"))
		return get_str_list(r, it, key, hb_jobspec_add_module);
	if (!strcmp(key, "data")) {
		hb_jobspec_set_prov(spec, HB_F_DATA, derived);
		return get_str_list(r, it, key, hb_jobspec_add_data);
	}
	if (!strcmp(key, "script")) {
		size_t n;

		if (!cJSON_IsString(it))
			return bad(r, key, "must be a string");
		n = strlen(it->valuestring);
		if (n > UINT32_MAX)
			return bad(r, key, "too long");
		spec->script = hb_jobspec_strndup(spec, it->valuestring, n);
		spec->script_len = (uint32_t)n;
		hb_jobspec_set_prov(spec, HB_F_SCRIPT, derived);
		return 0;
	}
	return bad(r, key, "unknown key");
}

int hb_jobspec_from_json(const cJSON *doc, struct hb_jobspec *spec,
			 struct hb_err *err)
{
	struct rd r = { spec, err, spec->source_name };
	const cJSON *it;
	int rc;

	if (!cJSON_IsObject(doc))
		return hb_err_set(err, HB_EINVAL, r.name, 0,
				  "a jobspec must be a JSON object");
	cJSON_ArrayForEach (it, doc) {
		/* A key given twice is ambiguous: refuse it. */
		for (const cJSON *p = doc->child; p != it; p = p->next)
			if (p->string && it->string &&
			    !strcmp(p->string, it->string))
				return bad(&r, it->string, "given twice");
		if ((rc = read_key(&r, it)))
			return rc;
	}
	if (spec->nodes_max && spec->nodes_min > spec->nodes_max)
		return bad(&r, "nodes_min", "is larger than nodes_max");
	return 0;
}

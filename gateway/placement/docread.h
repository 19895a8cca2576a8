/*
 * docread.h - reading policy and snapshot documents, for policy.c and
 * snapshot.c: mappings checked against the keys they may hold, typed
 * values, and errors "FILE:LINE: key.path: what is wrong".  Not a public
 * header.
 *
 * An hb_rd_get_*() that takes obj and key reads the member key of obj
 * (path names obj in messages): absent or null leaves *out alone and
 * returns 0; a value of the wrong type or out of bounds is an error.
 * Errors are returned: HB_EINVAL with the message in r->err, or
 * HB_ENOMEM when a copy fails (the caller says so).
 */
#ifndef HB_PLACEMENT_DOCREAD_H
#define HB_PLACEMENT_DOCREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"
#include "hpcbridge/snapshot.h"

/* A document being read. */
struct hb_rd {
	const char *file;   /* its name, for messages */
	struct hb_err *err; /* where errors go */
	struct hb_arena *a; /* where names are copied */
};

/* Room for a key path ("slurm.partitions.gpu.rates") in messages. */
#define HB_RD_PATH_MAX 256

/* The names of enum hb_period, NULL-ended (values.c): the words a budget
 * period or a spend entry may be. */
extern const char *const hb_period_names[];

/* Set "FILE:LINE: path: message" (LINE: at's) in r->err; HB_EINVAL. */
int hb_rd_fail(struct hb_rd *r, const cJSON *at, const char *path,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* path + "." + key into buf (HB_RD_PATH_MAX bytes); returns buf. */
const char *hb_rd_join(char *buf, const char *path, const char *key);
/* "a string", "a number", ...: what it is, for messages. */
const char *hb_rd_type_name(const cJSON *it);
/* obj must be a mapping holding only keys from allowed (NULL-ended;
 * NULL: any key). */
int hb_rd_mapping(struct hb_rd *r, const cJSON *obj, const char *path,
		  const char *const *allowed);
/* The member key of obj, or NULL when absent or null. */
const cJSON *hb_rd_member(const cJSON *obj, const char *key);
/* A scalar's text (numbers written into buf); NULL for anything else. */
const char *hb_rd_scalar(const cJSON *it, char *buf, size_t size);
/* Whether s is a name: 1-128 printable characters, no whitespace. */
int hb_rd_name_ok(const char *s);
/* The name it, copied into r's arena. */
int hb_rd_get_name(struct hb_rd *r, const cJSON *it, const char *path,
		   const char **out);
/* s as a GPU type or MIG profile, lower-cased into r's arena ("*" as
 * HB_GPU_ANY). */
int hb_rd_gpu_name(struct hb_rd *r, const cJSON *at, const char *path,
		   const char *s, const char **out);

int hb_rd_get_bool(struct hb_rd *r, const cJSON *obj, const char *path,
		   const char *key, bool *out);
int hb_rd_get_uint(struct hb_rd *r, const cJSON *obj, const char *path,
		   const char *key, uint64_t max, uint64_t *out);
int hb_rd_get_u32(struct hb_rd *r, const cJSON *obj, const char *path,
		  const char *key, uint32_t max, uint32_t *out);
int hb_rd_get_money(struct hb_rd *r, const cJSON *obj, const char *path,
		    const char *key, hb_money *out);
int hb_rd_get_duration(struct hb_rd *r, const cJSON *obj, const char *path,
		       const char *key, int64_t *out);
int hb_rd_get_size(struct hb_rd *r, const cJSON *obj, const char *path,
		   const char *key, uint64_t *out);
/* A size, rounded up to MiB. */
int hb_rd_get_mem_mb(struct hb_rd *r, const cJSON *obj, const char *path,
		     const char *key, uint64_t *out);
/* "20%" or a number of percent, in basis points, at most max_bp. */
int hb_rd_get_percent(struct hb_rd *r, const cJSON *obj, const char *path,
		      const char *key, int32_t max_bp, int32_t *out);
/* One of words[] (NULL-ended); *out is its index. */
int hb_rd_get_word(struct hb_rd *r, const cJSON *obj, const char *path,
		   const char *key, const char *const *words, uint8_t *out);
/* A list of names (or GPU types when gpu is set), each once, into r's
 * arena; one name alone is a list of one. */
int hb_rd_get_names(struct hb_rd *r, const cJSON *obj, const char *path,
		    const char *key, bool gpu, const char ***out,
		    uint32_t *nout);

#endif

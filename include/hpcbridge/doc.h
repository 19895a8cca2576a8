/*
 * doc.h - YAML and JSON documents as cJSON trees.
 *
 * Manifests and configuration are read into cJSON whether they were written
 * in YAML or JSON, and emitters build cJSON trees that are written out as
 * either.  YAML support is the subset Kubernetes manifests use: block and
 * flow collections, plain/quoted/literal/folded scalars, multi-document
 * streams, YAML 1.2 core-schema scalars (no aliases, no custom tags).
 * YAML goes through libyaml's event parser; input that starts with '{' or
 * '[' goes through a JSON reader of its own (faster, and it takes what
 * YAML cannot: surrogate-pair escapes, keys longer than 1024 characters),
 * falling back to YAML when it is a YAML flow document rather than JSON.
 * Both apply the same checks and record the same source lines.
 */
#ifndef HPCBRIDGE_DOC_H
#define HPCBRIDGE_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "hpcbridge/buf.h"
#include "hpcbridge/error.h"

struct cJSON;

/* Largest document accepted. */
#define HB_DOC_MAX (4u * 1024 * 1024)
/* Deepest nesting accepted. */
#define HB_DOC_MAX_DEPTH 64

/*
 * Parse one document (YAML or JSON; JSON is YAML) of len bytes named name.
 * A stream of several documents is HB_EINVAL unless it holds exactly one
 * non-empty document.  Caller frees *out with cJSON_Delete().
 * Errors read "NAME:LINE: message".
 *
 * Plain scalars are typed by the YAML 1.2 core schema: null, ~ and empty
 * are null; true/True/TRUE and false/False/FALSE are booleans; decimal,
 * 0o and 0x integers and floats (.inf, .nan too) are numbers.  Quoted and
 * block scalars are strings.  The tags !!str, !!int, !!float, !!bool,
 * !!null, !!map, !!seq and "!" are honoured; any other tag is an error.
 * Also errors: aliases (anchors alone are ignored), duplicate mapping keys,
 * non-scalar keys, nesting deeper than HB_DOC_MAX_DEPTH, input larger than
 * HB_DOC_MAX (HB_ETOOBIG), NUL bytes, and integers beyond 2^53 in
 * magnitude (HB_ERANGE; they would lose precision as a double).
 * An empty input (or only empty documents) gives a cJSON null.
 */
int hb_doc_parse(const char *buf, size_t len, const char *name,
		 struct cJSON **out, struct hb_err *err);

/*
 * NULL if s[0..n) is exactly one JSON value (RFC 8259), with optional
 * whitespace around it; otherwise a short static description of the first
 * problem ("unterminated string", "control character in a string",
 * "invalid UTF-8 in a string", "invalid escape in a string", "lone
 * surrogate in a string", "invalid number", "invalid value", "expected a
 * string key", "expected ':'", "expected ',' or '}'" (or ']'), "trailing
 * comma", "nesting deeper than 64 levels", "unexpected content after the
 * value", "unexpected end of input") and *at (when at is not NULL) = its
 * byte offset.  An empty or all-blank input is "unexpected end of
 * input" at n (a NULL s with n > 0 is "no input" at 0).
 *
 * The grammar is hb_doc_parse()'s JSON reader's, nesting limit included,
 * but only the syntax: duplicate keys, \u0000, integers beyond 2^53 and
 * numbers too long or too large for a double pass here (hb_doc_parse()
 * refuses them).  A NUL byte is an error wherever it is.  No allocation,
 * and a few instructions per byte, so a store can check every JSON text
 * it writes.
 */
const char *hb_json_check(const char *s, size_t n, size_t *at);

/* The valid UTF-8 sequence at s, within n bytes (RFC 3629: no overlong
 * form, no surrogate, nothing past U+10FFFF): its length, and its code
 * point in *cp unless cp is NULL; 0 when there is none. */
size_t hb_utf8_dec(const unsigned char *s, size_t n, uint32_t *cp);
/* How many of the n bytes at s are valid UTF-8 from the start: n when all
 * are, else the offset of the first byte that starts no valid sequence.
 * A NUL byte counts as valid (U+0000). */
size_t hb_utf8_span(const char *s, size_t n);

/* Parse a stream of YAML documents; *out is a cJSON array of them.
 * Empty (null) documents, as between two "---" lines, are skipped. */
int hb_doc_parse_stream(const char *buf, size_t len, const char *name,
			struct cJSON **out, struct hb_err *err);

/*
 * Append doc as pretty JSON (2-space indent) with a trailing newline: keys
 * in tree order, integral numbers up to 2^53 as integers, other numbers in
 * the shortest form that reads back exactly, strings escaped per RFC 8259
 * (control characters, DEL, U+0080-U+009F, U+2028/9, U+FEFF and
 * U+FFFE/F as \u escapes; other valid UTF-8 as is; an invalid UTF-8 byte
 * becomes U+FFFD).  HB_EUNSUP for NaN or infinity (JSON has none) or a
 * cJSON_Raw node; HB_ETOOBIG past HB_DOC_MAX_DEPTH or the buffer's cap.
 * On error out is left as it was.  No allocation beyond out growing.
 */
int hb_doc_write_json(const struct cJSON *doc, struct hb_buf *out);

/*
 * The same document on one line with no whitespace at all, as
 * cJSON_PrintUnformatted() lays it out (no trailing newline), but with
 * this writer's numbers and escapes.  Errors as for hb_doc_write_json().
 */
int hb_doc_write_json_compact(const struct cJSON *doc, struct hb_buf *out);

/*
 * Append doc as block YAML, 2-space indent, in the kubectl style (a
 * sequence under a key is not indented; "- key: v" for mappings in
 * sequences; {} and [] for empty collections).  Strings are double-quoted
 * whenever a plain scalar would read back as anything else in YAML 1.2 or
 * 1.1 (numbers, booleans incl. yes/no/on/off, null, ~, dates, leading
 * indicators, ": ", " #", leading/trailing spaces, empty, special
 * characters); multi-line strings use literal blocks "|", "|-" or "|+"
 * when one can carry them.  Reading the output back with hb_doc_parse()
 * gives an equal tree.  NaN and infinities are written .nan/.inf.
 * Errors and allocation as for hb_doc_write_json().
 */
int hb_doc_write_yaml(const struct cJSON *doc, struct hb_buf *out);

/*
 * The streaming writer: a document given as events (open an object or an
 * array, close it, a string, number, boolean or null) is written straight
 * into a buffer as JSON or YAML, byte for byte what hb_doc_write_json()
 * and hb_doc_write_yaml() write for the same tree, or built as a cJSON
 * tree (HB_EMIT_TREE), so one piece of code that emits a document serves
 * both the text and the tree.
 *
 * key names the value inside an object and is ignored elsewhere (NULL
 * reads as "").  Strings are n bytes with no NUL among them (the tree
 * keeps C strings).  Every call returns the writer's sticky code: the
 * first error (HB_ENOMEM, HB_ETOOBIG past HB_DOC_MAX_DEPTH or the
 * buffer's cap, HB_EUNSUP for NaN or infinity in JSON, HB_EINVAL for
 * events that do not make one document) stays, and later events do
 * nothing; callers may check only hb_emit_done().  The writer does no
 * allocation of its own beyond hb_emit_new() (the buffer grows; the tree
 * back end allocates through cJSON).
 */
/* HB_EMIT_JSON_COMPACT writes what hb_doc_write_json_compact() writes
 * (one line, no trailing newline). */
enum hb_emit_format {
	HB_EMIT_JSON,
	HB_EMIT_YAML,
	HB_EMIT_TREE,
	HB_EMIT_JSON_COMPACT
};
struct hb_emit;

/* A writer appending to out (borrowed until hb_emit_free(); NULL for
 * HB_EMIT_TREE).  NULL when out of memory or given nonsense.  Free with
 * hb_emit_free(). */
struct hb_emit *hb_emit_new(enum hb_emit_format fmt, struct hb_buf *out);
void hb_emit_free(struct hb_emit *e);

int hb_emit_obj(struct hb_emit *e, const char *key);
int hb_emit_arr(struct hb_emit *e, const char *key);
/* Close the innermost open object or array. */
int hb_emit_end(struct hb_emit *e);
int hb_emit_str(struct hb_emit *e, const char *key, const char *s);
int hb_emit_strn(struct hb_emit *e, const char *key, const char *s, size_t n);
int hb_emit_num(struct hb_emit *e, const char *key, double v);
int hb_emit_bool(struct hb_emit *e, const char *key, int v);
int hb_emit_null(struct hb_emit *e, const char *key);
/* s as a string, or null when s is NULL. */
int hb_emit_str_or_null(struct hb_emit *e, const char *key, const char *s);
/* The events of a whole tree (members keep their own keys); v is
 * borrowed.  cJSON_Raw nodes are HB_EUNSUP, as for the tree writers. */
int hb_emit_tree(struct hb_emit *e, const char *key, const struct cJSON *v);
/* The sticky code so far. */
int hb_emit_status(const struct hb_emit *e);

/*
 * End the document: it must be exactly one complete value.  JSON gets its
 * trailing newline.  Returns the sticky code; on error the buffer is left
 * as it was before the document's first event.  The writer is then ready
 * for another document, appended after this one.
 */
int hb_emit_done(struct hb_emit *e);
/* HB_EMIT_TREE: the tree of the document hb_emit_done() last ended
 * without error (caller frees with cJSON_Delete()); HB_EINVAL when there
 * is none.  A tree not taken is freed by the next hb_emit_done() or by
 * hb_emit_free(). */
int hb_emit_take(struct hb_emit *e, struct cJSON **tree);

/*
 * out ends with a compact JSON object (hb_emit's HB_EMIT_JSON_COMPACT):
 * add key (written as it is: no character that needs escaping) with
 * json, len bytes of JSON text taken as they are, as its last member.
 * 0; HB_EINVAL when out ends with no '}'; HB_ENOMEM or HB_ETOOBIG (out
 * then ends with no object).
 */
int hb_doc_append_member(struct hb_buf *out, const char *key,
			 const char *json, size_t len);

/* Append an array of documents as a YAML stream, each one preceded by
 * "---".  hb_doc_parse_stream() reads it back (null documents aside). */
int hb_doc_write_yaml_stream(const struct cJSON *docs, struct hb_buf *out);

/*
 * The 1-based source line of a node read by hb_doc_parse*(), or 0 when
 * unknown (nodes built in code).  For an object member it is the line of
 * its key; for a sequence element or a root, the line where it starts.
 *
 * Where it lives: cJSON has no spare field, so the line is stashed in a
 * field cJSON does not use for that node type.  Numbers keep it as a
 * decimal string in valuestring (freed by cJSON_Delete, copied by
 * cJSON_Duplicate, ignored by cJSON_Compare and cJSON_Print); every other
 * type keeps it in valuedouble.  So: read numbers with valuedouble (or
 * cJSON_GetNumberValue; valueint is set as cJSON sets it), never test
 * valuestring without cJSON_IsString() first, and never read valuedouble
 * of a non-number.  Booleans also have valueint 1 for true, as cJSON's own
 * parser gives them.
 */
int hb_doc_line(const struct cJSON *item);

/*
 * A scope in which the cJSON nodes (and strings cJSON allocates) made by
 * this thread come from arena a instead of malloc: building a manifest
 * then costs a few bump allocations instead of hundreds of mallocs, and
 * cJSON_Delete() of such a tree frees nothing (it only walks it).  Memory cJSON allocated before
 * the scope, or on another thread, is still freed normally inside it.
 * Every tree made in the scope must be dropped (deleted or abandoned)
 * before hb_doc_scope_end(); after it, hb_arena_reset(a) or
 * hb_arena_free(a) reclaims the memory.  Scopes do not nest.  The first
 * call installs cJSON allocation hooks for the process; outside a scope
 * they behave as malloc and free.
 */
void hb_doc_scope_begin(struct hb_arena *a);
void hb_doc_scope_end(void);

/* Follow a dotted path ("spec.mpiReplicaSpecs.Worker") through objects;
 * NULL if any step is missing.  Keys are case-sensitive and cannot contain
 * '.'.  "" gives doc itself.  The result is borrowed from doc. */
struct cJSON *hb_doc_get(const struct cJSON *doc, const char *path);

/* The string member key of obj (a whole key: it may contain '.', as label
 * keys do), or NULL when obj is not an object, has no such member, or it
 * is not a string.  Borrowed from obj. */
const char *hb_doc_str(const struct cJSON *obj, const char *key);

/* ---- Typed fields (translators/base/doc_get.c) ------------------------ */

/*
 * The members of an object a request, a reply or a file gives us, each
 * checked for its type and bounds.  Absent and null are the same, and
 * fine unless flags hold HB_DOC_REQUIRED; obj need not be an object
 * (anything else has no members).  *out is written only when the member
 * is there and good, so set the default first.  A bad member is
 * HB_EINVAL with "KEY: why" in err; err may be NULL for a caller that
 * words its own message.
 */
#define HB_DOC_REQUIRED 0x1u /* absent or null: "KEY: required" */
#define HB_DOC_NONEMPTY 0x2u /* "": "KEY: must not be empty" */
/* A string with a control character (below 0x20, or DEL) is "KEY: must
 * not hold control characters"; HB_DOC_LINES lets newline and tab pass. */
#define HB_DOC_ONELINE 0x4u
#define HB_DOC_LINES   0x8u

/* A string of at most max bytes ("KEY: must be a string", "KEY: longer
 * than MAX bytes"); borrowed from obj. */
int hb_doc_get_str(const struct cJSON *obj, const char *key, size_t max,
		   unsigned flags, const char **out, struct hb_err *err);
/* A whole number from min to max ("KEY: must be an integer", "KEY: must
 * be an integer from MIN to MAX"). */
int hb_doc_get_i64(const struct cJSON *obj, const char *key, int64_t min,
		   int64_t max, unsigned flags, int64_t *out,
		   struct hb_err *err);
int hb_doc_get_u64(const struct cJSON *obj, const char *key, uint64_t min,
		   uint64_t max, unsigned flags, uint64_t *out,
		   struct hb_err *err);
/* true or false, as 1 or 0 ("KEY: must be true or false"). */
int hb_doc_get_bool(const struct cJSON *obj, const char *key, unsigned flags,
		    int *out, struct hb_err *err);
/* An array of strings ("KEY: must be a list of strings"); borrowed. */
int hb_doc_get_strv(const struct cJSON *obj, const char *key, unsigned flags,
		    const struct cJSON **out, struct hb_err *err);
/* An object ("KEY: must be an object"); borrowed. */
int hb_doc_get_obj(const struct cJSON *obj, const char *key, unsigned flags,
		   const struct cJSON **out, struct hb_err *err);

/* What a node is, for messages: "a string", "a number", "a boolean",
 * "null", "a list" or "a mapping". */
const char *hb_doc_type_name(const struct cJSON *it);

#endif

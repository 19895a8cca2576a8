/*
 * testutil.h - helpers shared by the cmocka unit tests.
 */
#ifndef HB_TESTUTIL_H
#define HB_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Read a whole file; *len gets its size.  Fails the test if it cannot.
 * Caller frees with free(). */
char *hb_test_read_file(const char *path, size_t *len);

/* Path under the source tree or the shared/ folder, in a static buffer
 * that the next call overwrites. */
const char *hb_test_src_path(const char *rel);
const char *hb_test_shared_path(const char *rel);

/*
 * Manifest tests.  hb_test_load_crds() loads the three reference CRDs
 * (MPIJob, TrainJob, ClusterTrainingRuntime); hb_test_assert_valid()
 * fails the test unless doc passes them strictly, with the controllers'
 * rules.
 */
struct cJSON;
struct hb_config;
struct hb_jobspec;
struct hb_schema_set;
struct hb_schema_set *hb_test_load_crds(void);
void hb_test_assert_valid(const struct hb_schema_set *set,
			  const struct cJSON *doc);

/* Cut " at FILE:LINE" from a jobspec JSON's fabric_why: the place moves
 * when a script is written again, as provenance does. */
void hb_test_fabric_why_unplaced(struct cJSON *j);

/* The jobspec's JSON form without where it came from (source,
 * source_name, fabric_why's place).  Caller frees with cJSON_Delete(). */
struct cJSON *hb_test_canon(const struct hb_jobspec *s);

/*
 * The round trip both manifest kinds owe: jobspec a -> manifest of kind
 * (HB_SRC_MPIJOB or HB_SRC_TRAINJOB, array element idx, or -1) -> YAML
 * text -> jobspec gives back a's canonical form, and emitting what was
 * read gives the same manifest.  set, when not NULL, validates the
 * manifest.  context (the script, a seed) is printed on failure.
 */
void hb_test_manifest_round_trip(const struct hb_jobspec *a,
				 const struct hb_config *cfg, int kind,
				 int64_t idx, const struct hb_schema_set *set,
				 const char *context);

/*
 * Building jobspecs as a parser would: hb_test_dir() records a directive
 * that set field f, at the next line (hb_test_lineno, which a test resets
 * for each new jobspec), and sets f's origin to it.  HB_TEST_SET_STR and
 * HB_TEST_SET_NUM set a member and record the directive.
 */
extern uint32_t hb_test_lineno;
void hb_test_dir(struct hb_jobspec *s, int f, const char *text);

/*
 * A store in a fresh directory under /tmp (name: its prefix, e.g.
 * "hb-ledger-test"): hb_test_store_open() makes the directory and opens
 * dir/state.db; hb_test_store_close() closes it and removes the file,
 * its -wal and -shm and the directory.  0, or -1 with nothing left.
 */
struct hb_store;
struct hb_test_store {
	char dir[64], path[128];
	struct hb_store *st;
};
int hb_test_store_open(struct hb_test_store *t, const char *name);
void hb_test_store_close(struct hb_test_store *t);

#define HB_TEST_SET_STR(s, member, f, v)                                       \
	do {                                                                   \
		(s)->member = hb_jobspec_strdup((s), (v));                     \
		hb_test_dir((s), (f), #member "=" v);                          \
	} while (0)
#define HB_TEST_SET_NUM(s, member, f, v)                                       \
	do {                                                                   \
		(s)->member = (v);                                             \
		hb_test_dir((s), (f), #member "=" #v);                         \
	} while (0)

#endif

/*
 * test_fabric_util.h - what the fabric tests share: find a finding by
 * its code and check its level, printing every finding when it is not
 * there.
 */
#ifndef HB_TEST_FABRIC_UTIL_H
#define HB_TEST_FABRIC_UTIL_H

#include "hpcbridge/fabric.h"
#include "testutil.h"

static inline const struct hb_fab_finding *
must(const struct hb_fab_findings *f, const char *code,
     enum hb_fab_level level)
{
	const struct hb_fab_finding *x = hb_fab_find(f, code);

	if (!x) {
		for (size_t i = 0; i < f->n; i++)
			print_message("  %s %s: %s\n",
				      hb_fab_level_name(f->v[i].level),
				      f->v[i].code, f->v[i].msg);
		fail_msg("no finding %s", code);
	}
	assert_int_equal(x->level, level);
	return x;
}

#endif

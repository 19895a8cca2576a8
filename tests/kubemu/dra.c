/*
 * dra.c - Dynamic Resource Allocation (resource.k8s.io/v1): the API
 * server's checks of ResourceClaimTemplates, DeviceClasses and
 * ResourceSlices, of a pod's resourceClaims, and the resource claim
 * controller's part in a pod's start: a pod whose template does not
 * exist stays Pending, with the controller's Warning event, until it
 * does.
 *
 * No ResourceClaim is made and nothing is allocated: a claim whose
 * template exists counts as met.  The messages and field paths are the
 * API server's (pkg/apis/resource/validation, pkg/apis/core/validation).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kubemu.h"

static const cJSON *get_path(const cJSON *o, const char *a, const char *b)
{
	return km_get(km_get(o, a), b);
}

static void check_selectors(const cJSON *sels, const char *base,
			    struct km_causes *c)
{
	const cJSON *x;
	char f[200];
	int i = 0;

	cJSON_ArrayForEach (x, sels) {
		const char *e = km_str(km_get(x, "cel"), "expression");
		bool cel = cJSON_IsObject(km_get(x, "cel"));

		snprintf(f, sizeof(f), "%s.selectors[%d].cel%s", base, i++,
			 cel ? ".expression" : "");
		if (!cel || !e || !*e)
			km_cause(c, f, "Required value");
	}
}

/* A request's "exactly" (v1): the class, the mode and its count, after
 * the defaults (ExactCount; a count of 0 or none is 1). */
static void check_exact(const cJSON *ex, const char *base, struct km_causes *c)
{
	const char *cls = km_str(ex, "deviceClassName");
	const char *mode = km_str(ex, "allocationMode");
	const cJSON *count = km_get(ex, "count");
	char f[200];

	snprintf(f, sizeof(f), "%s.deviceClassName", base);
	km_cause_dns(c, f, cls, 0);
	double n = cJSON_IsNumber(count) ? count->valuedouble : 0;

	snprintf(f, sizeof(f), "%s.allocationMode", base);
	if (mode && strcmp(mode, "ExactCount") && strcmp(mode, "All"))
		km_cause(c, f,
			 "Unsupported value: \"%.64s\": supported values: "
			 "\"All\", \"ExactCount\"",
			 mode);
	snprintf(f, sizeof(f), "%s.count", base);
	if (mode && !strcmp(mode, "All") && n != 0)
		km_cause(c, f,
			 "Invalid value: %g: must not be specified when "
			 "allocationMode is 'All'",
			 n);
	else if ((!mode || !strcmp(mode, "ExactCount")) && n < 0)
		km_cause(c, f, "Invalid value: %g: must be greater than zero",
			 n);
	check_selectors(km_get(ex, "selectors"), base, c);
}

/* Whether name is one of the requests. */
static int has_request(const cJSON *reqs, const char *name)
{
	const cJSON *x;

	cJSON_ArrayForEach (x, reqs)
		if (km_str(x, "name") && !strcmp(km_str(x, "name"), name))
			return 1;
	return 0;
}

static void check_config(const cJSON *cfgs, const cJSON *reqs, const char *base,
			 struct km_causes *c)
{
	const cJSON *x, *r;
	char f[200];
	int i = 0;

	cJSON_ArrayForEach (x, cfgs) {
		const cJSON *op = km_get(x, "opaque");
		int j = 0;

		cJSON_ArrayForEach (r, km_get(x, "requests")) {
			snprintf(f, sizeof(f), "%s.config[%d].requests[%d]",
				 base, i, j++);
			if (!cJSON_IsString(r) ||
			    !has_request(reqs, r->valuestring))
				km_cause(c, f,
					 "Invalid value: \"%.64s\": must be "
					 "the name of a request in the claim "
					 "or the name of a request and a "
					 "subrequest separated by '/'",
					 cJSON_IsString(r) ? r->valuestring
							   : "");
		}
		snprintf(f, sizeof(f), "%s.config[%d].opaque", base, i);
		if (!cJSON_IsObject(op))
			km_cause(c, f, "Required value");
		if (cJSON_IsObject(op)) {
			snprintf(f, sizeof(f), "%s.config[%d].opaque.driver",
				 base, i);
			if (!km_str(op, "driver"))
				km_cause(c, f, "Required value");
			snprintf(f, sizeof(f),
				 "%s.config[%d].opaque.parameters", base, i);
			if (!cJSON_IsObject(km_get(op, "parameters")))
				km_cause(c, f, "Required value");
		}
		i++;
	}
}

/* A ResourceClaimSpec at base ("spec.spec"). */
static void check_claim_spec(const cJSON *spec, const char *base,
			     struct km_causes *c)
{
	const cJSON *devs = km_get(spec, "devices");
	const cJSON *reqs = km_get(devs, "requests"), *x, *y;
	char f[200], b[160];
	int i = 0;

	cJSON_ArrayForEach (x, reqs) {
		const char *n = km_str(x, "name");
		int dup = 0, first;

		snprintf(f, sizeof(f), "%s.devices.requests[%d].name", base, i);
		km_cause_dns(c, f, n, 1);
		cJSON_ArrayForEach (y, reqs) {
			if (y == x)
				break;
			dup |= n && km_str(y, "name") &&
			       !strcmp(km_str(y, "name"), n);
		}
		if (dup)
			km_cause(c, f, "Duplicate value: \"%.64s\"", n);
		snprintf(b, sizeof(b), "%s.devices.requests[%d]", base, i);
		/* An empty firstAvailable is none. */
		first = cJSON_GetArraySize(km_get(x, "firstAvailable")) > 0;
		if (!km_get(x, "exactly") && !first)
			km_cause(c, b,
				 "Required value: exactly one of `exactly` or "
				 "`firstAvailable` is required");
		else if (km_get(x, "exactly") && first)
			km_cause(c, b,
				 "Invalid value: null: exactly one of "
				 "`exactly` or `firstAvailable` is required, "
				 "but multiple fields are set");
		else if (km_get(x, "exactly")) {
			snprintf(b, sizeof(b),
				 "%s.devices.requests[%d].exactly", base, i);
			check_exact(km_get(x, "exactly"), b, c);
		}
		i++;
	}
	snprintf(b, sizeof(b), "%s.devices", base);
	check_config(km_get(devs, "config"), reqs, b, c);
}

static void check_slice(const cJSON *spec, struct km_causes *c)
{
	static const char *const where[] = { "nodeName", "nodeSelector",
					     "allNodes",
					     "perDeviceNodeSelection" };
	const cJSON *pool = km_get(spec, "pool");
	const cJSON *count = km_get(pool, "resourceSliceCount");
	int n = 0;

	if (!km_str(spec, "driver"))
		km_cause(c, "spec.driver", "Required value");
	if (!km_str(pool, "name"))
		km_cause(c, "spec.pool.name", "Required value");
	if (!cJSON_IsNumber(count) || count->valuedouble < 1)
		km_cause(c, "spec.pool.resourceSliceCount",
			 "Invalid value: %g: must be greater than zero",
			 cJSON_IsNumber(count) ? count->valuedouble : 0.0);
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		n += km_get(spec, where[i]) != NULL;
	if (n != 1)
		km_cause(c, "spec",
			 "Invalid value: exactly one of `nodeName`, "
			 "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
			 "is required");
}

void km_dra_check(enum km_res r, const cJSON *obj, struct km_causes *c)
{
	const cJSON *spec = km_get(obj, "spec");

	switch (r) {
	case KM_RCTEMPLATE:
		if (!cJSON_IsObject(spec))
			km_cause(c, "spec", "Required value");
		else if (!cJSON_IsObject(km_get(spec, "spec")))
			km_cause(c, "spec.spec", "Required value");
		else
			check_claim_spec(km_get(spec, "spec"), "spec.spec", c);
		break;
	case KM_DEVCLASS:
		check_selectors(km_get(spec, "selectors"), "spec", c);
		break;
	case KM_RSLICE:
		if (!cJSON_IsObject(spec))
			km_cause(c, "spec", "Required value");
		else
			check_slice(spec, c);
		break;
	default:
		break;
	}
}

void km_dra_check_pod(const cJSON *pod, struct km_causes *c)
{
	const cJSON *spec = km_get(pod, "spec");
	const cJSON *claims = km_get(spec, "resourceClaims"), *x, *k;
	char f[200];
	int i = 0;

	cJSON_ArrayForEach (x, claims) {
		const char *n = km_str(x, "name");

		snprintf(f, sizeof(f), "spec.resourceClaims[%d]", i);
		if (!n || !km_dns_name(n, 1))
			km_cause(c, f,
				 "Invalid value: \"%.64s\": name must be "
				 "a DNS label",
				 n ? n : "");
		if (!km_str(x, "resourceClaimName") ==
		    !km_str(x, "resourceClaimTemplateName")) {
			/* The API server shows the entry as Go prints it. */
			char v[2][80];
			const char *keys[2] = { "resourceClaimName",
						"resourceClaimTemplateName" };

			for (int j = 0; j < 2; j++)
				snprintf(v[j], sizeof(v[j]),
					 km_str(x, keys[j]) ? "\"%.64s\""
							    : "null",
					 km_str(x, keys[j]));
			km_cause(c, f,
				 "Invalid value: {\"Name\":\"%.64s\","
				 "\"ResourceClaimName\":%s,"
				 "\"ResourceClaimTemplateName\":%s}: must "
				 "specify one of: `resourceClaimName`, "
				 "`resourceClaimTemplateName`",
				 n ? n : "", v[0], v[1]);
		}
		i++;
	}
	i = 0;
	cJSON_ArrayForEach (x, km_get(spec, "containers")) {
		int j = 0;

		cJSON_ArrayForEach (k, get_path(x, "resources", "claims")) {
			const char *n = km_str(k, "name");
			const cJSON *y;
			int found = 0;

			cJSON_ArrayForEach (y, claims)
				found |= n && km_str(y, "name") &&
					 !strcmp(km_str(y, "name"), n);
			snprintf(f, sizeof(f),
				 "spec.containers[%d].resources.claims[%d]", i,
				 j++);
			if (!found)
				km_cause(c, f, "Not found: \"%.64s\"",
					 n ? n : "");
		}
		i++;
	}
}

const char *km_dra_missing(struct km_ctx *ctx, const cJSON *pod, char *msg,
			   size_t cap)
{
	const cJSON *x;
	const char *ns = km_meta_str(pod, "namespace");

	cJSON_ArrayForEach (x, get_path(pod, "spec", "resourceClaims")) {
		const char *t = km_str(x, "resourceClaimTemplateName");
		struct km_obj *o;

		if (!t)
			continue;
		o = km_store_get(ctx->store, KM_RCTEMPLATE, ns, t);
		if (o) {
			km_obj_unref(o);
			continue;
		}
		snprintf(msg, cap,
			 "PodResourceClaim %s: resource claim template "
			 "\"%s\": resourceclaimtemplate.resource.k8s.io "
			 "\"%s\" not found",
			 km_str(x, "name") ? km_str(x, "name") : "", t, t);
		return t;
	}
	return NULL;
}

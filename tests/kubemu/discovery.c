/*
 * discovery.c - /version, /api, /apis and the resource lists of each
 * group version, as clients read them to learn what the server serves
 * (python3-kubernetes' dynamic client, kubectl, client-go's RESTMapper).
 * Also the health endpoints.  Aggregated discovery (apidiscovery.k8s.io)
 * is not offered: clients fall back on these documents.
 */
#include <stdlib.h>
#include <string.h>

#include "kubemu.h"

/* The Kubernetes version the emulator presents itself as. */
#define KUBE_MAJOR "1"
#define KUBE_MINOR "29"

static const char *const verbs_main = "\"create\",\"delete\","
				      "\"deletecollection\",\"get\",\"list\","
				      "\"patch\",\"update\",\"watch\"";
static const char *const verbs_status = "\"get\",\"patch\",\"update\"";
/* Nodes are defined at start-up: they are only read. */
static const char *const verbs_read = "\"get\",\"list\",\"watch\"";

/* Kueue's visibility API (kueue.c serves it): only its subresources. */
#define VIS_GROUP "visibility.kueue.x-k8s.io"
static const char *const vis_resources =
	"{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
	"\"groupVersion\":\"" VIS_GROUP "/v1beta1\",\"resources\":["
	"{\"name\":\"clusterqueues/pendingworkloads\",\"singularName\":"
	"\"\",\"namespaced\":false,\"kind\":\"PendingWorkloadsSummary\","
	"\"verbs\":[\"get\"]},{\"name\":\"localqueues/pendingworkloads\","
	"\"singularName\":\"\",\"namespaced\":true,\"kind\":"
	"\"PendingWorkloadsSummary\",\"verbs\":[\"get\"]}]}";

static void reply(struct km_resp *rs, struct hb_buf *b, const char *ctype)
{
	rs->code = 200;
	rs->len = b->len;
	rs->body = hb_buf_steal(b);
	rs->ctype = ctype;
	if (!rs->body)
		km_resp_status(rs, NULL);
}

/* The distinct groups (other than core) in table order. */
static int groups(const char **out)
{
	int n = 0;

	for (int i = 0; i < KM_NRES; i++) {
		int seen = 0;

		if (!km_res[i].group[0])
			continue;
		for (int j = 0; j < n; j++)
			seen |= !strcmp(out[j], km_res[i].group);
		if (!seen)
			out[n++] = km_res[i].group;
	}
	out[n++] = VIS_GROUP; /* not a resource of the table */
	return n;
}

static const char *group_version(const char *group)
{
	if (!strcmp(group, VIS_GROUP))
		return "v1beta1";
	for (int i = 0; i < KM_NRES; i++) {
		if (!strcmp(km_res[i].group, group))
			return km_res[i].version;
	}
	return NULL;
}

/* An APIGroup object; prefix goes first inside its braces. */
static void group_doc(struct hb_buf *b, const char *g, const char *prefix)
{
	const char *v = group_version(g);

	hb_buf_printf(b,
		      "{%s\"name\":\"%s\",\"versions\":[{\"groupVersion\":"
		      "\"%s/%s\",\"version\":\"%s\"}],\"preferredVersion\":"
		      "{\"groupVersion\":\"%s/%s\",\"version\":\"%s\"}}",
		      prefix, g, g, v, v, g, v, v);
}

static void resource_list(struct hb_buf *b, const char *group,
			  const char *version)
{
	int first = 1;

	hb_buf_printf(b,
		      "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
		      "\"groupVersion\":\"%s%s%s\",\"resources\":[",
		      group, group[0] ? "/" : "", version);
	for (int i = 0; i < KM_NRES; i++) {
		const struct km_resinfo *ri = &km_res[i];

		if (strcmp(ri->group, group) || strcmp(ri->version, version))
			continue;
		hb_buf_printf(b,
			      "%s{\"name\":\"%s\",\"singularName\":\"%s\","
			      "\"namespaced\":%s,\"kind\":\"%s\","
			      "\"verbs\":[%s]",
			      first ? "" : ",", ri->plural, ri->singular,
			      KM_NO_NS(i) ? "false" : "true", ri->kind,
			      ri->flags & KM_CLUSTER ? verbs_read : verbs_main);
		if (ri->short_name) {
			/* A list, separated by spaces. */
			const char *p = ri->short_name;

			hb_buf_puts(b, ",\"shortNames\":[");
			while (*p) {
				size_t n = strcspn(p, " ");

				hb_buf_printf(b, "%s\"%.*s\"",
					      p == ri->short_name ? "" : ",",
					      (int)n, p);
				p += n + (p[n] == ' ');
			}
			hb_buf_puts(b, "]");
		}
		if (ri->flags & KM_CRD)
			hb_buf_puts(b, ",\"categories\":[\"all\"]");
		hb_buf_puts(b, "}");
		first = 0;
		if (ri->flags & KM_STATUS)
			hb_buf_printf(b,
				      ",{\"name\":\"%s/status\","
				      "\"singularName\":\"\",\"namespaced\":"
				      "%s,\"kind\":\"%s\",\"verbs\":[%s]}",
				      ri->plural,
				      KM_NO_NS(i) ? "false" : "true", ri->kind,
				      verbs_status);
		if (ri->flags & KM_LOG)
			hb_buf_printf(b,
				      ",{\"name\":\"%s/log\",\"singularName\":"
				      "\"\",\"namespaced\":true,\"kind\":"
				      "\"%s\",\"verbs\":[\"get\"]}",
				      ri->plural, ri->kind);
	}
	hb_buf_puts(b, "]}");
}

int km_discovery_serve(const char *path, struct km_resp *rs)
{
	const char *gs[KM_NRES + 1];
	int ng = groups(gs);
	struct hb_buf b;

	hb_buf_init(&b, 0);
	if (!strcmp(path, "/healthz") || !strcmp(path, "/livez") ||
	    !strcmp(path, "/readyz")) {
		hb_buf_puts(&b, "ok");
		reply(rs, &b, "text/plain; charset=utf-8");
		return 0;
	}
	if (!strcmp(path, "/version")) {
		hb_buf_puts(&b, "{\"major\":\"" KUBE_MAJOR
				"\",\"minor\":\"" KUBE_MINOR
				"\",\"gitVersion\":\"v" KUBE_MAJOR
				"." KUBE_MINOR ".0-hb-kubemu\","
				"\"gitCommit\":\"hpcbridge-" HB_VERSION "\","
				"\"gitTreeState\":\"clean\",\"buildDate\":"
				"\"2024-01-01T00:00:00Z\",\"goVersion\":"
				"\"none (C)\",\"compiler\":\"gcc\","
				"\"platform\":\"linux/amd64\"}");
		reply(rs, &b, "application/json");
		return 0;
	}
	if (!strcmp(path, "/api")) {
		hb_buf_puts(&b, "{\"kind\":\"APIVersions\",\"versions\":"
				"[\"v1\"],\"serverAddressByClientCIDRs\":[{"
				"\"clientCIDR\":\"0.0.0.0/0\","
				"\"serverAddress\":\"127.0.0.1\"}]}");
		reply(rs, &b, "application/json");
		return 0;
	}
	if (!strcmp(path, "/api/v1")) {
		resource_list(&b, "", "v1");
		reply(rs, &b, "application/json");
		return 0;
	}
	if (!strcmp(path, "/apis")) {
		hb_buf_puts(&b, "{\"kind\":\"APIGroupList\",\"apiVersion\":"
				"\"v1\",\"groups\":[");
		for (int i = 0; i < ng; i++) {
			if (i)
				hb_buf_putc(&b, ',');
			group_doc(&b, gs[i], "");
		}
		hb_buf_puts(&b, "]}");
		reply(rs, &b, "application/json");
		return 0;
	}
	if (!strncmp(path, "/apis/", 6)) {
		const char *g = path + 6;
		const char *slash = strchr(g, '/');

		for (int i = 0; i < ng; i++) {
			size_t n = strlen(gs[i]);

			if (strncmp(g, gs[i], n))
				continue;
			if (!slash && !g[n]) {
				group_doc(&b, gs[i],
					  "\"kind\":\"APIGroup\","
					  "\"apiVersion\":\"v1\",");
				reply(rs, &b, "application/json");
				return 0;
			}
			if (slash && (size_t)(slash - g) == n &&
			    !strcmp(slash + 1, group_version(gs[i]))) {
				if (!strcmp(gs[i], VIS_GROUP))
					hb_buf_puts(&b, vis_resources);
				else
					resource_list(&b, gs[i], slash + 1);
				reply(rs, &b, "application/json");
				return 0;
			}
		}
	}
	hb_buf_free(&b);
	return HB_ENOENT;
}

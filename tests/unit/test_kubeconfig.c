/*
 * test_kubeconfig.c - where the Kubernetes client's configuration comes
 * from: kubeconfig merging (first file wins, per name), contexts, type
 * errors that name file, line and field, PEM data and files, relative
 * paths, exec plugin settings, the in-cluster service account, RFC 3339
 * times, and the credentials that change under a client (token files,
 * exec plugins with their cache and their failures).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gateway/kube/kube_int.h"
#include "hpcbridge/clock.h"
#include "hpcbridge/timefmt.h"
#include "testutil.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	char tmpl[] = "/tmp/hb-test-kubeconfig.XXXXXX";

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(dir, sizeof(dir), "%s", tmpl);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *path_in(const char *name)
{
	static char p[4][PATH_MAX + 64];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int parse1(const char *name, const char *text, const char *context,
		  struct hb_kube_config **out, struct hb_err *err)
{
	struct hb_kube_src s = { name, text, strlen(text) };

	memset(err, 0, sizeof(*err));
	return hb_kube_config_parse(&s, 1, context, 0, out, err);
}

/* -------------------------------------------------------- merging */

static const char *file_a = "apiVersion: v1\n"
			    "kind: Config\n"
			    "clusters:\n"
			    "- name: c1\n"
			    "  cluster: {server: 'https://a.example:6443/'}\n"
			    "users:\n"
			    "- name: u1\n"
			    "  user: {token: token-a}\n"
			    "contexts:\n"
			    "- name: x\n"
			    "  context: {cluster: c1, user: u1}\n"
			    "current-context: x\n";

static const char *file_b =
	"clusters:\n"
	"- name: c1\n"
	"  cluster: {server: 'https://b.example'}\n"
	"users:\n"
	"- name: u1\n"
	"  user: {token: token-b1}\n"
	"- name: u2\n"
	"  user: {token: token-b2}\n"
	"contexts:\n"
	"- name: y\n"
	"  context: {cluster: c1, user: u2, namespace: team}\n"
	"current-context: y\n";

static void test_merge_first_wins(void **state)
{
	struct hb_kube_src s[2] = { { "a.yaml", file_a, strlen(file_a) },
				    { "b.yaml", file_b, strlen(file_b) } };
	struct hb_kube_src r[2] = { s[1], s[0] };
	struct hb_kube_config *c;
	struct hb_err err = { 0 };

	(void)state;
	assert_int_equal(hb_kube_config_parse(s, 2, NULL, 0, &c, &err), 0);
	/* a's current-context, a's cluster (trailing '/' dropped). */
	assert_string_equal(hb_kube_config_server(c), "https://a.example:6443");
	assert_string_equal(c->token, "token-a");
	assert_string_equal(hb_kube_config_namespace(c), "default");
	assert_string_equal(c->source, "a.yaml (context x)");
	hb_kube_config_free(c);

	/* The other order: b's current-context and its entries. */
	assert_int_equal(hb_kube_config_parse(r, 2, NULL, 0, &c, &err), 0);
	assert_string_equal(c->server, "https://b.example");
	assert_string_equal(c->token, "token-b2");
	assert_string_equal(c->ns, "team");
	hb_kube_config_free(c);

	/* Context y lives in b, but c1 is a's: the first to name it. */
	assert_int_equal(hb_kube_config_parse(s, 2, "y", 0, &c, &err), 0);
	assert_string_equal(c->server, "https://a.example:6443");
	assert_string_equal(c->token, "token-b2");
	hb_kube_config_free(c);

	/* u1 is a's in a context of a's. */
	assert_int_equal(hb_kube_config_parse(r, 2, "x", 0, &c, &err), 0);
	assert_string_equal(c->token, "token-b1");
	assert_string_equal(c->server, "https://b.example");
	hb_kube_config_free(c);
}

static void test_contexts(void **state)
{
	struct hb_kube_config *c = NULL;
	struct hb_err err;

	(void)state;
	assert_int_equal(parse1("a.yaml", file_a, "nope", &c, &err), HB_ENOENT);
	assert_null(c);
	assert_non_null(strstr(err.msg, "context \"nope\" not found"));

	assert_int_equal(parse1("a.yaml",
				"clusters: [{name: c, cluster: {server: "
				"'https://x'}}]\n",
				NULL, &c, &err),
			 HB_ENOENT);
	assert_non_null(strstr(err.msg, "current-context is not set"));

	assert_int_equal(parse1("a.yaml",
				"contexts:\n"
				"- name: x\n"
				"  context:\n"
				"    cluster: gone\n"
				"current-context: x\n",
				NULL, &c, &err),
			 HB_ENOENT);
	assert_string_equal(err.msg, "a.yaml:4: contexts[0].context.cluster: "
				     "no such cluster");

	assert_int_equal(parse1("a.yaml",
				"clusters: [{name: c, cluster: {server: "
				"'https://x'}}]\n"
				"contexts: [{name: x, context: {cluster: c, "
				"user: who}}]\n"
				"current-context: x\n",
				NULL, &c, &err),
			 HB_ENOENT);
	assert_non_null(strstr(err.msg, "contexts[0].context.user: no such"));

	/* A context without a user: no credentials. */
	assert_int_equal(parse1("a.yaml",
				"clusters: [{name: c, cluster: {server: "
				"'http://x:8080'}}]\n"
				"contexts: [{name: x, context: {cluster: c}}]\n"
				"current-context: x\n",
				NULL, &c, &err),
			 0);
	assert_null(c->token);
	assert_null(c->exec);
	hb_kube_config_free(c);

	/* An empty file is no error in itself. */
	assert_int_equal(parse1("e.yaml", "", NULL, &c, &err), HB_ENOENT);
}

static void test_type_errors(void **state)
{
	static const struct {
		const char *text;
		int rc;
		const char *msg;
	} cases[] = {
		{ "clusters: {}\n", HB_EINVAL,
		  "k.yaml:1: clusters: must be a list" },
		{ "clusters:\n- name: 3\n  cluster: {}\n", HB_EINVAL,
		  "k.yaml:2: clusters[0].name: must be a string" },
		{ "clusters:\n- cluster: {}\n", HB_EINVAL,
		  "clusters[0].name: missing or empty" },
		{ "clusters:\n- name: c\n  cluster: [1]\n", HB_EINVAL,
		  "k.yaml:3: clusters[0].cluster: must be a mapping" },
		{ "current-context: [x]\n", HB_EINVAL,
		  "k.yaml:1: current-context: must be a string" },
		{ "- just\n- a list\n", HB_EINVAL,
		  "k.yaml: a kubeconfig must be a mapping" },
		{ "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		  "users:\n- name: u\n  user:\n    token: 5\n"
		  "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		  "current-context: x\n",
		  HB_EINVAL,
		  "k.yaml:5: users[0].user.token: must be a string" },
		{ "clusters:\n- name: c\n  cluster:\n    server: 'https://x'\n"
		  "    insecure-skip-tls-verify: 'true'\n"
		  "contexts: [{name: x, context: {cluster: c}}]\n"
		  "current-context: x\n",
		  HB_EINVAL,
		  "k.yaml:5: clusters[0].cluster.insecure-skip-tls-verify: "
		  "must be true or false" },
		{ "clusters:\n- name: c\n  cluster:\n    server: ftp://x\n"
		  "contexts: [{name: x, context: {cluster: c}}]\n"
		  "current-context: x\n",
		  HB_EINVAL,
		  "k.yaml:4: clusters[0].cluster.server: not an http:// or "
		  "https:// URL" },
		{ "clusters:\n- name: c\n  cluster: {}\n"
		  "contexts: [{name: x, context: {cluster: c}}]\n"
		  "current-context: x\n",
		  HB_EINVAL, "clusters[0].cluster.server: missing or empty" },
		{ "clusters:\n- name: c\n  cluster:\n    server: 'https://x'\n"
		  "    certificate-authority-data: '!!notbase64'\n"
		  "contexts: [{name: x, context: {cluster: c}}]\n"
		  "current-context: x\n",
		  HB_EINVAL,
		  "k.yaml:5: clusters[0].cluster.certificate-authority-data: "
		  "not base64" },
		{ "clusters:\n- name: c\n  cluster:\n    server: 'https://x'\n"
		  "    insecure-skip-tls-verify: true\n"
		  "    certificate-authority-data: QUJD\n"
		  "contexts: [{name: x, context: {cluster: c}}]\n"
		  "current-context: x\n",
		  HB_ECONFLICT, "insecure-skip-tls-verify together" },
		{ "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		  "users:\n- name: u\n  user:\n    auth-provider: {name: gcp}\n"
		  "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		  "current-context: x\n",
		  HB_EUNSUP, "users[0].user.auth-provider: not supported" },
		{ "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		  "users:\n- name: u\n  user: {token: t, username: me}\n"
		  "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		  "current-context: x\n",
		  HB_ECONFLICT, "users[0].user.username: a bearer token and" },
		{ "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		  "users:\n- name: u\n  user:\n    client-key-data: QUJD\n"
		  "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		  "current-context: x\n",
		  HB_EINVAL, "users[0].user.client-certificate: a client" },
		{ "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		  "users:\n- name: u\n  user: {as: admin}\n"
		  "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		  "current-context: x\n",
		  HB_EUNSUP, "impersonation" },
		{ "key: [unclosed\n", HB_EINVAL, "k.yaml:" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hb_kube_config *c = NULL;
		struct hb_err err;
		int rc = parse1("k.yaml", cases[i].text, NULL, &c, &err);

		if (rc != cases[i].rc || !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: rc %d, '%s'; want %d, '%s'", i, rc,
				 err.msg, cases[i].rc, cases[i].msg);
		assert_null(c);
	}
}

static void test_pem_and_paths(void **state)
{
	struct hb_kube_config *c;
	struct hb_err err = { 0 };
	char text[PATH_MAX + 2048], paths[PATH_MAX * 2 + 256];

	(void)state;
	/* -data: base64 with line breaks; it wins over the file. */
	assert_int_equal(parse1("k.yaml",
				"clusters:\n- name: c\n  cluster:\n"
				"    server: 'https://x'\n"
				"    certificate-authority: /nonexistent\n"
				"    certificate-authority-data: |\n"
				"      LS0tLS1CRUdJTi\n"
				"      BQRU0tLS0tCg==\n"
				"contexts: [{name: x, context: {cluster: c}}]\n"
				"current-context: x\n",
				NULL, &c, &err),
			 0);
	assert_int_equal(c->ca.len, 19);
	assert_memory_equal(c->ca.data, "-----BEGIN PEM----\n", 19);
	assert_int_equal(c->insecure, 0);
	hb_kube_config_free(c);

	/* Files relative to the kubeconfig's directory. */
	assert_int_equal(mkdir(path_in("sub"), 0700), 0);
	write_file(path_in("sub/ca.pem"), "CA PEM\n");
	write_file(path_in("sub/c.pem"), "CERT PEM\n");
	write_file(path_in("sub/k.pem"), "KEY PEM\n");
	write_file(path_in("sub/tok"), "file-token\n");
	write_file(path_in("plugin"), "#!/bin/sh\n");
	snprintf(text, sizeof(text),
		 "clusters:\n- name: c\n  cluster:\n"
		 "    server: 'https://x'\n"
		 "    certificate-authority: sub/ca.pem\n"
		 "    tls-server-name: api.example\n"
		 "    proxy-url: http://proxy:3128\n"
		 "users:\n- name: u\n  user:\n"
		 "    client-certificate: sub/c.pem\n"
		 "    client-key: %s/sub/k.pem\n"
		 "    tokenFile: sub/tok\n"
		 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		 "current-context: x\n",
		 dir);
	write_file(path_in("kc.yaml"), text);
	/* A missing file in the list is skipped. */
	snprintf(paths, sizeof(paths), "%s:%s", path_in("missing.yaml"),
		 path_in("kc.yaml"));
	assert_int_equal(hb_kube_config_load(paths, NULL, &c, &err), 0);
	assert_int_equal(c->ca.len, 7);
	assert_memory_equal(c->ca.data, "CA PEM\n", 7);
	assert_memory_equal(c->cert.data, "CERT PEM\n", 9);
	assert_memory_equal(c->key.data, "KEY PEM\n", 8);
	assert_string_equal(c->token_file, path_in("sub/tok"));
	assert_string_equal(c->tls_server_name, "api.example");
	assert_string_equal(c->proxy_url, "http://proxy:3128");
	hb_kube_config_free(c);

	/* $KUBECONFIG when no paths are given. */
	setenv("KUBECONFIG", paths, 1);
	assert_int_equal(hb_kube_config_load(NULL, NULL, &c, &err), 0);
	hb_kube_config_free(c);
	unsetenv("KUBECONFIG");

	/* No file at all. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_kube_config_load(path_in("missing.yaml"), NULL, &c, &err),
		HB_ENOENT);
	assert_non_null(strstr(err.msg, "no kubeconfig file found"));

	/* A file it names that is not there: the field is named. */
	unlink(path_in("sub/tok"));
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_kube_config_load(path_in("kc.yaml"), NULL, &c, &err),
		HB_ENOENT);
	assert_non_null(strstr(err.msg, "users[0].user.tokenFile"));
	assert_non_null(strstr(err.msg, "sub/tok"));

	/* A directory is not a file. */
	snprintf(text, sizeof(text),
		 "clusters:\n- name: c\n  cluster:\n"
		 "    server: 'https://x'\n"
		 "    certificate-authority: sub\n"
		 "contexts: [{name: x, context: {cluster: c}}]\n"
		 "current-context: x\n");
	write_file(path_in("kc2.yaml"), text);
	memset(&err, 0, sizeof(err));
	assert_int_equal(
		hb_kube_config_load(path_in("kc2.yaml"), NULL, &c, &err),
		HB_EINVAL);
	assert_non_null(
		strstr(err.msg, "clusters[0].cluster.certificate-authority"));
	assert_non_null(strstr(err.msg, "not a regular file"));
}

static void test_exec_settings(void **state)
{
	struct hb_kube_config *c;
	struct hb_err err;
	const char *base = "clusters: [{name: c, cluster: {server: "
			   "'https://x'}}]\n"
			   "contexts: [{name: x, context: {cluster: c, user: "
			   "u}}]\n"
			   "current-context: x\n"
			   "users:\n- name: u\n  user:\n    exec:\n";
	char text[1024];

	(void)state;
	snprintf(text, sizeof(text),
		 "%s      apiVersion: client.authentication.k8s.io/v1\n"
		 "      command: bin/plugin\n"
		 "      args: [get-token, --cluster, one]\n"
		 "      env: [{name: A, value: '1'}, {name: B}]\n"
		 "      interactiveMode: IfAvailable\n"
		 "      provideClusterInfo: true\n"
		 "      installHint: install the plugin\n",
		 base);
	assert_int_equal(parse1("/etc/kube/k.yaml", text, NULL, &c, &err), 0);
	assert_non_null(c->exec);
	assert_string_equal(c->exec->argv[0], "/etc/kube/bin/plugin");
	assert_string_equal(c->exec->argv[1], "get-token");
	assert_string_equal(c->exec->argv[3], "one");
	assert_null(c->exec->argv[4]);
	assert_string_equal(c->exec->env[0], "A=1");
	assert_string_equal(c->exec->env[1], "B=");
	assert_null(c->exec->env[2]);
	assert_int_equal(c->exec->cluster_info, 1);
	assert_non_null(strstr(c->exec->what, "users[0].user.exec"));
	assert_non_null(strstr(c->exec->what, "install the plugin"));
	hb_kube_config_free(c);

	/* A bare command is looked up in PATH. */
	snprintf(text, sizeof(text),
		 "%s      apiVersion: client.authentication.k8s.io/v1beta1\n"
		 "      command: aws\n",
		 base);
	assert_int_equal(parse1("k.yaml", text, NULL, &c, &err), 0);
	assert_string_equal(c->exec->argv[0], "aws");
	hb_kube_config_free(c);

	snprintf(text, sizeof(text),
		 "%s      apiVersion: client.authentication.k8s.io/v1\n"
		 "      command: x\n",
		 base);
	assert_int_equal(parse1("k.yaml", text, NULL, &c, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg,
			       "users[0].user.exec.interactiveMode: required"));
	snprintf(text, sizeof(text),
		 "%s      apiVersion: client.authentication.k8s.io/v1alpha1\n"
		 "      command: x\n",
		 base);
	assert_int_equal(parse1("k.yaml", text, NULL, &c, &err), HB_EUNSUP);
	snprintf(text, sizeof(text),
		 "%s      apiVersion: client.authentication.k8s.io/v1\n"
		 "      interactiveMode: Always\n      command: x\n",
		 base);
	assert_int_equal(parse1("k.yaml", text, NULL, &c, &err), HB_EUNSUP);
	snprintf(text, sizeof(text),
		 "%s      apiVersion: client.authentication.k8s.io/v1\n"
		 "      interactiveMode: Never\n      command: x\n"
		 "      args: [ok, {a: b}]\n",
		 base);
	assert_int_equal(parse1("k.yaml", text, NULL, &c, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "exec.args[1]: must be a string"));
	snprintf(text, sizeof(text),
		 "%s      apiVersion: client.authentication.k8s.io/v1\n"
		 "      interactiveMode: Never\n      command: x\n"
		 "      env: [{name: 'A=B', value: c}]\n",
		 base);
	assert_int_equal(parse1("k.yaml", text, NULL, &c, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "exec.env[0].name"));
	snprintf(text, sizeof(text),
		 "%s      apiVersion: client.authentication.k8s.io/v1\n"
		 "      interactiveMode: Never\n",
		 base);
	assert_int_equal(parse1("k.yaml", text, NULL, &c, &err), HB_EINVAL);
	assert_non_null(strstr(err.msg, "exec.command: missing"));
}

/* ----------------------------------------------------- in-cluster */

static void test_incluster(void **state)
{
	struct hb_kube_config *c;
	struct hb_err err = { 0 };

	(void)state;
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(hb_kube_config_incluster(dir, &c, &err), HB_ENOENT);
	assert_non_null(strstr(err.msg, "not in a cluster"));

	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_config_incluster(dir, &c, &err), HB_ENOENT);
	assert_non_null(strstr(err.msg, "service account token"));

	write_file(path_in("token"), "sa-token\n");
	write_file(path_in("ca.crt"), "SA CA\n");
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_config_incluster(dir, &c, &err), 0);
	assert_string_equal(hb_kube_config_server(c), "https://10.0.0.1:443");
	assert_string_equal(hb_kube_config_namespace(c), "default");
	assert_string_equal(c->token_file, path_in("token"));
	assert_memory_equal(c->ca.data, "SA CA\n", 6);
	hb_kube_config_free(c);

	write_file(path_in("namespace"), "jobs\n");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	assert_int_equal(hb_kube_config_incluster(dir, &c, &err), 0);
	assert_string_equal(c->server, "https://[fd00::1]:443");
	assert_string_equal(c->ns, "jobs");
	hb_kube_config_free(c);
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}

/* ------------------------------------------------------------ time */

/* The times an exec plugin's expirationTimestamp is read with. */
static void test_time(void **state)
{
	int64_t t;

	(void)state;
	assert_int_equal(hb_time_rfc3339_parse("1970-01-01T00:00:00Z", &t), 0);
	assert_int_equal(t, 0);
	assert_int_equal(hb_time_rfc3339_parse("2024-05-01T10:00:00Z", &t), 0);
	assert_int_equal(t, 1714557600);
	assert_int_equal(
		hb_time_rfc3339_parse("2024-05-01T10:00:00.123456Z", &t), 0);
	assert_int_equal(t, 1714557600);
	assert_int_equal(hb_time_rfc3339_parse("2024-05-01T12:30:00+02:30", &t),
			 0);
	assert_int_equal(t, 1714557600);
	assert_int_equal(hb_time_rfc3339_parse("2024-05-01t08:00:00-02:00", &t),
			 0);
	assert_int_equal(t, 1714557600);
	assert_int_equal(hb_time_rfc3339_parse("2024-05-01T10:00:00", &t),
			 HB_EINVAL);
	assert_int_equal(hb_time_rfc3339_parse("2024-13-01T10:00:00Z", &t),
			 HB_EINVAL);
	assert_int_equal(hb_time_rfc3339_parse("2024-05-01T10:00:00Zx", &t),
			 HB_EINVAL);
	assert_int_equal(hb_time_rfc3339_parse("2024-05-01T10:00:00.Z", &t),
			 HB_EINVAL);
	assert_int_equal(hb_time_rfc3339_parse("", &t), HB_EINVAL);
	assert_int_equal(hb_time_rfc3339_parse("2024", &t), HB_EINVAL);
	assert_int_equal(hb_time_rfc3339_parse(NULL, &t), HB_EINVAL);
}

/* ----------------------------------------------------- credentials */

static struct hb_kube_auth *auth_for(const char *user_yaml,
				     struct hb_kube_config **cfgp)
{
	struct hb_kube_config *c;
	struct hb_kube_auth *a;
	struct hb_err err = { 0 };
	char text[4096];

	snprintf(text, sizeof(text),
		 "clusters: [{name: c, cluster: {server: 'https://x', "
		 "certificate-authority-data: QUJD}}]\n"
		 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		 "current-context: x\n"
		 "users:\n- name: u\n  user:\n%s",
		 user_yaml);
	write_file(path_in("auth.yaml"), text);
	if (hb_kube_config_load(path_in("auth.yaml"), NULL, &c, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(hb_kube_auth_new(c, &a), 0);
	if (cfgp)
		*cfgp = c;
	else
		hb_kube_config_free(c);
	return a;
}

static char *token_now(struct hb_kube_auth *a, int refresh, int want_rc)
{
	struct hb_kube_creds cr;
	struct hb_err err = { 0 };
	char *t;
	int rc = hb_kube_auth_get(a, refresh, 0, &cr, &err);

	if (rc != want_rc)
		fail_msg("auth_get: %d (%s), want %d", rc, err.msg, want_rc);
	t = cr.token ? strdup(cr.token) : NULL;
	hb_kube_creds_clear(&cr);
	return t;
}

static void test_token_file(void **state)
{
	struct hb_kube_auth *a;
	struct stat st;
	struct timespec ts[2];
	char *t;
	int fd;

	(void)state;
	write_file(path_in("tok"), "first-token\n");
	a = auth_for("    tokenFile: tok\n    token: static\n", NULL);
	/* The file wins over the static token; whitespace trimmed. */
	t = token_now(a, 0, 0);
	assert_string_equal(t, "first-token");
	free(t);

	/* A new mtime: read again. */
	write_file(path_in("tok"), "second-token\n");
	ts[0].tv_sec = ts[1].tv_sec = time(NULL) + 10;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path_in("tok"), ts, 0), 0);
	t = token_now(a, 0, 0);
	assert_string_equal(t, "second-token");
	free(t);

	/* Changed in place with the mtime put back: not seen... */
	assert_int_equal(stat(path_in("tok"), &st), 0);
	fd = open(path_in("tok"), O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "third--token\n", 13, 0), 13);
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
	t = token_now(a, 0, 0);
	assert_string_equal(t, "second-token");
	free(t);
	/* ...until a 401 asks for a refresh. */
	t = token_now(a, 1, 0);
	assert_string_equal(t, "third--token");
	free(t);

	/* Gone or empty: the last good token stays. */
	unlink(path_in("tok"));
	t = token_now(a, 1, 0);
	assert_string_equal(t, "third--token");
	free(t);
	write_file(path_in("tok"), "\n");
	t = token_now(a, 1, 0);
	assert_string_equal(t, "third--token");
	free(t);
	hb_kube_auth_free(a);
	hb_kube_auth_free(NULL);
}

static const char *plugin =
	"#!/bin/sh\n"
	"echo run >>\"$COUNT\"\n"
	"printf '%s' \"$KUBERNETES_EXEC_INFO\" >\"$INFO\"\n"
	"case \"$MODE\" in\n"
	"fail) echo 'no credentials here' >&2; echo 'second' >&2; exit 7;;\n"
	"junk) echo 'not json';;\n"
	"kind) echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	"\"kind\":\"Other\",\"status\":{\"token\":\"x\"}}';;\n"
	"empty) echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	"\"kind\":\"ExecCredential\",\"status\":{}}';;\n"
	"badtime) echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	"\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
	"\"expirationTimestamp\":\"soon\"}}';;\n"
	"slow) sleep 5;;\n"
	"cert) echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	"\"kind\":\"ExecCredential\",\"status\":{"
	"\"clientCertificateData\":\"CERT\",\"clientKeyData\":\"KEY\"}}';;\n"
	"*) printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
	"\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s-%s\","
	"\"expirationTimestamp\":\"%s\"}}' \"$1\" "
	"\"$(wc -l <\"$COUNT\" | tr -d ' ')\" \"$EXPIRES\";;\n"
	"esac\n";

static struct hb_kube_auth *plugin_auth(const char *mode, const char *expires,
					int cluster_info)
{
	char user[1024];

	write_file(path_in("plugin.sh"), plugin);
	assert_int_equal(chmod(path_in("plugin.sh"), 0755), 0);
	unlink(path_in("count"));
	snprintf(user, sizeof(user),
		 "    exec:\n"
		 "      apiVersion: client.authentication.k8s.io/v1\n"
		 "      command: ./plugin.sh\n"
		 "      args: [tok]\n"
		 "      interactiveMode: Never\n"
		 "      provideClusterInfo: %s\n"
		 "      env:\n"
		 "      - {name: MODE, value: '%s'}\n"
		 "      - {name: EXPIRES, value: '%s'}\n"
		 "      - {name: COUNT, value: '%s'}\n"
		 "      - {name: INFO, value: '%s'}\n",
		 cluster_info ? "true" : "false", mode, expires,
		 path_in("count"), path_in("info"));
	return auth_for(user, NULL);
}

static void iso(time_t t, char *out, size_t n)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void test_exec_plugin(void **state)
{
	struct hb_kube_auth *a;
	struct hb_kube_creds cr;
	struct hb_err err = { 0 };
	char later[32], past[32], *t, *info;
	size_t len;
	int64_t t0;

	(void)state;
	iso(time(NULL) + 3600, later, sizeof(later));
	iso(time(NULL) - 60, past, sizeof(past));

	/* Cached until it expires... */
	a = plugin_auth("token", later, 0);
	t = token_now(a, 0, 0);
	assert_string_equal(t, "tok-1");
	free(t);
	t = token_now(a, 0, 0);
	assert_string_equal(t, "tok-1");
	free(t);
	assert_int_equal(hb_kube_auth_exec_runs(a), 1);
	/* ...or a 401 asks again. */
	t = token_now(a, 1, 0);
	assert_string_equal(t, "tok-2");
	free(t);
	assert_int_equal(hb_kube_auth_exec_runs(a), 2);
	info = hb_test_read_file(path_in("info"), &len);
	assert_non_null(strstr(info, "\"kind\":\"ExecCredential\""));
	assert_non_null(strstr(info, "\"interactive\":false"));
	assert_null(strstr(info, "cluster"));
	free(info);
	hb_kube_auth_free(a);

	/* An expired token is asked for each time. */
	a = plugin_auth("token", past, 1);
	for (int i = 1; i <= 3; i++) {
		char want[16];

		snprintf(want, sizeof(want), "tok-%d", i);
		t = token_now(a, 0, 0);
		assert_string_equal(t, want);
		free(t);
	}
	info = hb_test_read_file(path_in("info"), &len);
	assert_non_null(strstr(info, "\"server\":\"https://x\""));
	assert_non_null(
		strstr(info, "\"certificate-authority-data\":\"QUJD\""));
	free(info);
	hb_kube_auth_free(a);

	/* A client certificate instead of a token. */
	a = plugin_auth("cert", later, 0);
	assert_int_equal(hb_kube_auth_get(a, 0, 0, &cr, &err), 0);
	assert_null(cr.token);
	assert_int_equal(cr.cert.len, 4);
	assert_memory_equal(cr.cert.data, "CERT", 4);
	assert_memory_equal(cr.key.data, "KEY", 3);
	hb_kube_creds_clear(&cr);
	hb_kube_auth_free(a);

	/* Failures: exit status with the first stderr line, junk, the
	 * wrong kind, nothing in status, a bad time, too slow. */
	static const struct {
		const char *mode;
		int rc;
		const char *msg;
	} bad[] = {
		{ "fail", HB_EPERM, "failed (exit 7): no credentials here" },
		{ "junk", HB_EPROTO, "did not print an ExecCredential" },
		{ "kind", HB_EPROTO, "printed no ExecCredential" },
		{ "empty", HB_EPROTO, "neither a token nor" },
		{ "badtime", HB_EPROTO, "expirationTimestamp" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = plugin_auth(bad[i].mode, later, 0);
		memset(&err, 0, sizeof(err));
		if (hb_kube_auth_get(a, 0, 0, &cr, &err) != bad[i].rc ||
		    !strstr(err.msg, bad[i].msg))
			fail_msg("%s: '%s'", bad[i].mode, err.msg);
		assert_non_null(strstr(err.msg, "users[0].user.exec"));
		assert_null(strstr(err.msg, "second"));
		assert_null(cr.token);
		hb_kube_auth_free(a);
	}
	a = plugin_auth("slow", later, 0);
	memset(&err, 0, sizeof(err));
	t0 = hb_clock_mono_ms();
	assert_int_equal(
		hb_kube_auth_get(a, 0, hb_clock_mono_ms() + 300, &cr, &err),
		HB_ETIMEDOUT);
	assert_true(hb_clock_mono_ms() - t0 < 2000);
	hb_kube_auth_free(a);

	/* A command that is not there. */
	a = auth_for("    exec:\n"
		     "      apiVersion: client.authentication.k8s.io/v1\n"
		     "      command: hb-no-such-plugin\n"
		     "      interactiveMode: Never\n"
		     "      installHint: see the docs\n",
		     NULL);
	memset(&err, 0, sizeof(err));
	assert_int_equal(hb_kube_auth_get(a, 0, 0, &cr, &err), HB_ENOENT);
	assert_non_null(strstr(err.msg, "see the docs"));
	hb_kube_auth_free(a);
}

static void test_basic_auth(void **state)
{
	struct hb_kube_auth *a;
	struct hb_kube_creds cr;
	struct hb_err err = { 0 };

	(void)state;
	a = auth_for("    username: me\n    password: secret\n", NULL);
	assert_int_equal(hb_kube_auth_get(a, 0, 0, &cr, &err), 0);
	assert_string_equal(cr.username, "me");
	assert_string_equal(cr.password, "secret");
	assert_null(cr.token);
	hb_kube_creds_clear(&cr);
	hb_kube_auth_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_first_wins),
		cmocka_unit_test(test_contexts),
		cmocka_unit_test(test_type_errors),
		cmocka_unit_test_setup_teardown(test_pem_and_paths, setup,
						teardown),
		cmocka_unit_test(test_exec_settings),
		cmocka_unit_test_setup_teardown(test_incluster, setup,
						teardown),
		cmocka_unit_test(test_time),
		cmocka_unit_test_setup_teardown(test_token_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exec_plugin, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_basic_auth, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

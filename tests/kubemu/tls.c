/*
 * tls.c - a CA and a server certificate for 127.0.0.1 and localhost,
 * made with OpenSSL, and the kubeconfig that points a client at the
 * emulator.
 *
 * In the --tls-dir directory: ca.crt and ca.key (kept and reused when
 * present, so a restarted emulator keeps its CA and clients keep
 * trusting it), server.crt and server.key (made anew at each start,
 * signed by the CA).  Keys are ECDSA P-256; certificates carry the
 * extensions strict verifiers want (basic constraints, key usage, key
 * identifiers, and for the server subjectAltName IP:127.0.0.1,
 * DNS:localhost, IP:::1 and extendedKeyUsage serverAuth).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "hpcbridge/doc.h"
#include "kubemu.h"

#define VALID_DAYS 3650

static int add_ext(X509 *x, X509V3_CTX *xc, int nid, const char *value)
{
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, xc, nid, value);
	int ok;

	if (!e)
		return 0;
	ok = X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	return ok;
}

/* A certificate for key, signed by sign_key as issuer (NULL: self). */
static X509 *make_cert(EVP_PKEY *key, EVP_PKEY *sign_key, X509 *issuer,
		       const char *cn, int ca)
{
	X509 *x = X509_new();
	X509_NAME *name;
	X509V3_CTX xc;
	BIGNUM *bn = BN_new();
	ASN1_INTEGER *serial = NULL;

	if (!x || !bn || !BN_rand(bn, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY))
		goto fail;
	serial = BN_to_ASN1_INTEGER(bn, NULL);
	if (!serial || !X509_set_version(x, 2) ||
	    !X509_set_serialNumber(x, serial) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x),
			     (long)VALID_DAYS * 24 * 3600) ||
	    !X509_set_pubkey(x, key))
		goto fail;
	name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
					(const unsigned char *)"hpcbridge", -1,
					-1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					(const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer)
					    : name))
		goto fail;
	X509V3_set_ctx_nodb(&xc);
	X509V3_set_ctx(&xc, issuer ? issuer : x, x, NULL, NULL, 0);
	if (!add_ext(x, &xc, NID_basic_constraints,
		     ca ? "critical,CA:TRUE" : "critical,CA:FALSE") ||
	    !add_ext(x, &xc, NID_key_usage,
		     ca ? "critical,keyCertSign,cRLSign,digitalSignature"
			: "critical,digitalSignature,keyEncipherment") ||
	    !add_ext(x, &xc, NID_subject_key_identifier, "hash") ||
	    !add_ext(x, &xc, NID_authority_key_identifier, "keyid:always"))
		goto fail;
	if (!ca && (!add_ext(x, &xc, NID_ext_key_usage, "serverAuth") ||
		    !add_ext(x, &xc, NID_subject_alt_name,
			     "IP:127.0.0.1,DNS:localhost,IP:::1")))
		goto fail;
	if (!X509_sign(x, sign_key, EVP_sha256()))
		goto fail;
	ASN1_INTEGER_free(serial);
	BN_free(bn);
	return x;
fail:
	ASN1_INTEGER_free(serial);
	BN_free(bn);
	X509_free(x);
	return NULL;
}

static int write_pem(const char *path, EVP_PKEY *key, X509 *cert)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      key ? 0600 : 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	int ok;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return HB_EIO;
	}
	ok = key ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL)
		 : PEM_write_X509(f, cert);
	if (fclose(f) || !ok)
		return HB_EIO;
	return 0;
}

static char *pem_text(EVP_PKEY *key, X509 *cert)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out = NULL;
	long n;
	int ok;

	if (!b)
		return NULL;
	ok = key ? PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)
		 : PEM_write_bio_X509(b, cert);
	n = BIO_get_mem_data(b, &data);
	if (ok && n > 0)
		out = strndup(data, (size_t)n);
	BIO_free(b);
	return out;
}

/* Load an existing CA from dir; 0, or HB_ENOENT if there is none. */
static int load_ca(const char *crt, const char *key, X509 **x, EVP_PKEY **k)
{
	FILE *f;

	if (access(crt, R_OK) || access(key, R_OK))
		return HB_ENOENT;
	f = fopen(crt, "r");
	*x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
	if (f)
		fclose(f);
	f = fopen(key, "r");
	*k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
	if (f)
		fclose(f);
	if (!*x || !*k) {
		X509_free(*x);
		EVP_PKEY_free(*k);
		*x = NULL;
		*k = NULL;
		return HB_EIO;
	}
	return 0;
}

int km_tls_setup(struct km_ctx *ctx, const char *dir, struct hb_err *err)
{
	char ca_crt[4096], ca_key[4096], srv_crt[4096], srv_key[4096];
	EVP_PKEY *cak = NULL, *sk = NULL;
	X509 *cax = NULL, *sx = NULL;
	int rc = HB_EIO;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return hb_err_set(err, HB_EIO, dir, 0, "%s", strerror(errno));
	snprintf(ca_crt, sizeof(ca_crt), "%s/ca.crt", dir);
	snprintf(ca_key, sizeof(ca_key), "%s/ca.key", dir);
	snprintf(srv_crt, sizeof(srv_crt), "%s/server.crt", dir);
	snprintf(srv_key, sizeof(srv_key), "%s/server.key", dir);
	rc = load_ca(ca_crt, ca_key, &cax, &cak);
	if (rc == HB_EIO) {
		hb_err_set(err, HB_EIO, ca_crt, 0,
			   "cannot read the CA (remove ca.crt and ca.key to "
			   "make a new one)");
		goto out;
	}
	if (rc == HB_ENOENT) {
		cak = EVP_EC_gen("P-256");
		cax = cak ? make_cert(cak, cak, NULL, "hb-kubemu-ca", 1) : NULL;
		if (!cax || write_pem(ca_key, cak, NULL) ||
		    write_pem(ca_crt, NULL, cax)) {
			rc = hb_err_set(err, HB_EIO, dir, 0,
					"cannot make the CA");
			goto out;
		}
	}
	sk = EVP_EC_gen("P-256");
	sx = sk ? make_cert(sk, cak, cax, "hb-kubemu", 0) : NULL;
	if (!sx || write_pem(srv_key, sk, NULL) ||
	    write_pem(srv_crt, NULL, sx)) {
		rc = hb_err_set(err, HB_EIO, dir, 0,
				"cannot make the server certificate");
		goto out;
	}
	ctx->tls_key = pem_text(sk, NULL);
	ctx->tls_cert = pem_text(NULL, sx);
	ctx->tls_ca = pem_text(NULL, cax);
	ctx->tls_ca_path = strdup(ca_crt);
	rc = ctx->tls_key && ctx->tls_cert && ctx->tls_ca && ctx->tls_ca_path
		     ? 0
		     : hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
out:
	X509_free(cax);
	X509_free(sx);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(sk);
	return rc;
}

int km_write_kubeconfig(struct km_ctx *ctx, const char *path, const char *url,
			struct hb_err *err)
{
	cJSON *kc = cJSON_CreateObject();
	cJSON *clusters = cJSON_CreateArray(), *users = cJSON_CreateArray();
	cJSON *contexts = cJSON_CreateArray();
	cJSON *cl = cJSON_CreateObject(), *c = cJSON_CreateObject();
	cJSON *u = cJSON_CreateObject(), *uu = cJSON_CreateObject();
	cJSON *x = cJSON_CreateObject(), *xx = cJSON_CreateObject();
	const struct km_token *tok =
		ctx->o->ntokens ? &ctx->o->tokens[0] : NULL;
	struct hb_buf out, b64;
	char tmp[4096];
	FILE *f;
	int rc = HB_ENOMEM;

	hb_buf_init(&out, 0);
	hb_buf_init(&b64, 0);
	if (!kc || !clusters || !users || !contexts || !cl || !c || !u || !uu ||
	    !x || !xx)
		goto fail;
	km_set_str(c, "server", url);
	if (ctx->tls_ca) {
		if (hb_buf_base64(&b64, ctx->tls_ca, strlen(ctx->tls_ca)))
			goto fail;
		km_set_str(c, "certificate-authority-data", b64.data);
	}
	km_set_str(cl, "name", "hb-kubemu");
	km_set(cl, "cluster", c);
	c = NULL;
	cJSON_AddItemToArray(clusters, cl);
	cl = NULL;
	/* Without any credential kubectl prompts for a user name; with no
	 * --token the server takes any token, so give it one. */
	km_set_str(uu, "token", tok ? tok->token : "hb-kubemu-open");
	km_set_str(u, "name", "hb-kubemu");
	km_set(u, "user", uu);
	uu = NULL;
	cJSON_AddItemToArray(users, u);
	u = NULL;
	km_set_str(xx, "cluster", "hb-kubemu");
	km_set_str(xx, "user", "hb-kubemu");
	km_set_str(xx, "namespace", tok && tok->ns ? tok->ns : "default");
	km_set_str(x, "name", "hb-kubemu");
	km_set(x, "context", xx);
	xx = NULL;
	cJSON_AddItemToArray(contexts, x);
	x = NULL;
	km_set_str(kc, "apiVersion", "v1");
	km_set_str(kc, "kind", "Config");
	km_set(kc, "clusters", clusters);
	km_set(kc, "users", users);
	km_set(kc, "contexts", contexts);
	clusters = users = contexts = NULL;
	km_set_str(kc, "current-context", "hb-kubemu");
	if (hb_doc_write_yaml(kc, &out))
		goto fail;
	/* Write beside and rename, so a reader never sees half a file. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	{
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			      0600);

		f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!f && fd >= 0)
			close(fd);
	}
	if (!f || fwrite(out.data, 1, out.len, f) != out.len) {
		if (f)
			fclose(f);
		rc = hb_err_set(err, HB_EIO, path, 0, "cannot write");
		goto fail;
	}
	if (fclose(f) || rename(tmp, path)) {
		rc = hb_err_set(err, HB_EIO, path, 0, "cannot write");
		goto fail;
	}
	rc = 0;
fail:
	if (rc == HB_ENOMEM)
		hb_err_set(err, HB_ENOMEM, NULL, 0, "out of memory");
	cJSON_Delete(kc);
	cJSON_Delete(clusters);
	cJSON_Delete(users);
	cJSON_Delete(contexts);
	cJSON_Delete(cl);
	cJSON_Delete(c);
	cJSON_Delete(u);
	cJSON_Delete(uu);
	cJSON_Delete(x);
	cJSON_Delete(xx);
	hb_buf_free(&out);
	hb_buf_free(&b64);
	return rc;
}

/* SPDX-License-Identifier: ISC */
/*
 * key: KEY -> lock id. The default scheme is reproducible by any client in
 * plain SQL (PostgreSQL 11+), so applications can take the same lock:
 *   ('x' || left(encode(sha256(convert_to(KEY, 'UTF8')), 'hex'), 16))
 *       ::bit(64)::bigint
 * The other schemes reproduce the keys that existing libraries and
 * migrators derive, so pglock can interlock with them; one table row each.
 *
 * The default scheme runs at every start: OpenSSL's low-level SHA-256
 * (deprecated in 3.0, still there) skips the EVP provider set-up, which alone
 * costs more than the rest of pglock's client side (~5M instructions, 2 MiB).
 * Other schemes use EVP, which also knows when a FIPS provider refuses MD5.
 */
#define OPENSSL_API_COMPAT 0x10101000L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <zlib.h>

#include "hash.h"
#include "key.h"

/* Two's complement reinterpretation, as ::bit(64)::bigint does. */
static int64_t
s64(uint64_t v)
{
	return v > INT64_MAX ? -(int64_t)(UINT64_MAX - v) - 1 : (int64_t)v;
}

static int32_t
s32(uint32_t v)
{
	return v > INT32_MAX ? -(int32_t)(UINT32_MAX - v) - 1 : (int32_t)v;
}

static uint64_t
be64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void
set_bigint(struct key *out, int64_t id)
{
	out->space = KEY_BIGINT;
	out->id = id;
	out->sql = out->text = NULL;
}

static void
set_pair(struct key *out, int32_t a, int32_t b)
{
	out->space = KEY_PAIR;
	out->a = a;
	out->b = b;
	out->sql = out->text = NULL;
}

/* Digests can be missing at run time (a FIPS provider refuses md5). */
static int
digest(const EVP_MD *md, const char *k, size_t len,
    unsigned char out[EVP_MAX_MD_SIZE])
{
	unsigned int mdlen;

	/* No configuration needed: skipping openssl.cnf saves 1 ms a run. */
	(void)OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
	return md != NULL && EVP_Digest(k, len, out, &mdlen, md, NULL) == 1 ?
	    0 : -1;
}

/* Standard CRC-32 (zlib's, PHP's, Go's ChecksumIEEE), unsigned. */
static uint32_t
crc(uint32_t init, const void *k, size_t len)
{
	return (uint32_t)crc32_z(init, k, len);
}

static int
h_sha256(const char *k, size_t len, struct key *out)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256_CTX ctx;

	if (SHA256_Init(&ctx) != 1 || SHA256_Update(&ctx, k, len) != 1 ||
	    SHA256_Final(md, &ctx) != 1)
		return -1;
	set_bigint(out, s64(be64(md)));
	return 0;
}

/* Offline only: the server computes it itself (see key_scheme_sql). */
static int
h_hashtext(const char *k, size_t len, struct key *out)
{
	set_bigint(out, s32(hash_pg_bytes(k, len)));
	return 0;
}

static int
h_hashtextextended(const char *k, size_t len, struct key *out)
{
	set_bigint(out, s64(hash_pg_bytes_extended(k, len, 0)));
	return 0;
}

static int
h_md5(const char *k, size_t len, struct key *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];

	if (digest(EVP_md5(), k, len, md) == -1)
		return -1;
	set_bigint(out, s64(be64(md)));
	return 0;
}

/* 15 hex digits are the top 60 bits of the first 8 bytes: never negative. */
static int
h_md5_60(const char *k, size_t len, struct key *out)
{
	if (h_md5(k, len, out) == -1)
		return -1;
	out->id = (int64_t)((uint64_t)out->id >> 4);
	return 0;
}

/*
 * Guava's Hashing.sipHash24() uses the fixed key 00 01 .. 0f; asLong()
 * reads the 8 bytes little-endian. SipHash is OpenSSL's (a MAC there).
 */
static int
h_siphash24(const char *k, size_t len, struct key *out)
{
	static const unsigned char sipkey[16] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f
	};
	unsigned char mac[8];
	size_t size = sizeof(mac), got = 0, i;
	OSSL_PARAM params[] = {
		OSSL_PARAM_size_t(OSSL_MAC_PARAM_SIZE, &size), OSSL_PARAM_END
	};
	uint64_t v = 0;

	(void)OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
	if (EVP_Q_mac(NULL, "SIPHASH", NULL, NULL, params, sipkey,
	    sizeof(sipkey), (const unsigned char *)k, len, mac, sizeof(mac),
	    &got) == NULL || got != sizeof(mac))
		return -1;
	for (i = sizeof(mac); i > 0; i--)
		v = v << 8 | mac[i - 1];
	set_bigint(out, s64(v));
	return 0;
}

/*
 * Guava's HashCode.asInt() reads the first 4 digest bytes little-endian;
 * Java's Math.abs leaves INT_MIN as it is, so that one stays negative.
 */
static int
h_guava_sha256_abs(const char *k, size_t len, struct key *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	int32_t v;

	if (digest(EVP_sha256(), k, len, md) == -1)
		return -1;
	v = s32((uint32_t)md[0] | (uint32_t)md[1] << 8 |
	    (uint32_t)md[2] << 16 | (uint32_t)md[3] << 24);
	if (v < 0 && v != INT32_MIN)
		v = -v;
	set_bigint(out, v);
	return 0;
}

/* CRC-32 variants differ in sign and key space, don't interlock: a row each. */
static int
h_crc32(const char *k, size_t len, struct key *out)
{
	set_bigint(out, s32(crc(0, k, len)));
	return 0;
}

static int
h_crc32u(const char *k, size_t len, struct key *out)
{
	set_bigint(out, crc(0, k, len));
	return 0;
}

/* The gem's second int is WITH_ADVISORY_LOCK_PREFIX, 0 when unset. */
static int
h_with_advisory_lock(const char *k, size_t len, struct key *out)
{
	set_pair(out, (int32_t)(crc(0, k, len) & 0x7fffffff), 0);
	return 0;
}

static int
h_pg_lock(const char *k, size_t len, struct key *out)
{
	set_pair(out, INT32_MIN, s32(crc(0, k, len)));
	return 0;
}

/*
 * KEY is the database name. Ruby multiplies in bignums, but a uint32 times
 * the 31-bit salt stays below 2^63, so the product is exact and positive.
 */
static int
h_rails(const char *k, size_t len, struct key *out)
{
	set_bigint(out, (int64_t)((uint64_t)crc(0, k, len) * 2053462845u));
	return 0;
}

/*
 * KEY: the database name. golang-migrate (2021+) hashes "schema\0table\0dbname"
 * (defaults public, schema_migrations); its product wraps in uint32.
 */
static int
h_golang_migrate(const char *k, size_t len, struct key *out)
{
	static const char prefix[] = "public\0schema_migrations";
	uint32_t c;

	/* sizeof keeps the NUL that separates the table from the name. */
	c = crc(crc(0, prefix, sizeof(prefix)), k, len);
	set_bigint(out, (uint32_t)(c * 1486364155u));
	return 0;
}

/*
 * Flyway locks 0x466C79776179 ("Flyway") plus the Java hashCode of its history
 * table's quoted name, not the database's (locks are per database anyway): KEY
 * is ignored; another schema or table needs --id. Computed, so tests check it
 * against Flyway's number.
 */
static int
h_flyway(const char *k, size_t len, struct key *out)
{
	static const char table[] = "\"public\".\"flyway_schema_history\"";

	(void)k;
	(void)len;
	set_bigint(out, INT64_C(0x466C79776179) +
	    hash_java_string(table, sizeof(table) - 1));
	return 0;
}

/*
 * One row per way from KEY to an id: the --hash schemes, then --id and
 * --namespace N, last: key_scheme_name() lists the rows before them.
 */
static const struct scheme {
	const char *name;
	const char *option;	/* NULL: chosen by --hash NAME */
	/* The server-side expression ($1 = KEY), or NULL: hashed here. */
	const char *sql;
	const char *describe;
	/* -1: not in this build. --id has none: KEY is parsed. */
	int (*hash)(const char *, size_t, struct key *);
} schemes[] = {
	/* The first row is the default. */
	{ "sha256", NULL, NULL,
	    "pglock's default: first 8 bytes of SHA-256(KEY), big-endian "
	    "signed bigint; in SQL ('x' || left(encode(sha256(convert_to(KEY, "
	    "'UTF8')), 'hex'), 16))::bit(64)::bigint",
	    h_sha256 },
	{ "hashtext", NULL, "hashtext($1)",
	    "pg_advisory_lock(hashtext(KEY)) snippets, Laravel's "
	    "laravel-database-advisory-lock, good_job's hashtext option: "
	    "PostgreSQL hashtext(KEY), int4 sign-extended to bigint, computed "
	    "by the server (offline value assumes a little-endian server and "
	    "a UTF8 database)",
	    h_hashtext },
	{ "hashtextextended", NULL, "hashtextextended($1, 0)",
	    "npm pg-advisory-lock v2, SQL snippets: PostgreSQL "
	    "hashtextextended(KEY, 0), bigint, computed by the server "
	    "(PostgreSQL 11+; offline value assumes a little-endian server "
	    "and a UTF8 database)",
	    h_hashtextextended },
	{ "md5", NULL, NULL,
	    "good_job, pg-boss before 10: first 8 bytes of MD5(KEY), "
	    "big-endian signed bigint; ('x' || substr(md5(KEY), 1, 16))"
	    "::bit(64)::bigint",
	    h_md5 },
	{ "md5-60", NULL, NULL,
	    "Python int(md5(KEY).hexdigest()[:15], 16): first 60 bits of "
	    "MD5(KEY), big-endian, non-negative bigint",
	    h_md5_60 },
	{ "siphash24", NULL, NULL,
	    "Java Guava Hashing.sipHash24().hashBytes(KEY).asLong(): "
	    "SipHash-2-4, key 00..0f, little-endian signed bigint",
	    h_siphash24 },
	{ "guava-sha256-abs", NULL, NULL,
	    "Java Math.abs(Hashing.sha256().hashString(KEY, UTF_8).asInt()): "
	    "first 4 bytes of SHA-256(KEY), little-endian int4, absolute "
	    "value (-2147483648 stays), as bigint",
	    h_guava_sha256_abs },
	{ "crc32", NULL, NULL,
	    "django-pglocks: CRC-32(KEY) as a signed int4, sign-extended to "
	    "bigint",
	    h_crc32 },
	{ "crc32u", NULL, NULL,
	    "Symfony Lock PostgreSqlStore: CRC-32(KEY) unsigned, as bigint",
	    h_crc32u },
	{ "with_advisory_lock", NULL, NULL,
	    "Rails with_advisory_lock gem: int4 pair (CRC-32(KEY) & "
	    "0x7fffffff, 0)",
	    h_with_advisory_lock },
	{ "pg_lock", NULL, NULL,
	    "Heroku pg_lock gem: int4 pair (-2147483648, CRC-32(KEY) as a "
	    "signed int4)",
	    h_pg_lock },
	{ "rails-migrations", NULL, NULL,
	    "Rails migrations, KEY = database name: bigint CRC-32(KEY) * "
	    "2053462845",
	    h_rails },
	{ "golang-migrate", NULL, NULL,
	    "golang-migrate, KEY = database name, schema public, table "
	    "schema_migrations: bigint uint32(CRC-32(\"public\\0"
	    "schema_migrations\\0\" KEY) * 1486364155)",
	    h_golang_migrate },
	{ "flyway", NULL, NULL,
	    "Flyway, default schema history table (KEY ignored): bigint "
	    "77431708279161 + Java hashCode of "
	    "\"public\".\"flyway_schema_history\" = 77433833903597",
	    h_flyway },
	{ "id", "--id", NULL, "the key is the lock id", NULL },
	/* hashtext's int4, with N before it: the lock's pair. */
	{ "namespace", "--namespace", "hashtext($1)",
	    "the pair (N, hashtext(key)), as pg_advisory_lock(N, "
	    "hashtext(key)) takes it",
	    h_hashtext },
};

#define NSCHEMES (sizeof(schemes) / sizeof(schemes[0]))

/* Any row by name; NULL selects the default scheme. */
static const struct scheme *
scheme_find(const char *name)
{
	size_t i;

	if (name == NULL)
		return &schemes[0];
	for (i = 0; i < NSCHEMES; i++)
		if (strcmp(schemes[i].name, name) == 0)
			return &schemes[i];
	return NULL;
}

int
key_scheme_is_default(const char *scheme)
{
	return scheme_find(scheme) == &schemes[0];
}

int
key_hash(const char *key, size_t len, struct key *out, struct err *err)
{
	static const struct key_how sha256 = { NULL, 0 };

	return key_make(&sha256, key, len, out, err) == 0 ? 0 : -1;
}

int
key_scheme_check(const char *scheme, struct err *err)
{
	const struct scheme *s = scheme_find(scheme);
	const char *name;
	size_t i;

	if (s != NULL && s->option == NULL)
		return 0;
	/* Name every valid scheme: the caller has nowhere else to look. */
	err_set(err, "unknown hash scheme '%s' (one of:", scheme);
	for (i = 0; (name = key_scheme_name(i)) != NULL; i++)
		err_add(err, "%s %s", i == 0 ? "" : ",", name);
	err_add(err, ")");
	return -1;
}

int
key_make(const struct key_how *how, const char *key, size_t len,
    struct key *out, struct err *err)
{
	const struct scheme *s = scheme_find(how->scheme);
	struct err why;

	if (s == NULL) {
		(void)key_scheme_check(how->scheme, err);
		return KEY_UNKNOWN;
	}
	if (s->hash == NULL) {	/* --id */
		if (key_parse_id(key, out, &why) == 0)
			return 0;
		err_set(err, "%s: %s", s->option, why.msg);
		return KEY_BAD;
	}
	/* The server hashes text: bytes that are not UTF-8 are the caller's. */
	if (s->sql != NULL && !key_utf8_ok(key, len)) {
		/* Room for the reason when each byte shows as \xHH. */
		err_set(err, "%.*s%s: not valid UTF-8, which the server-side "
		    "scheme %s needs", (int)(len < 200 ? len : 200), key,
		    len > 200 ? "..." : "", s->option != NULL ? s->option :
		    s->name);
		return KEY_BAD;
	}
	if (s->hash(key, len, out) == -1) {
		err_set(err, "%s is not available", s->name);
		return KEY_UNKNOWN;
	}
	if (s->option != NULL)	/* --namespace N */
		set_pair(out, how->ns, (int32_t)out->id);
	out->sql = s->sql;
	out->text = s->sql != NULL ? key : NULL;
	return 0;
}

const char *
key_how_name(const struct key_how *how)
{
	const struct scheme *s = scheme_find(how->scheme);

	return s == NULL ? NULL : s->name;
}

int
key_how_describe(const struct key_how *how, char *buf, size_t len)
{
	const struct scheme *s = scheme_find(how->scheme);

	if (s == NULL)
		return -1;
	if (s->option == NULL)
		return snprintf(buf, len, "%s: %s", s->name, s->describe);
	if (s->hash == NULL)
		return snprintf(buf, len, "%s: %s", s->option, s->describe);
	return snprintf(buf, len, "%s %" PRId32 ": %s", s->option, how->ns,
	    s->describe);
}

/*
 * Would a default KEY read as another row's record name: a row's name then ':'
 * or ' ' ("id:42", "namespace 7:k") before its first ':', or escaped (":...")?
 */
static int
reads_as_other(const char *key)
{
	size_t n = strcspn(key, ":"), i, m;

	if (key[n] == '\0')
		return 0;
	for (i = 1; i < NSCHEMES; i++) {
		m = strlen(schemes[i].name);
		if (m <= n && strncmp(key, schemes[i].name, m) == 0 &&
		    (key[m] == ':' || key[m] == ' '))
			return 1;
	}
	return n == 0;
}

int
key_record_name(const struct key_how *how, const char *key, char *buf,
    size_t len)
{
	const struct scheme *s = scheme_find(how->scheme);
	struct key k;
	struct err why;
	char id[48];

	if (s == NULL)
		return -1;
	if (s == &schemes[0])
		return snprintf(buf, len, "%s%s", reads_as_other(key) ? ":" :
		    "", key);
	if (s->hash == NULL) {	/* --id: 42 and 042 are one */
		if (key_parse_id(key, &k, &why) == -1)
			return -1;
		key_format(&k, id, sizeof(id));
		return snprintf(buf, len, "id:%s", id);
	}
	if (s->option != NULL)
		return snprintf(buf, len, "namespace %" PRId32 ":%s", how->ns,
		    key);
	return snprintf(buf, len, "%s:%s", s->name, key);
}

const char *
key_scheme_sql(const char *scheme)
{
	const struct scheme *s = scheme_find(scheme);

	return s == NULL ? NULL : s->sql;
}

const char *
key_scheme_describe(const char *scheme)
{
	const struct scheme *s = scheme_find(scheme);

	return s == NULL ? NULL : s->describe;
}

const char *
key_scheme_name(size_t i)
{
	return i < NSCHEMES && schemes[i].option == NULL ? schemes[i].name :
	    NULL;
}

/* One strict signed decimal in [lo, hi]; end points past it. */
static int
parse_num(const char *s, const char **end, long long lo, long long hi,
    long long *out)
{
	char *e;
	long long v;

	if (*s != '-' && (*s < '0' || *s > '9'))
		return -1;
	errno = 0;
	v = strtoll(s, &e, 10);
	if (e == s || errno == ERANGE || v < lo || v > hi)
		return -1;
	*end = e;
	*out = v;
	return 0;
}

int
key_parse_id(const char *s, struct key *out, struct err *err)
{
	const char *e;
	long long a, b;

	if (parse_num(s, &e, INT64_MIN, INT64_MAX, &a) == 0 && *e == '\0') {
		set_bigint(out, a);
		return 0;
	}
	if (parse_num(s, &e, INT32_MIN, INT32_MAX, &a) == 0 && *e == ',' &&
	    parse_num(e + 1, &e, INT32_MIN, INT32_MAX, &b) == 0 &&
	    *e == '\0') {
		set_pair(out, (int32_t)a, (int32_t)b);
		return 0;
	}
	err_set(err, "'%s' is not a lock id (a bigint N, or two int4 A,B)", s);
	return -1;
}

void
key_format(const struct key *k, char *buf, size_t len)
{
	if (k->space == KEY_BIGINT)
		snprintf(buf, len, "%" PRId64, k->id);
	else
		snprintf(buf, len, "%" PRId32 ",%" PRId32, k->a, k->b);
}

int
key_params(const struct key *k, char vals[2][24])
{
	if (k->space == KEY_BIGINT) {
		snprintf(vals[0], sizeof(vals[0]), "%" PRId64, k->id);
		return 1;
	}
	snprintf(vals[0], sizeof(vals[0]), "%" PRId32, k->a);
	snprintf(vals[1], sizeof(vals[1]), "%" PRId32, k->b);
	return 2;
}

void
key_locktag(const struct key *k, uint32_t *classid, uint32_t *objid,
    int *objsubid)
{
	/* The server stores the halves as oids: high word first. */
	if (k->space == KEY_BIGINT) {
		*classid = (uint32_t)((uint64_t)k->id >> 32);
		*objid = (uint32_t)((uint64_t)k->id & 0xffffffffu);
		*objsubid = 1;
	} else {
		*classid = (uint32_t)k->a;
		*objid = (uint32_t)k->b;
		*objsubid = 2;
	}
}

int
key_utf8_ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t used;

	for (; len > 0; p += used, len -= used)
		if (hash_utf8_next(p, len, &used) == HASH_UTF8_BAD)
			return 0;
	return 1;
}

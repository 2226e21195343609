/* SPDX-License-Identifier: ISC */
/*
 * fuzz_key: libFuzzer target for lib/key.c and lib/hash.c. The input is a
 * raw --id, a KEY under every scheme and --namespace, and a scheme name.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/hash.h"
#include "../lib/key.h"
#include "check.h"


/* Bit-for-bit equality of the fields that identify the lock. */
static int
same_key(const struct key *x, const struct key *y)
{
	if (x->space != y->space || x->sql != y->sql || x->text != y->text)
		return 0;
	if (x->space == KEY_BIGINT)
		return x->id == y->id;
	return x->a == y->a && x->b == y->b;
}

/* pg_locks must show the same 64 bits, split as the server splits them. */
static void
check_locktag(const struct key *k)
{
	uint32_t classid, objid;
	int objsubid;

	key_locktag(k, &classid, &objid, &objsubid);
	if (k->space == KEY_BIGINT) {
		CHECK(objsubid == 1);
		CHECK(((uint64_t)classid << 32 | objid) == (uint64_t)k->id);
	} else {
		CHECK(k->space == KEY_PAIR);
		CHECK(objsubid == 2);
		CHECK(classid == (uint32_t)k->a && objid == (uint32_t)k->b);
	}
}

/* The query parameters must be the id again, in decimal. */
static void
check_params(const struct key *k)
{
	char vals[2][24], *end;
	long long v;
	int n;

	memset(vals, 'x', sizeof(vals));
	n = key_params(k, vals);
	CHECK(n == (k->space == KEY_BIGINT ? 1 : 2));
	CHECK(memchr(vals[0], '\0', sizeof(vals[0])) != NULL);
	v = strtoll(vals[0], &end, 10);
	CHECK(*end == '\0');
	CHECK(v == (k->space == KEY_BIGINT ? k->id : k->a));
	if (n == 2) {
		CHECK(memchr(vals[1], '\0', sizeof(vals[1])) != NULL);
		v = strtoll(vals[1], &end, 10);
		CHECK(*end == '\0' && v == k->b);
	}
}

/*
 * key_format into buffers of every size up to the full length, each one
 * exactly that big so ASan sees an overrun: always a NUL-terminated
 * prefix of the full text.
 */
static void
check_format_truncation(const struct key *k, const char *full)
{
	size_t len, flen = strlen(full);
	char *buf;

	for (len = 1; len <= flen + 1; len++) {
		if ((buf = malloc(len)) == NULL)
			abort();
		key_format(k, buf, len);
		CHECK(strlen(buf) == (len - 1 < flen ? len - 1 : flen));
		CHECK(strncmp(buf, full, strlen(buf)) == 0);
		free(buf);
	}
}

/* Raw --id: a parsed id prints as text that parses to the same id. */
static void
fuzz_id(const char *s)
{
	const struct key_how id = { "id", 0 };
	struct err err, made_err;
	char text[64], canon[64], name[96];
	struct key k, k2, made;
	const char *comma;
	long long a, b;
	int made_rc;

	/* --id's row of the scheme table is this parser, named. */
	made_rc = key_make(&id, s, strlen(s), &made, &made_err);
	memset(&k, 0, sizeof(k));
	if (key_parse_id(s, &k, &err) == -1) {
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL &&
	    err.msg[0] != '\0');
		CHECK(made_rc == KEY_BAD &&
		    strncmp(made_err.msg, "--id: ", 6) == 0);
		CHECK(key_record_name(&id, s, name, sizeof(name)) == -1);
		return;
	}
	CHECK(made_rc == 0 && same_key(&k, &made));
	CHECK(k.sql == NULL && k.text == NULL);
	key_format(&k, text, sizeof(text));
	CHECK(key_record_name(&id, s, name, sizeof(name)) > 0 &&
	    strncmp(name, "id:", 3) == 0 && strcmp(name + 3, text) == 0);
	memset(&k2, 0, sizeof(k2));
	CHECK(key_parse_id(text, &k2, &err) == 0);
	CHECK(same_key(&k, &k2));
	/*
	 * Only [-]digits[,[-]digits] is an id, and it means what strtoll
	 * reads: so the printed form is the input without leading zeros.
	 */
	comma = strchr(s, ',');
	CHECK(strspn(s, "-0123456789,") == strlen(s));
	a = strtoll(s, NULL, 10);
	if (comma == NULL) {
		CHECK(k.space == KEY_BIGINT && k.id == a);
		snprintf(canon, sizeof(canon), "%lld", a);
	} else {
		b = strtoll(comma + 1, NULL, 10);
		CHECK(k.space == KEY_PAIR && k.a == a && k.b == b);
		snprintf(canon, sizeof(canon), "%lld,%lld", a, b);
	}
	CHECK(strcmp(text, canon) == 0);
	check_locktag(&k);
	check_params(&k);
	check_format_truncation(&k, text);
}

/* What each scheme's description promises about the range of its ids. */
static void
check_scheme_range(const char *name, const struct key *k)
{
	if (strcmp(name, "hashtext") == 0 || strcmp(name, "crc32") == 0)
		CHECK(k->id >= INT32_MIN && k->id <= INT32_MAX);
	else if (strcmp(name, "crc32u") == 0 ||
	    strcmp(name, "golang-migrate") == 0)
		CHECK(k->id >= 0 && k->id <= (int64_t)UINT32_MAX);
	else if (strcmp(name, "md5-60") == 0)
		CHECK(k->id >= 0 && k->id < INT64_C(1) << 60);
	else if (strcmp(name, "rails-migrations") == 0)
		CHECK(k->id >= 0);
	else if (strcmp(name, "guava-sha256-abs") == 0)
		CHECK(k->id >= 0 || k->id == INT32_MIN);
	else if (strcmp(name, "flyway") == 0)
		CHECK(k->id == INT64_C(77433833903597));
	else if (strcmp(name, "with_advisory_lock") == 0)
		CHECK(k->a >= 0 && k->b == 0);
	else if (strcmp(name, "pg_lock") == 0)
		CHECK(k->a == INT32_MIN);
}

/* KEY under every scheme: no crash, same answer twice, valid locktag. */
static void
fuzz_schemes(const char *key, size_t len)
{
	struct err err;
	struct key k, k2, ns;
	struct key_how how = { NULL, 0 }, in_ns = { "namespace", -1 };
	const char *name;
	size_t i;
	int rc, rc2;

	for (i = 0; (name = key_scheme_name(i)) != NULL; i++) {
		how.scheme = name;
		memset(&k, 0xa5, sizeof(k));
		memset(&k2, 0x5a, sizeof(k2));
		rc = key_make(&how, key, len, &k, &err);
		rc2 = key_make(&how, key, len, &k2, &err);
		CHECK(rc == rc2);
		if (rc != 0) {
			/*
			 * Only a digest the provider refuses (FIPS) fails, or
			 * text that is not UTF-8 for a server-side scheme.
			 */
			CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
			CHECK(rc == KEY_UNKNOWN || (rc == KEY_BAD &&
			    key_scheme_sql(name) != NULL &&
			    !key_utf8_ok(key, len)));
			continue;
		}
		CHECK(rc == 0 && same_key(&k, &k2));
		CHECK(k.sql == key_scheme_sql(name));
		CHECK(k.text == (k.sql != NULL ? key : NULL));
		CHECK(key_scheme_describe(name) != NULL);
		check_scheme_range(name, &k);
		check_locktag(&k);
		check_params(&k);
		if (i == 0) {
			/* The first scheme is the default, and key_hash. */
			how.scheme = NULL;
			CHECK(key_make(&how, key, len, &k2, &err) == 0 &&
			    same_key(&k, &k2));
			CHECK(key_hash(key, len, &k2, &err) == 0);
			CHECK(k2.space == k.space && k2.id == k.id);
		}
		if (strcmp(name, "hashtext") == 0) {
			/* --namespace pairs the same hashtext with ns. */
			CHECK(key_make(&in_ns, key, len, &ns, &err) == 0);
			CHECK(ns.space == KEY_PAIR && ns.a == -1);
			CHECK(ns.b == k.id && ns.sql == k.sql);
			CHECK(ns.text == key);
			check_locktag(&ns);
			check_params(&ns);
		}
	}
}

/*
 * An unknown --hash lists the valid names; a name long enough to fill
 * err's room is cut there, NUL-terminated. err is on the heap, sized to
 * the byte, so ASan sees any write past its end.
 */
static void
fuzz_unknown_scheme(const char *name)
{
	const struct key_how how = { name, 0 };
	struct err *err;
	struct key k;
	size_t len;

	if (key_scheme_describe(name) != NULL)
		return;
	if ((err = malloc(sizeof(*err))) == NULL)
		abort();
	CHECK(key_scheme_sql(name) == NULL);
	CHECK(key_make(&how, "k", 1, &k, err) == KEY_UNKNOWN);
	len = strlen(err->msg);
	CHECK(len < sizeof(err->msg));
	CHECK(strncmp(err->msg, "unknown hash scheme '", 21) == 0);
	if (len + 1 < sizeof(err->msg))
		CHECK(strstr(err->msg, key_scheme_name(0)) != NULL &&
		    err->msg[len - 1] == ')');
	free(err);
}

/*
 * hash.c directly, with the seed taken from the input: no
 * out-of-bounds read at any length, and the documented identities.
 */
static void
fuzz_hash(const uint8_t *data, size_t size)
{
	uint64_t seed = 0;
	uint32_t h = 0;
	size_t i;
	int ascii = 1;

	if (size > 0)
		memcpy(&seed, data, size < 8 ? size : 8);
	/* Seed 0 is documented to give hash_bytes in the low word. */
	CHECK((uint32_t)hash_pg_bytes_extended(data, size, 0) ==
	    hash_pg_bytes(data, size));
	CHECK(hash_pg_bytes_extended(data, size, seed) ==
	    hash_pg_bytes_extended(data, size, seed));
	/* ASCII is one UTF-16 unit per byte: Java's sum is plain. */
	for (i = 0; i < size; i++) {
		ascii &= data[i] < 0x80;
		h = 31 * h + data[i];
	}
	if (ascii)
		CHECK(hash_java_string(data, size) == (int32_t)h);
	else
		(void)hash_java_string(data, size);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *raw;
	char *s;

	/* argv strings end at the first NUL: so does the copy. */
	if ((s = malloc(size + 1)) == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	/*
	 * libFuzzer's buffer is exactly size bytes, so a read past the end
	 * of a length-counted key is caught; an empty one may be NULL.
	 */
	raw = size > 0 ? (const char *)data : s;

	fuzz_id(s);
	/* The library takes a length: bytes past a NUL count too. */
	fuzz_schemes(raw, size);
	if (strlen(s) < size)
		fuzz_schemes(s, strlen(s));
	fuzz_unknown_scheme(s);
	fuzz_hash((const uint8_t *)raw, size);

	free(s);
	return 0;
}

/* SPDX-License-Identifier: ISC */
/*
 * unit_key: every key-hash scheme against every vector of key-vectors.json
 * (through the generated key_vectors.h), hashtext against values measured on
 * a real server, and the raw-id parser and pg_locks mapping at their edges.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../lib/hash.h"
#include "../lib/key.h"
#include "key_vectors.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int passed, failed;

static void
result(int ok, const char *what)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL %s\n", what);
}

/* KEY under a --hash scheme, as key_make takes it. */
static int
hash_as(const char *scheme, const char *key, size_t len, struct key *out,
    struct err *err)
{
	const struct key_how how = { scheme, 0 };

	return key_make(&how, key, len, out, err);
}

/* KEY under --namespace ns; a failure leaves a key no test expects. */
static void
ns_as(int32_t ns, const char *key, size_t len, struct key *out)
{
	const struct key_how how = { "namespace", ns };
	struct err err;

	if (key_make(&how, key, len, out, &err) != 0)
		memset(out, 0, sizeof(*out));
}

/* Keys are printed quoted with escapes: some hold non-ASCII bytes. */
static void
quote(const char *s, size_t len, char *buf, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i < len && n + 5 < size; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '\'')
			buf[n++] = (char)ch;
		else
			n += (size_t)snprintf(buf + n, size - n, "\\x%02x", ch);
	}
	buf[n] = '\0';
}

static int
key_equal(const struct key *k, int pair, int64_t id, int32_t a, int32_t b)
{
	if (pair)
		return k->space == KEY_PAIR && k->a == a && k->b == b;
	return k->space == KEY_BIGINT && k->id == id;
}

static void
expect_key(const char *what, const struct key *got, int pair, int64_t id,
    int32_t a, int32_t b)
{
	struct key want;
	char g[48], w[48], msg[512];

	if (key_equal(got, pair, id, a, b)) {
		result(1, what);
		return;
	}
	want.space = pair ? KEY_PAIR : KEY_BIGINT;
	want.id = id;
	want.a = a;
	want.b = b;
	key_format(got, g, sizeof(g));
	key_format(&want, w, sizeof(w));
	snprintf(msg, sizeof(msg), "%s: got %s%s, want %s%s", what,
	    got->space == KEY_PAIR ? "pair " : "", g, pair ? "pair " : "", w);
	result(0, msg);
}

/*
 * Which vector field each scheme must reproduce. A field may back several
 * rows (library aliases of one formula). A row with a constant instead of a
 * field expects that one value for every key.
 */
static const struct {
	const char *scheme;
	const char *field;
	const char *constant;
} map[] = {
	{ "sha256", "sha256_be64", NULL },
	{ "hashtext", "hashtext", NULL },
	{ "hashtext", "mpyw_laravel", NULL },
	{ "hashtextextended", "hashtextextended0", NULL },
	{ "hashtextextended", "npm_pg_advisory_lock_v2", NULL },
	{ "md5", "md5_be64", NULL },
	{ "md5-60", "blog_a_md5hex15", NULL },
	{ "siphash24", "blog_c_guava_siphash24", NULL },
	{ "guava-sha256-abs", "blog_b_abs_sha256_asInt", NULL },
	{ "crc32", "django_pglocks", NULL },
	{ "crc32u", "symfony_lock", NULL },
	{ "crc32u", "crc32", NULL },
	{ "with_advisory_lock", "with_advisory_lock", NULL },
	{ "pg_lock", "heroku_pg_lock", NULL },
	{ "rails-migrations", "rails_migrator(db=key)", NULL },
	{ "golang-migrate", "golang_migrate(db=key,public,schema_migrations)",
	    NULL },
	{ "flyway", NULL,
	    "flyway lockNum for \"public\".\"flyway_schema_history\"" },
};

/*
 * Fields with no pglock scheme (yet): --id covers them. Listed so that a
 * new field in the JSON fails the test until someone maps or lists it.
 */
static const char *const unmapped[] = {
	"hashtext_BE",		/* big-endian servers: the server computes it */
	"hashtextextended0_BE",
	"npm_advisory_lock",
	"npm_pg_advisory_lock_v1_djb2",
	"php_lock_v3",
	"django_pglock",
	"sqlx_PgAdvisoryLock_new",
	"medallion_DistributedLock",
	"pgmigrate_sessionlock",
	"river_fnv1_64",
	"sqlx_migrate(db=key)",
	"golang_migrate_pre2018(db=key)",
};

#define MAXKEYS 64
#define MAXSCHEMES 64

static const struct kv_vector *keys[MAXKEYS];
static size_t nkeys;

static int
same_key(const struct kv_vector *x, const struct kv_vector *y)
{
	return x->len == y->len && memcmp(x->key, y->key, x->len) == 0;
}

/* The distinct keys of the vectors; returns the index of v's key. */
static size_t
key_index(const struct kv_vector *v)
{
	size_t i;

	for (i = 0; i < nkeys; i++)
		if (same_key(keys[i], v))
			return i;
	if (nkeys == MAXKEYS) {
		printf("FAIL more than %d keys: raise MAXKEYS\n", MAXKEYS);
		failed++;
		return 0;
	}
	keys[nkeys] = v;
	return nkeys++;
}

static size_t
scheme_index(const char *name)
{
	size_t i;
	const char *s;

	for (i = 0; (s = key_scheme_name(i)) != NULL; i++)
		if (strcmp(s, name) == 0)
			return i;
	return MAXSCHEMES;
}

static const struct kv_constant *
constant(const char *name)
{
	const struct kv_constant *c;

	for (c = kv_constants; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

static int
is_unmapped(const char *field)
{
	size_t i;

	for (i = 0; i < NELEM(unmapped); i++)
		if (strcmp(unmapped[i], field) == 0)
			return 1;
	return 0;
}

static int
is_mapped(const char *field)
{
	size_t i;

	for (i = 0; i < NELEM(map); i++)
		if (map[i].field != NULL && strcmp(map[i].field, field) == 0)
			return 1;
	return 0;
}

/* Hash v's key with scheme and compare; marks the (scheme, key) covered. */
static void
check_scheme(const char *scheme, const struct kv_vector *v, int pair,
    int64_t id, int32_t a, int32_t b, const char *source,
    unsigned char covered[MAXSCHEMES][MAXKEYS])
{
	struct key k;
	char q[256], what[1024];
	struct err err;
	size_t si = scheme_index(scheme);

	quote(v->key, v->len, q, sizeof(q));
	snprintf(what, sizeof(what), "%s '%s' (%s)", scheme, q, source);
	if (si == MAXSCHEMES) {
		snprintf(what, sizeof(what), "%s: no such scheme", scheme);
		result(0, what);
		return;
	}
	if (hash_as(scheme, v->key, v->len, &k, &err) != 0) {
		snprintf(what, sizeof(what), "%s '%s': %.200s", scheme, q,
		    err.msg);
		result(0, what);
		return;
	}
	expect_key(what, &k, pair, id, a, b);
	covered[si][key_index(v)] = 1;
}

/* Every vector of every mapped field, every scheme on every key. */
static void
test_vectors(void)
{
	static unsigned char covered[MAXSCHEMES][MAXKEYS];
	const struct kv_constant *c;
	const struct kv_vector *v;
	char q[256], what[512];
	const char *s;
	size_t i, j, n;

	for (v = kv_vectors; v < kv_vectors + NELEM(kv_vectors); v++)
		key_index(v);
	for (i = 0; key_scheme_name(i) != NULL; i++)
		if (i >= MAXSCHEMES) {
			result(0, "more schemes than MAXSCHEMES");
			return;
		}

	for (i = 0; i < NELEM(map); i++) {
		if (map[i].constant != NULL) {
			if ((c = constant(map[i].constant)) == NULL) {
				snprintf(what, sizeof(what),
				    "constant '%s' missing from the vectors",
				    map[i].constant);
				result(0, what);
				continue;
			}
			for (j = 0; j < nkeys; j++)
				check_scheme(map[i].scheme, keys[j], 0,
				    c->value, 0, 0, "constant", covered);
			continue;
		}
		n = 0;
		for (v = kv_vectors; v < kv_vectors + NELEM(kv_vectors); v++)
			if (strcmp(v->field, map[i].field) == 0) {
				check_scheme(map[i].scheme, v, v->pair, v->id,
				    v->a, v->b, v->field, covered);
				n++;
			}
		if (n == 0) {
			snprintf(what, sizeof(what),
			    "field '%s' (for %s) has no vectors", map[i].field,
			    map[i].scheme);
			result(0, what);
		}
	}

	for (v = kv_vectors; v < kv_vectors + NELEM(kv_vectors); v++) {
		if (strcmp(v->field, "java_hashCode") == 0) {
			quote(v->key, v->len, q, sizeof(q));
			snprintf(what, sizeof(what),
			    "hash_java_string '%s': got %" PRId32
			    ", want %" PRId64, q,
			    hash_java_string(v->key, v->len), v->id);
			result(!v->pair &&
			    hash_java_string(v->key, v->len) == v->id, what);
		} else if (!is_mapped(v->field) && !is_unmapped(v->field)) {
			snprintf(what, sizeof(what),
			    "field '%s': map it to a scheme or list it as "
			    "unmapped", v->field);
			result(0, what);
		}
	}

	/* Adding a scheme without vectors for every key fails here. */
	for (i = 0; (s = key_scheme_name(i)) != NULL; i++)
		for (j = 0; j < nkeys; j++)
			if (!covered[i][j]) {
				quote(keys[j]->key, keys[j]->len, q,
				    sizeof(q));
				snprintf(what, sizeof(what),
				    "%s '%s': no vector", s, q);
				result(0, what);
			}
}

#define FOX "The quick brown fox jumps over the lazy dog"

/*
 * hashtext and hashtextextended at seeds 0, 1, -42 and 2^32, measured on
 * PostgreSQL 15.18, x86_64, UTF8 database: every tail length of the 12-byte
 * blocks, several blocks, non-ASCII bytes.
 */
static const struct {
	const char *s;
	size_t len;
	int32_t ht;
	int64_t hte[4];
} measured[] = {
	{ FOX, 0, -1477818771,
	    { INT64_C(-6939563903564495251), INT64_C(-150071773020461347),
	    INT64_C(-4810440664776543913), INT64_C(2274062085362124585) } },
	{ FOX, 1, 189977564,
	    { INT64_C(-1338225982912146468), INT64_C(9068873005106454511),
	    INT64_C(-3775157355940270303), INT64_C(7275978829327250438) } },
	{ FOX, 2, -1032424723,
	    { INT64_C(5593687159563776749), INT64_C(2601000940788479235),
	    INT64_C(-8304696252944133302), INT64_C(-3194843879517524081) } },
	{ FOX, 3, -2092041454,
	    { INT64_C(-7897229297791927534), INT64_C(373575743333813267),
	    INT64_C(7777453733993358971), INT64_C(-3384455970485865048) } },
	{ FOX, 4, -529746819,
	    { INT64_C(1214481609633084541), INT64_C(2414452291838301295),
	    INT64_C(-1127925872814363074), INT64_C(4897833342815976458) } },
	{ FOX, 5, 1319395734,
	    { INT64_C(-985326184270896746), INT64_C(-7118562943674609790),
	    INT64_C(7904175846112525813), INT64_C(8279177561299190210) } },
	{ FOX, 6, 2048143525,
	    { INT64_C(3470145380339167397), INT64_C(8387919902459479937),
	    INT64_C(-7459559043508223174), INT64_C(5792368856920890862) } },
	{ FOX, 7, 105174900,
	    { INT64_C(-2752675330521770124), INT64_C(4997569008844451235),
	    INT64_C(-4262229748501224330), INT64_C(196064356450435040) } },
	{ FOX, 8, -461557097,
	    { INT64_C(-1544529330263215465), INT64_C(-8683909081559758509),
	    INT64_C(-7702318872642670744), INT64_C(-2833308275745819654) } },
	{ FOX, 9, 916841358,
	    { INT64_C(-3165377590426475634), INT64_C(113343595792182449),
	    INT64_C(-7652661067700429138), INT64_C(-7109215827341362833) } },
	{ FOX, 10, 1490567601,
	    { INT64_C(6613948839295992241), INT64_C(-8619841433784882524),
	    INT64_C(-1267044875970234873), INT64_C(3936484576425160972) } },
	{ FOX, 11, 2124940397,
	    { INT64_C(2869438648668390509), INT64_C(-959800427406852595),
	    INT64_C(920121607457917654), INT64_C(-2026505455555010019) } },
	{ FOX, 12, 82921656,
	    { INT64_C(-9210305663925663560), INT64_C(-7411269329772434762),
	    INT64_C(418131657094581821), INT64_C(-2229034330501851334) } },
	{ FOX, 13, -1857862021,
	    { INT64_C(-3863872140344080773), INT64_C(-5306421320277656927),
	    INT64_C(-7391231254421121908), INT64_C(-6577659798345898884) } },
	{ FOX, 14, -435097191,
	    { INT64_C(-2703303883130605159), INT64_C(-4420264130580279477),
	    INT64_C(-1973105247434387306), INT64_C(2761117839011370473) } },
	{ FOX, 15, 1349080213,
	    { INT64_C(130785500723762325), INT64_C(2415600547870964),
	    INT64_C(-7340828651736907079), INT64_C(-5454639162688629627) } },
	{ FOX, 16, -807732534,
	    { INT64_C(-7818762430148052278), INT64_C(-7684747871952800310),
	    INT64_C(738256505250254083), INT64_C(7796057360830021664) } },
	{ FOX, 17, 1801273035,
	    { INT64_C(3451059601990827723), INT64_C(-2569993189759287968),
	    INT64_C(-3153198231495064657), INT64_C(6675033964135633715) } },
	{ FOX, 18, 2125926248,
	    { INT64_C(1859349653040336744), INT64_C(-1760886525797554753),
	    INT64_C(7492755669878435662), INT64_C(9215127353600946954) } },
	{ FOX, 19, -287177489,
	    { INT64_C(6377859067987231983), INT64_C(8003868520916583707),
	    INT64_C(-578017683555214558), INT64_C(-492108013173766821) } },
	{ FOX, 20, -685456130,
	    { INT64_C(1395817125874287870), INT64_C(-5138102140331046703),
	    INT64_C(-8427618741141811397), INT64_C(-8456662712302841588) } },
	{ FOX, 21, 300619715,
	    { INT64_C(4382656982158088131), INT64_C(-2819000559077360273),
	    INT64_C(-4234706495697243571), INT64_C(1654837244308186141) } },
	{ FOX, 22, -1262620514,
	    { INT64_C(-8173415927686238050), INT64_C(-6115552377606533415),
	    INT64_C(-4781004333698110315), INT64_C(-1513300144092438479) } },
	{ FOX, 23, -1236432247,
	    { INT64_C(-6349138520123274615), INT64_C(3816760838157903509),
	    INT64_C(-6399957450214657553), INT64_C(2669947243531549419) } },
	{ FOX, 24, -1217470220,
	    { INT64_C(8360766130984247540), INT64_C(-2367719083536378441),
	    INT64_C(4312628213462598047), INT64_C(-152318862082011266) } },
	{ FOX, 25, 1370806276,
	    { INT64_C(-6568008242738964476), INT64_C(-71098358651504709),
	    INT64_C(-4571363968800382207), INT64_C(9030701826092992707) } },
	{ FOX, 26, 2038649153,
	    { INT64_C(-8510399028364357311), INT64_C(7089908338700987214),
	    INT64_C(5301962591534647124), INT64_C(323601361895367722) } },
	{ FOX, 27, 1771424372,
	    { INT64_C(-5983171337440081292), INT64_C(6535694678384849212),
	    INT64_C(-1090596245832592555), INT64_C(5117814945927546760) } },
	{ FOX, 28, 1000863782,
	    { INT64_C(4650743464175597606), INT64_C(-3849767234443062407),
	    INT64_C(-2618534843989859602), INT64_C(2403462539810759635) } },
	{ FOX, 29, -1372205352,
	    { INT64_C(4922972945882926808), INT64_C(9084491191279799956),
	    INT64_C(7097486320630842331), INT64_C(-2588671189635344787) } },
	{ FOX, 30, 1474626926,
	    { INT64_C(-2952746244513659538), INT64_C(-199542317420702089),
	    INT64_C(2088079037066979312), INT64_C(8330537548419183530) } },
	{ FOX, 31, 1482680789,
	    { INT64_C(240566037469194709), INT64_C(-6934322362102034784),
	    INT64_C(-271908651732086213), INT64_C(-1385670962473205372) } },
	{ FOX, 32, -2097643709,
	    { INT64_C(936837974110797635), INT64_C(-8125404021277582737),
	    INT64_C(-7919444487149750601), INT64_C(4517173141706616723) } },
	{ FOX, 33, 1270545934,
	    { INT64_C(-3200491468863373810), INT64_C(-9026429163276184129),
	    INT64_C(2623459650327380293), INT64_C(1520896433240011408) } },
	{ FOX, 34, 282202191,
	    { INT64_C(-6696201807748526001), INT64_C(364497161259584786),
	    INT64_C(1770932678360431496), INT64_C(4945994653341273108) } },
	{ FOX, 35, 646838985,
	    { INT64_C(-5603389817488540983), INT64_C(8491929863516393541),
	    INT64_C(878488516868688347), INT64_C(-4831141236770909570) } },
	{ FOX, 36, -542547460,
	    { INT64_C(5172465187460571644), INT64_C(-3453381686057023466),
	    INT64_C(6482325958767135779), INT64_C(-2734108894028843913) } },
	{ FOX, 37, 1430556688,
	    { INT64_C(-6341692122201812976), INT64_C(1375315807926894544),
	    INT64_C(-845918568740708436), INT64_C(6747566531282123822) } },
	{ FOX, 38, -1835488606,
	    { INT64_C(-1165991950917522782), INT64_C(-8255079535432918454),
	    INT64_C(-2446267022409684838), INT64_C(6928078543367154893) } },
	{ FOX, 39, 1690460682,
	    { INT64_C(7590948603917656586), INT64_C(-4857976032141116494),
	    INT64_C(-5284385667474195220), INT64_C(-206350482378925027) } },
	{ FOX, 40, -1767799431,
	    { INT64_C(-4847668724781447815), INT64_C(7390172285377715836),
	    INT64_C(-6620401159984532061), INT64_C(8388558036688938386) } },
	{ FOX, 41, 2050890628,
	    { INT64_C(-2948873403207115900), INT64_C(-4951628441334698096),
	    INT64_C(6950446214123141425), INT64_C(1216948582247408734) } },
	{ FOX, 42, -1440353335,
	    { INT64_C(1452333603335041993), INT64_C(215772371547689396),
	    INT64_C(-1964341663475026882), INT64_C(-1765257059209128971) } },
	{ FOX, 43, -827430201,
	    { INT64_C(2182139051089226439), INT64_C(6385648752505156361),
	    INT64_C(3679683506868289583), INT64_C(7701609020240790913) } },
	{ "\303\251", 2, -983094517,
	    { INT64_C(-763932721387459829), INT64_C(-59322650404964094),
	    INT64_C(4027481657891426200), INT64_C(7561860214841332206) } },
	{ "Gr\303\274\303\237e/\316\224", 10, -1175981182,
	    { INT64_C(988221980214293378), INT64_C(-6390326696896463017),
	    INT64_C(-7565803932117056851), INT64_C(-6371266896032452286) } },
	{ "\346\227\245\346\234\254\350\252\236\343\202\255"
	    "\343\203\274", 15, 894164883,
	    { INT64_C(716703903702048659), INT64_C(2214567292875456181),
	    INT64_C(8465384654018813326), INT64_C(86187194410559737) } },
	{ "\360\237\230\200", 4, 1734229978,
	    { INT64_C(-9149796522330800166), INT64_C(-2514189011794816806),
	    INT64_C(-6087026202186114830), INT64_C(5947231533498604204) } },
	{ "greetings, human", 16, -1132466231,
	    { INT64_C(-3112054671552811063), INT64_C(-8147004644208304709),
	    INT64_C(-6561762645641567424), INT64_C(1741426877278062369) } },
	{ "\303\277\303\277\303\277\303\277\303\277\303\277\303\277"
	    "\303\277\303\277\303\277\303\277\303\277\303\277", 26,
	    -1468203891,
	    { INT64_C(4659393929567599757), INT64_C(-2281026787025369279),
	    INT64_C(1723265508000570439), INT64_C(2204762401148615371) } },
};

static const uint64_t seeds[4] = {
	0, 1, (uint64_t)-42, UINT64_C(4294967296)
};

static void
test_measured(void)
{
	struct key k;
	char q[256], what[512];
	struct err err;
	size_t i, j;
	uint32_t h;
	uint64_t e;

	for (i = 0; i < NELEM(measured); i++) {
		quote(measured[i].s, measured[i].len, q, sizeof(q));
		h = hash_pg_bytes(measured[i].s, measured[i].len);
		snprintf(what, sizeof(what),
		    "hash_pg_bytes '%s': got %" PRIu32 ", want %" PRId32, q,
		    h, measured[i].ht);
		result(h == (uint32_t)measured[i].ht, what);
		for (j = 0; j < NELEM(seeds); j++) {
			e = hash_pg_bytes_extended(measured[i].s,
			    measured[i].len, seeds[j]);
			snprintf(what, sizeof(what),
			    "hash_pg_bytes_extended '%s' seed %" PRId64
			    ": got %" PRIu64 ", want %" PRId64, q,
			    (int64_t)seeds[j], e, measured[i].hte[j]);
			result(e == (uint64_t)measured[i].hte[j], what);
		}
		/* The schemes' sign handling, on values of both signs. */
		snprintf(what, sizeof(what), "hashtext '%s' (measured)", q);
		if (hash_as("hashtext", measured[i].s,
		    measured[i].len, &k, &err) == 0)
			expect_key(what, &k, 0, measured[i].ht, 0, 0);
		else
			result(0, err.msg);
		snprintf(what, sizeof(what), "hashtextextended '%s' "
		    "(measured)", q);
		if (hash_as("hashtextextended", measured[i].s,
		    measured[i].len, &k, &err) == 0)
			expect_key(what, &k, 0, measured[i].hte[0], 0, 0);
		else
			result(0, err.msg);
	}
}

/*
 * The reference SipHash-2-4 vectors, key 00..0f (the scheme's key),
 * message 00 01 .. n-1.
 */
static void
test_siphash(void)
{
	static const struct {
		size_t len;
		uint64_t want;
	} ref[] = {
		{ 0, UINT64_C(0x726fdb47dd0e0e31) },
		{ 1, UINT64_C(0x74f839c593dc67fd) },
		{ 2, UINT64_C(0x0d6c8009d9a94f5a) },
		{ 15, UINT64_C(0xa129ca6149be45e5) },
	};
	char m[16], what[128];
	struct err err;
	struct key k;
	uint64_t got = 0;
	size_t i;

	for (i = 0; i < 16; i++)
		m[i] = (char)i;
	for (i = 0; i < NELEM(ref); i++) {
		if (hash_as("siphash24", m, ref[i].len, &k, &err) == 0)
			got = (uint64_t)k.id;
		snprintf(what, sizeof(what), "siphash24 reference, %zu bytes: "
		    "got %016" PRIx64 ", want %016" PRIx64, ref[i].len, got,
		    ref[i].want);
		result(got == ref[i].want, what);
	}
}

/* Java's hashCode over UTF-16: astral characters, ill-formed UTF-8. */
static void
test_java(void)
{
	static const struct {
		const char *s;
		size_t len;
		int32_t want;
	} v[] = {
		{ "", 0, 0 },
		{ "\303\251", 2, 233 },			/* U+00E9 */
		{ "\360\237\230\200", 4, 1772899 },	/* U+1F600, 2 units */
		{ "Gr\303\274\303\237e/\316\224\360\237\230\200\346\227\245"
		    "\346\234\254", 20, 1270123654 },
		{ "\377", 1, 65533 },			/* never valid */
		{ "a\342\202", 3, 68540 },		/* truncated */
		{ "\355\240\200", 3, 65074269 },	/* a surrogate */
		{ "\340\200\200", 3, 65074269 },	/* overlong */
		{ "\300\257", 2, 2097056 },		/* overlong */
		{ "\360\237\230x", 4, 2031643 },	/* cut, then text */
		{ "\364\220\200\200", 4, 2017367872 },	/* past U+10FFFF */
		{ "\"public\".\"flyway_schema_history\"", 32, 2125624436 },
	};
	char q[256], what[512];
	int32_t got;
	size_t i;

	for (i = 0; i < NELEM(v); i++) {
		got = hash_java_string(v[i].s, v[i].len);
		quote(v[i].s, v[i].len, q, sizeof(q));
		snprintf(what, sizeof(what), "hash_java_string '%s': got %"
		    PRId32 ", want %" PRId32, q, got, v[i].want);
		result(got == v[i].want, what);
	}
}

static void
test_parse_id(void)
{
	static const struct {
		const char *s;
		int ok, pair;
		int64_t id;
		int32_t a, b;
	} v[] = {
		{ "0", 1, 0, 0, 0, 0 },
		{ "-0", 1, 0, 0, 0, 0 },
		{ "42", 1, 0, 42, 0, 0 },
		{ "9223372036854775807", 1, 0, INT64_MAX, 0, 0 },
		{ "-9223372036854775808", 1, 0, INT64_MIN, 0, 0 },
		{ "9223372036854775808", 0, 0, 0, 0, 0 },
		{ "-9223372036854775809", 0, 0, 0, 0, 0 },
		{ "99999999999999999999", 0, 0, 0, 0, 0 },
		{ "1,2", 1, 1, 0, 1, 2 },
		{ "-1,-2", 1, 1, 0, -1, -2 },
		{ "2147483647,-2147483648", 1, 1, 0, INT32_MAX, INT32_MIN },
		{ "-2147483648,2147483647", 1, 1, 0, INT32_MIN, INT32_MAX },
		{ "2147483648,1", 0, 0, 0, 0, 0 },
		{ "1,2147483648", 0, 0, 0, 0, 0 },
		{ "-2147483649,0", 0, 0, 0, 0, 0 },
		{ "0,-2147483649", 0, 0, 0, 0, 0 },
		{ "9223372036854775807,1", 0, 0, 0, 0, 0 },
		{ "1,", 0, 0, 0, 0, 0 },
		{ ",2", 0, 0, 0, 0, 0 },
		{ ",", 0, 0, 0, 0, 0 },
		{ "1,2,3", 0, 0, 0, 0, 0 },
		{ "1,,2", 0, 0, 0, 0, 0 },
		{ "1, 2", 0, 0, 0, 0, 0 },
		{ "1 ,2", 0, 0, 0, 0, 0 },
		{ "1,-", 0, 0, 0, 0, 0 },
		{ "", 0, 0, 0, 0, 0 },
		{ " 1", 0, 0, 0, 0, 0 },
		{ "\t1", 0, 0, 0, 0, 0 },
		{ "1 ", 0, 0, 0, 0, 0 },
		{ "1x", 0, 0, 0, 0, 0 },
		{ "+1", 0, 0, 0, 0, 0 },
		{ "-", 0, 0, 0, 0, 0 },
		{ "--1", 0, 0, 0, 0, 0 },
		{ "0x10", 0, 0, 0, 0, 0 },
		{ "1.5", 0, 0, 0, 0, 0 },
	};
	struct key k;
	struct err err;
	char what[512];
	size_t i;
	int rc;

	for (i = 0; i < NELEM(v); i++) {
		memset(&k, 0, sizeof(k));
		err.msg[0] = '\0';
		rc = key_parse_id(v[i].s, &k, &err);
		snprintf(what, sizeof(what), "key_parse_id '%s'", v[i].s);
		if (!v[i].ok) {
			/* The reason names the input, so the user sees it. */
			snprintf(what, sizeof(what), "key_parse_id '%s' must "
			    "fail with a reason naming it (rc %d, '%s')",
			    v[i].s, rc, err.msg);
			result(rc == -1 && strstr(err.msg, v[i].s) != NULL,
			    what);
		} else if (rc != 0) {
			snprintf(what, sizeof(what), "key_parse_id '%s': %s",
			    v[i].s, err.msg);
			result(0, what);
		} else
			expect_key(what, &k, v[i].pair, v[i].id, v[i].a,
			    v[i].b);
	}
}

static void
test_locktag(void)
{
	static const struct {
		int pair;
		int64_t id;
		int32_t a, b;
		uint32_t classid, objid;
		const char *text;
	} v[] = {
		{ 0, 0, 0, 0, 0, 0, "0" },
		{ 0, -1, 0, 0, 4294967295u, 4294967295u, "-1" },
		/* django-pglocks vs Symfony for "deploy", as pg_locks shows. */
		{ 0, -1841612550, 0, 0, 4294967295u, 2453354746u,
		    "-1841612550" },
		{ 0, 2453354746, 0, 0, 0, 2453354746u, "2453354746" },
		{ 0, INT64_C(544725523023030055), 0, 0, 126828794u,
		    601909031u, "544725523023030055" },
		{ 0, INT64_MIN, 0, 0, 2147483648u, 0, "-9223372036854775808" },
		{ 0, INT64_MAX, 0, 0, 2147483647u, 4294967295u,
		    "9223372036854775807" },
		{ 0, INT64_C(-4294967296), 0, 0, 4294967295u, 0,
		    "-4294967296" },
		{ 1, 0, 305871098, 0, 305871098u, 0, "305871098,0" },
		{ 1, 0, INT32_MIN, -1841612550, 2147483648u, 2453354746u,
		    "-2147483648,-1841612550" },
		{ 1, 0, -1, -1, 4294967295u, 4294967295u, "-1,-1" },
	};
	struct key k;
	struct err err;
	char buf[48], vals[2][24], what[512];
	uint32_t classid, objid;
	size_t i;
	int sub, n;

	for (i = 0; i < NELEM(v); i++) {
		k.space = v[i].pair ? KEY_PAIR : KEY_BIGINT;
		k.id = v[i].id;
		k.a = v[i].a;
		k.b = v[i].b;
		key_locktag(&k, &classid, &objid, &sub);
		snprintf(what, sizeof(what), "key_locktag %s: got (%" PRIu32
		    ", %" PRIu32 ", %d), want (%" PRIu32 ", %" PRIu32 ", %d)",
		    v[i].text, classid, objid, sub, v[i].classid, v[i].objid,
		    v[i].pair ? 2 : 1);
		result(classid == v[i].classid && objid == v[i].objid &&
		    sub == (v[i].pair ? 2 : 1), what);

		key_format(&k, buf, sizeof(buf));
		snprintf(what, sizeof(what), "key_format %s: got %s",
		    v[i].text, buf);
		result(strcmp(buf, v[i].text) == 0, what);

		/* The parameters joined by a comma are the same text. */
		n = key_params(&k, vals);
		if (n == 2)
			snprintf(buf, sizeof(buf), "%s,%s", vals[0], vals[1]);
		else
			snprintf(buf, sizeof(buf), "%s", vals[0]);
		snprintf(what, sizeof(what), "key_params %s: got %d, %s",
		    v[i].text, n, buf);
		result(n == (v[i].pair ? 2 : 1) &&
		    strcmp(buf, v[i].text) == 0, what);

		/* And parsing that text gives the key back. */
		snprintf(what, sizeof(what), "key_parse_id round trip %s",
		    v[i].text);
		if (key_parse_id(v[i].text, &k, &err) == 0)
			expect_key(what, &k, v[i].pair, v[i].id, v[i].a,
			    v[i].b);
		else
			result(0, what);
	}
}

static void
test_scheme_api(void)
{
	struct key k, d;
	struct err err;
	char name[2048];
	char what[512];
	const char *s, *t;
	size_t i, j;
	int ok;

	result(strcmp(key_scheme_name(0), "sha256") == 0,
	    "the first scheme is the default, sha256");
	for (i = 0; (s = key_scheme_name(i)) != NULL; i++) {
		t = key_scheme_describe(s);
		snprintf(what, sizeof(what), "%s: one-line description", s);
		result(t != NULL && *t != '\0' && strchr(t, '\n') == NULL,
		    what);
		for (j = 0; j < i; j++) {
			snprintf(what, sizeof(what), "%s: listed twice", s);
			result(strcmp(key_scheme_name(j), s) != 0, what);
		}
	}
	result(key_scheme_name(i + 1) == NULL && key_scheme_name(SIZE_MAX) ==
	    NULL, "key_scheme_name past the end");

	/* Only the server-side schemes have SQL. */
	result(strcmp(key_scheme_sql("hashtext"), "hashtext($1)") == 0,
	    "hashtext sql");
	result(strcmp(key_scheme_sql("hashtextextended"),
	    "hashtextextended($1, 0)") == 0, "hashtextextended sql");
	for (i = 0; (s = key_scheme_name(i)) != NULL; i++) {
		if (strncmp(s, "hashtext", 8) == 0)
			continue;
		snprintf(what, sizeof(what), "%s: no sql", s);
		result(key_scheme_sql(s) == NULL, what);
	}
	result(key_scheme_sql("nope") == NULL, "unknown scheme: no sql");
	result(key_scheme_describe("nope") == NULL,
	    "unknown scheme: no description");

	/* key_hash, the NULL scheme and "sha256" agree. */
	ok = key_hash("deploy", 6, &k, &err) == 0 &&
	    hash_as(NULL, "deploy", 6, &d, &err) == 0;
	result(ok && key_equal(&k, 0, d.id, 0, 0) &&
	    k.id == INT64_C(-5206911306292520180),
	    "key_hash == key_make(NULL) == sha256 vector");

	/* An unknown scheme's reason lists every valid one. */
	ok = hash_as("nope", "deploy", 6, &k, &err) == KEY_UNKNOWN
	    && strncmp(err.msg, "unknown hash scheme 'nope'", 26) == 0;
	for (i = 0; ok && (s = key_scheme_name(i)) != NULL; i++)
		ok = strstr(err.msg, s) != NULL;
	snprintf(what, sizeof(what), "unknown scheme error lists the schemes: "
	    "%.400s", err.msg);
	result(ok && err.msg[strlen(err.msg) - 1] == ')', what);
	/* A reason longer than err's room is cut; ASan watches the bounds. */
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	ok = hash_as(name, "x", 1, &k, &err) == KEY_UNKNOWN &&
	    strlen(err.msg) == sizeof(err.msg) - 1;
	result(ok, "unknown scheme error cut to err's room");
	result(hash_as("SHA256", "x", 1, &k, &err) == KEY_UNKNOWN,
	    "scheme names are case-sensitive");

	/* KEY is bytes with a length: an embedded NUL is hashed. */
	ok = hash_as("crc32u", "a\0b", 3, &k, &err) == 0;
	result(ok && key_equal(&k, 0, 367556721, 0, 0),
	    "crc32u hashes past an embedded NUL");
	/* goose's DefaultLockID is crc32("goose"). */
	ok = hash_as("crc32u", "goose", 5, &k, &err) == 0;
	result(ok && key_equal(&k, 0, 4097083626, 0, 0), "crc32u goose");

	/* --namespace: (N, hashtext(KEY)). */
	ns_as(42, "deploy", 6, &k);
	expect_key("namespace 42 deploy", &k, 1, 0, 42, 338221047);
	ns_as(INT32_MIN, "", 0, &k);
	expect_key("namespace INT32_MIN ''", &k, 1, 0, INT32_MIN,
	    -1477818771);
	ns_as(-1, "tenant-a", 8, &k);
	expect_key("namespace -1 tenant-a", &k, 1, 0, -1, -1551630016);

	/* --id and --namespace are rows too, but no --hash names them. */
	for (i = 0; (s = key_scheme_name(i)) != NULL; i++)
		result(strcmp(s, "id") != 0 && strcmp(s, "namespace") != 0,
		    "--id and --namespace are not --hash schemes");
	result(key_scheme_check("id", &err) == -1 &&
	    key_scheme_check("namespace", &err) == -1 &&
	    key_scheme_check("md5", &err) == 0, "--hash takes its own rows");
	{
		const struct key_how id = { "id", 0 }, ns = { "namespace", 7 };
		const struct key_how md5 = { "md5", 0 }, dflt = { NULL, 0 };
		char buf[256];

		ok = key_make(&id, "042", 3, &k, &err) == 0;
		result(ok && key_equal(&k, 0, 42, 0, 0) && k.sql == NULL,
		    "key_make id 042");
		ok = key_make(&id, "1,-2", 4, &k, &err) == 0;
		result(ok && key_equal(&k, 1, 0, 1, -2), "key_make id 1,-2");
		ok = key_make(&id, "x", 1, &k, &err) == KEY_BAD;
		result(ok && strncmp(err.msg, "--id: 'x' is not a lock id",
		    26) == 0, "key_make id x: the caller's error, as --id");
		ok = key_make(&ns, "a\xff", 2, &k, &err) == KEY_BAD;
		result(ok && strstr(err.msg, "not valid UTF-8, which the "
		    "server-side scheme --namespace needs") != NULL,
		    "key_make namespace: text not UTF-8 is the caller's");
		/* A long KEY is cut so that the reason stays in err. */
		memset(name, 0xff, 1000);
		name[1000] = '\0';
		ok = key_make(&ns, name, 1000, &k, &err) == KEY_BAD;
		result(ok && strstr(err.msg, "...: not valid UTF-8") != NULL &&
		    strlen(err.msg) < 300, "key_make: a long KEY not UTF-8, cut");
		ok = key_make(&ns, "deploy", 6, &k, &err) == 0;
		result(ok && k.sql != NULL && strcmp(k.sql, "hashtext($1)") ==
		    0 && strcmp(k.text, "deploy") == 0,
		    "key_make namespace: the server computes hashtext");
		result(strcmp(key_how_name(&dflt), "sha256") == 0 &&
		    strcmp(key_how_name(&ns), "namespace") == 0 &&
		    strcmp(key_how_name(&id), "id") == 0, "key_how_name");
		(void)key_how_describe(&ns, buf, sizeof(buf));
		result(strncmp(buf, "--namespace 7: the pair (N, "
		    "hashtext(key))", 42) == 0, "key_how_describe namespace");
		(void)key_how_describe(&id, buf, sizeof(buf));
		result(strcmp(buf, "--id: the key is the lock id") == 0,
		    "key_how_describe id");
		(void)key_how_describe(&md5, buf, sizeof(buf));
		result(strncmp(buf, "md5: good_job", 13) == 0,
		    "key_how_describe md5");
		/*
		 * The record's names: the scheme's, the id's; a default KEY
		 * that reads as one of those (or begins with ':') after a ':'.
		 */
		const struct {
			const struct key_how *how;
			const char *key, *name;
		} names[] = {
			{ &id, "042", "id:42" }, { &ns, "k", "namespace 7:k" },
			{ &md5, "k", "md5:k" }, { &dflt, "k", "k" },
			{ &dflt, "id:42", ":id:42" },
			{ &dflt, "namespace 7:k", ":namespace 7:k" },
			{ &dflt, "md5:k", ":md5:k" }, { &dflt, ":k", "::k" },
			{ &dflt, "deploy:prod", "deploy:prod" },
			{ &dflt, "sha256:k", "sha256:k" },
		};

		for (j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
			(void)key_record_name(names[j].how, names[j].key, buf,
			    sizeof(buf));
			result(strcmp(buf, names[j].name) == 0, names[j].name);
		}
		result(key_record_name(&id, "x", buf, sizeof(buf)) == -1,
		    "record name: no id, none");
	}
}

int
main(void)
{
	test_vectors();
	test_measured();
	test_siphash();
	test_java();
	test_parse_id();
	test_locktag();
	test_scheme_api();
	printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}

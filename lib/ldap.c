/* SPDX-License-Identifier: ISC */
/*
 * ldap.c: the LDAP calls of a static libpq, answered by the system's
 * libldap loaded on first use (see lib/libpq-link.sh). libpq makes them
 * only for an ldap:// line in pg_service.conf; every other run of pglock
 * starts without libldap, GnuTLS and the libraries they bring.
 *
 * The prototypes are OpenLDAP's (ldap.h, LDAP_DEPRECATED), with its
 * structures left opaque: only pointers to them pass through here.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#ifndef PGLOCK_LDAP_SO
#error "PGLOCK_LDAP_SO: the soname of libpq.so's libldap (lib/libpq-link.sh)"
#endif

typedef struct ldap LDAP;
typedef struct ldapmsg LDAPMessage;
struct berval;
struct timeval;

LDAP *ldap_init(const char *, int);
int ldap_set_option(LDAP *, int, const void *);
int ldap_simple_bind(LDAP *, const char *, const char *);
int ldap_result(LDAP *, int, int, struct timeval *, LDAPMessage **);
int ldap_search_st(LDAP *, const char *, int, const char *, char **, int,
    struct timeval *, LDAPMessage **);
int ldap_count_entries(LDAP *, LDAPMessage *);
LDAPMessage *ldap_first_entry(LDAP *, LDAPMessage *);
struct berval **ldap_get_values_len(LDAP *, LDAPMessage *, const char *);
void ldap_value_free_len(struct berval **);
int ldap_msgfree(LDAPMessage *);
int ldap_unbind(LDAP *);
char *ldap_err2string(int);

/*
 * Set the function pointer at fn (size bytes) to libldap's NAME. Returns
 * 0, or -1 when libldap or NAME cannot be loaded: ldap_init then answers
 * NULL, and libpq says it could not create its LDAP structure.
 */
static int
load(void *fn, size_t size, const char *name)
{
	static void *lib;
	void *p;

	if (lib == NULL)
		lib = dlopen(PGLOCK_LDAP_SO, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL || (p = dlsym(lib, name)) == NULL ||
	    size != sizeof(p))
		return -1;
	/* POSIX: a data pointer from dlsym converts to a function's. */
	memcpy(fn, &p, size);
	return 0;
}

#define CALL(name, fail, ...)						\
	do {								\
		if (load(&f, sizeof(f), #name) != 0)			\
			return fail;					\
		return f(__VA_ARGS__);					\
	} while (0)

LDAP *
ldap_init(const char *host, int port)
{
	LDAP *(*f)(const char *, int);

	CALL(ldap_init, NULL, host, port);
}

int
ldap_set_option(LDAP *ld, int option, const void *value)
{
	int (*f)(LDAP *, int, const void *);

	CALL(ldap_set_option, -1, ld, option, value);
}

int
ldap_simple_bind(LDAP *ld, const char *who, const char *password)
{
	int (*f)(LDAP *, const char *, const char *);

	CALL(ldap_simple_bind, -1, ld, who, password);
}

int
ldap_result(LDAP *ld, int msgid, int all, struct timeval *timeout,
    LDAPMessage **res)
{
	int (*f)(LDAP *, int, int, struct timeval *, LDAPMessage **);

	CALL(ldap_result, -1, ld, msgid, all, timeout, res);
}

int
ldap_search_st(LDAP *ld, const char *base, int scope, const char *filter,
    char **attrs, int attrsonly, struct timeval *timeout, LDAPMessage **res)
{
	int (*f)(LDAP *, const char *, int, const char *, char **, int,
	    struct timeval *, LDAPMessage **);

	CALL(ldap_search_st, -1, ld, base, scope, filter, attrs, attrsonly,
	    timeout, res);
}

int
ldap_count_entries(LDAP *ld, LDAPMessage *chain)
{
	int (*f)(LDAP *, LDAPMessage *);

	CALL(ldap_count_entries, -1, ld, chain);
}

LDAPMessage *
ldap_first_entry(LDAP *ld, LDAPMessage *chain)
{
	LDAPMessage *(*f)(LDAP *, LDAPMessage *);

	CALL(ldap_first_entry, NULL, ld, chain);
}

struct berval **
ldap_get_values_len(LDAP *ld, LDAPMessage *entry, const char *attr)
{
	struct berval **(*f)(LDAP *, LDAPMessage *, const char *);

	CALL(ldap_get_values_len, NULL, ld, entry, attr);
}

void
ldap_value_free_len(struct berval **values)
{
	void (*f)(struct berval **);

	if (load(&f, sizeof(f), "ldap_value_free_len") == 0)
		f(values);
}

int
ldap_msgfree(LDAPMessage *msg)
{
	int (*f)(LDAPMessage *);

	CALL(ldap_msgfree, -1, msg);
}

int
ldap_unbind(LDAP *ld)
{
	int (*f)(LDAP *);

	CALL(ldap_unbind, -1, ld);
}

char *
ldap_err2string(int err)
{
	static char unloaded[] = "libldap could not be loaded";
	char *(*f)(int);

	CALL(ldap_err2string, unloaded, err);
}

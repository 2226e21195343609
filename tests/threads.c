/* SPDX-License-Identifier: ISC */
/*
 * threads GOFIFO: a command whose first thread exits while a second one
 * runs on, which Linux shows as a zombie (Z) until the last thread ends.
 * Prints its pid, ignores TERM, and ends when a line comes on GOFIFO.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void *
wait_go(void *path)
{
	char line[8];
	FILE *f = fopen(path, "r");

	if (f != NULL && fgets(line, sizeof(line), f) != NULL)
		puts("went");
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t t;

	if (argc != 2)
		return 2;
	signal(SIGTERM, SIG_IGN);
	printf("%ld\n", (long)getpid());
	fflush(stdout);
	if (pthread_create(&t, NULL, wait_go, argv[1]) != 0)
		return 1;
	pthread_exit(NULL);
}

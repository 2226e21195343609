/* SPDX-License-Identifier: ISC */
/*
 * tail: the command's output through pglock, for --keep-output. A stream's
 * pipe is read as soon as it holds something, so that what is kept is in
 * the order the command wrote it as nearly as two pipes allow; what was read
 * is written on at the pace of pglock's own reader, a PIPE_BUF at a time as
 * poll() allows, and a stream holding TAIL_BUF unwritten is read no more: a
 * slow reader slows the command, as it would without pglock, and nothing
 * piles up. The database is never waited for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tail.h"

/* A pipe, both ends close-on-exec, the read end non-blocking. */
static int
open_pipe(struct tail_stream *s, int to, struct err *err)
{
	int fd[2];

	if (pipe(fd) == -1) {
		err_set(err, "pipe: %s", strerror(errno));
		return -1;
	}
	if (fcntl(fd[0], F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(fd[1], F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(fd[0], F_SETFL, fcntl(fd[0], F_GETFL) | O_NONBLOCK) == -1) {
		err_set(err, "fcntl: %s", strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	s->in = fd[0];
	s->out = fd[1];
	s->to = to;
	s->off = s->len = 0;
	return 0;
}

int
tail_open(struct tail *t, size_t keep, struct err *err)
{
	t->keep = keep;
	t->used = 0;
	t->s[0].in = t->s[0].out = t->s[1].in = t->s[1].out = -1;
	if ((t->win = malloc(2 * keep)) == NULL) {
		err_set(err, "malloc: %s", strerror(errno));
		return -1;
	}
	if (open_pipe(&t->s[0], STDOUT_FILENO, err) == -1 ||
	    open_pipe(&t->s[1], STDERR_FILENO, err) == -1) {
		tail_close(t);
		return -1;
	}
	return 0;
}

void
tail_child(const struct tail *t)
{
	/* dup2() clears close-on-exec on 1 and 2; the pipes' fds go at exec. */
	(void)dup2(t->s[0].out, STDOUT_FILENO);
	(void)dup2(t->s[1].out, STDERR_FILENO);
}

void
tail_parent(struct tail *t)
{
	int i;

	/* Only the command's side may hold them: its end makes our EOF. */
	for (i = 0; i < 2; i++) {
		if (t->s[i].out != -1)
			close(t->s[i].out);
		t->s[i].out = -1;
	}
}

/*
 * Keep p[0..n-1] after what is kept. The window holds up to 2 * keep bytes,
 * the last keep of them the tail: full, its last keep - n slide to the front,
 * so that each byte is copied about twice and the tail is one piece.
 */
static void
keep_bytes(struct tail *t, const char *p, size_t n)
{
	size_t stay;

	if (n >= t->keep) {
		memcpy(t->win, p + n - t->keep, t->keep);
		t->used = t->keep;
		return;
	}
	if (t->used + n > 2 * t->keep) {
		stay = t->keep - n;
		memmove(t->win, t->win + t->used - stay, stay);
		t->used = stay;
	}
	memcpy(t->win + t->used, p, n);
	t->used += n;
}

/* The pipe is read no more; what was read of it is still written on. */
static void
end_stream(struct tail_stream *s)
{
	if (s->in != -1)
		close(s->in);
	s->in = -1;
}

/*
 * One write (PIPE_BUF at most: poll() said that much fits) of what s holds
 * to pglock's fd. A reader that went away (EPIPE):
 * the pipe is closed too, so that the command's next write fails as it would
 * have on pglock's fd itself ("pglock ... yes | head" ends). Any other error
 * (a full disk): the stream is no longer copied, but still read and kept,
 * lest the command block. 0, or -1 with errno: EAGAIN, EINTR, try again.
 */
static int
write_on(struct tail_stream *s)
{
	size_t want = s->len - s->off < PIPE_BUF ? s->len - s->off : PIPE_BUF;
	ssize_t n = write(s->to, s->buf + s->off, want);

	if (n >= 0) {
		s->off += (size_t)n;
		if (s->off == s->len)
			s->off = s->len = 0;
		return 0;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return -1;
	if (errno == EPIPE)
		end_stream(s);
	/* Nothing more written on: what is held goes. */
	s->to = -1;
	s->off = s->len = 0;
	return 0;
}

/*
 * One read of s's pipe into the room it has, kept: its count, 0 at the end,
 * -1 for nothing now (or no room).
 */
static ssize_t
read_in(struct tail *t, struct tail_stream *s)
{
	ssize_t n;

	if (s->off > 0 && s->len == sizeof(s->buf)) {
		memmove(s->buf, s->buf + s->off, s->len - s->off);
		s->len -= s->off;
		s->off = 0;
	}
	if (s->len == sizeof(s->buf))
		return -1;	/* full */
	n = read(s->in, s->buf + s->len, sizeof(s->buf) - s->len);
	if (n > 0) {
		keep_bytes(t, s->buf + s->len, (size_t)n);
		/* Not copied: kept alone. */
		if (s->to != -1)
			s->len += (size_t)n;
	} else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
	    errno != EINTR)) {
		end_stream(s);
		n = 0;
	}
	return n;
}

void
tail_poll(const struct tail *t, struct pollfd p[TAIL_NFDS])
{
	const struct tail_stream *s;
	size_t i;

	for (i = 0; i < 2; i++) {
		s = &t->s[i];
		p[2 * i].fd = s->len < sizeof(s->buf) || s->off > 0 ? s->in : -1;
		p[2 * i].events = POLLIN;
		p[2 * i + 1].fd = s->off < s->len ? s->to : -1;
		p[2 * i + 1].events = POLLOUT;
		p[2 * i].revents = p[2 * i + 1].revents = 0;
	}
}

void
tail_pump(struct tail *t, const struct pollfd p[TAIL_NFDS])
{
	ssize_t n;
	size_t got, i;

	/*
	 * All each pipe holds, as room allows: stdout's, then stderr's; a
	 * buffer's worth at most, lest a command that writes without end (and
	 * whose output is not copied) keep the lock's checks waiting.
	 */
	for (i = 0; i < 2; i++)
		for (got = 0; p[2 * i].fd != -1 && p[2 * i].revents != 0 &&
		    t->s[i].in != -1 && got < TAIL_BUF; got += (size_t)n)
			if ((n = read_in(t, &t->s[i])) <= 0)
				break;
	for (i = 0; i < 2; i++)
		if (p[2 * i + 1].fd != -1 && p[2 * i + 1].revents != 0 &&
		    t->s[i].off < t->s[i].len)
			(void)write_on(&t->s[i]);
}

int
tail_busy(const struct tail *t)
{
	struct pollfd p[2];
	int i;

	if (t == NULL)
		return 0;
	for (i = 0; i < 2; i++) {
		if (t->s[i].off < t->s[i].len)
			return 1;
		p[i].fd = t->s[i].in;
		p[i].events = POLLIN;
	}
	/* Something to read, or the end of file to see. */
	return poll(p, 2, 0) > 0;
}

/* Wait till fd takes a write (it may be non-blocking: the caller's). */
static void
await_out(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	(void)poll(&p, 1, -1);
}

void
tail_drain(struct tail *t)
{
	struct tail_stream *s;
	int i;

	for (i = 0; i < 2; i++) {
		s = &t->s[i];
		for (;;) {
			while (s->off < s->len)
				if (write_on(s) == -1 && errno != EINTR)
					await_out(s->to);
			/* No writer is left: EAGAIN is one that escaped. */
			if (s->in == -1 || read_in(t, s) <= 0)
				break;
		}
	}
}

const char *
tail_kept(const struct tail *t, size_t *len)
{
	*len = t->used < t->keep ? t->used : t->keep;
	return t->win == NULL ? NULL : t->win + t->used - *len;
}

void
tail_close(struct tail *t)
{
	int i;

	tail_parent(t);
	for (i = 0; i < 2; i++)
		end_stream(&t->s[i]);
	free(t->win);
	t->win = NULL;
}

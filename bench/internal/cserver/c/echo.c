/*
 * A UDP server in C: the practical limit gamegate's UDP paths are compared
 * with. Each thread serves a socket of its own, every socket bound to one
 * loopback port with SO_REUSEPORT (the kernel spreads the sources over
 * them), reading with recvmmsg and answering with sendmmsg, 32 datagrams a
 * batch.
 *
 *   echo -m qos|echo -t THREADS
 *
 * prints the address it serves ("127.0.0.1:PORT") on a line and serves
 * until killed. Modes:
 *
 *   qos   answers a QoS request (wire/qos) as gamegate's QoS echo does when
 *         it lets a source through: 0x95, 0x00 (version 0, no flow
 *         control), then the request's custom data; anything else,
 *         including a title that is not UTF-8, is dropped;
 *   echo  sends every datagram back as it came (the bare loops' echo).
 *
 * No answer is ever longer than its request. Datagrams longer than a
 * buffer are dropped, not cut.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { BATCH = 32, BUFSIZE = 2048, MAX_QOS = 1500, MAX_THREADS = 256 };

static int qos_mode;
static unsigned short port; /* network order, once the first socket is bound */

/* utf8_valid reports whether s[0..n) is well-formed UTF-8 (no overlong
 * forms, no surrogates, nothing above U+10FFFF), as Go's utf8.Valid. */
static int utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		size_t len, k;
		unsigned char lo = 0x80, hi = 0xBF;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			len = 2;
		} else if (c >= 0xE0 && c <= 0xEF) {
			len = 3;
			if (c == 0xE0)
				lo = 0xA0;
			if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			len = 4;
			if (c == 0xF0)
				lo = 0x90;
			if (c == 0xF4)
				hi = 0x8F;
		} else {
			return 0;
		}
		if (n - i < len || s[i + 1] < lo || s[i + 1] > hi)
			return 0;
		for (k = 2; k < len; k++)
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
		i += len;
	}
	return 1;
}

/* qos_answer writes the answer to the QoS request req[0..n) into out and
 * returns its length (n minus the title's length byte's value: always
 * shorter than the request), or 0 to drop the request. */
static size_t qos_answer(const unsigned char *req, size_t n, unsigned char *out)
{
	size_t l, custom;
	if (n < 3 || n > MAX_QOS || req[0] != 0x59 || req[1] != 0x00)
		return 0;
	l = req[2]; /* the title's length, counting this byte */
	if (l == 0 || 2 + l > n || !utf8_valid(req + 3, l - 1))
		return 0;
	custom = n - (2 + l);
	out[0] = 0x95;
	out[1] = 0x00;
	memcpy(out + 2, req + 2 + l, custom);
	return 2 + custom;
}

static int open_socket(void)
{
	int one = 1, size = 4 << 20;
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("socket");
		exit(1);
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) {
		perror("SO_REUSEPORT");
		exit(1);
	}
	/* The kernel caps these at net.core.[rw]mem_max, silently. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = port;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("bind");
		exit(1);
	}
	if (port == 0) {
		socklen_t len = sizeof a;
		if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
			perror("getsockname");
			exit(1);
		}
		port = a.sin_port;
	}
	return fd;
}

struct worker {
	int fd;
	struct mmsghdr in[BATCH], out[BATCH];
	struct iovec iin[BATCH], iout[BATCH];
	struct sockaddr_in from[BATCH];
	unsigned char req[BATCH][BUFSIZE], reply[BATCH][BUFSIZE];
};

static void *serve(void *arg)
{
	struct worker *w = arg;
	int i;
	for (i = 0; i < BATCH; i++) {
		w->iin[i].iov_base = w->req[i];
		w->iin[i].iov_len = BUFSIZE;
		w->in[i].msg_hdr.msg_iov = &w->iin[i];
		w->in[i].msg_hdr.msg_iovlen = 1;
		w->in[i].msg_hdr.msg_name = &w->from[i];
		w->out[i].msg_hdr.msg_iov = &w->iout[i];
		w->out[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		int n, m = 0, sent = 0;
		for (i = 0; i < BATCH; i++) {
			w->in[i].msg_hdr.msg_namelen = sizeof w->from[i];
			w->in[i].msg_hdr.msg_flags = 0;
		}
		n = recvmmsg(w->fd, w->in, BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("recvmmsg");
			exit(1);
		}
		for (i = 0; i < n; i++) {
			size_t len = w->in[i].msg_len;
			struct msghdr *h = &w->out[m].msg_hdr;
			if (w->in[i].msg_hdr.msg_flags & MSG_TRUNC)
				continue;
			if (qos_mode) {
				len = qos_answer(w->req[i], len, w->reply[m]);
				if (len == 0)
					continue;
				w->iout[m].iov_base = w->reply[m];
			} else {
				w->iout[m].iov_base = w->req[i];
			}
			w->iout[m].iov_len = len;
			h->msg_name = &w->from[i];
			h->msg_namelen = w->in[i].msg_hdr.msg_namelen;
			m++;
		}
		while (sent < m) {
			int r = sendmmsg(w->fd, w->out + sent, m - sent, 0);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				sent++; /* this datagram cannot go: drop it, send the rest */
				continue;
			}
			sent += r;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1, i, opt;
	const char *mode = "qos";
	pthread_t tid;
	while ((opt = getopt(argc, argv, "m:t:")) != -1) {
		switch (opt) {
		case 'm':
			mode = optarg;
			break;
		case 't':
			threads = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-m qos|echo] [-t threads]\n", argv[0]);
			return 2;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || (strcmp(mode, "qos") != 0 && strcmp(mode, "echo") != 0)) {
		fprintf(stderr, "%s: want -m qos or echo and -t 1 to %d\n", argv[0], MAX_THREADS);
		return 2;
	}
	qos_mode = strcmp(mode, "qos") == 0;
	for (i = 0; i < threads; i++) {
		struct worker *w = calloc(1, sizeof *w);
		if (w == NULL) {
			perror("calloc");
			return 1;
		}
		w->fd = open_socket();
		if (pthread_create(&tid, NULL, serve, w) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	/* Every socket is bound: the port is served. */
	printf("127.0.0.1:%u\n", (unsigned)ntohs(port));
	fflush(stdout);
	/* The threads never return; the main thread waits for the last
	 * rather than exit (a process whose main thread has ended shows as
	 * defunct). */
	pthread_join(tid, NULL);
	return 0;
}

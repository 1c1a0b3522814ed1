/*
 * ethfab-mpibench: a small MPI ping-pong / all-to-all microbenchmark for
 * ethfab's emulated Ethernet fabrics.
 *
 * Build: mpicc -O2 -Wall -Wextra -o ethfab-mpibench bench/mpi/mpibench.c
 * Usage: ethfab-mpibench [pingpong|alltoall|all] [--sizes LIST] [--iters N]
 *                        [--max-time SECONDS] [--pair A,B]
 *
 * Rank 0 writes one JSON object per line to stdout (and nothing else), so a
 * caller can parse the output as it streams; diagnostics go to stderr.
 *
 * Design notes.  The fabric's links may be shaped down to 10 Mbit/s, where a
 * 1 MiB message needs almost a second each way, so every loop is bounded by
 * wall time as well as by an iteration count.  The fabric's "hosts" are
 * network namespaces sharing one machine's few cores, so ranks with nothing to
 * do sleep between polls instead of spinning in a blocking MPI call, which
 * would steal CPU from the ranks being measured.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZES 64
#define MAX_ITERS 1000000 /* keeps the per-iteration time array small */
#define MIN_ITERS 3       /* the time limit never cuts a size below this */
#define TAG_PING 1
#define TAG_STOP 2
#define TAG_RESULT 3

enum { RUN_PINGPONG = 1, RUN_ALLTOALL = 2 };

struct opts {
    int run;                 /* RUN_* bits */
    size_t sizes[MAX_SIZES]; /* nsizes == 0: each benchmark's defaults */
    int nsizes;
    long iters;
    double max_time;
    int pair[2];
    int help;
};

static const size_t pingpong_default[] = {8, 1024, 65536, 1048576};
static const size_t alltoall_default[] = {8, 1024, 65536};

static void usage(FILE *f)
{
    fprintf(f, "usage: ethfab-mpibench [pingpong|alltoall|all] [--sizes LIST] [--iters N]\n"
               "                       [--max-time SECONDS] [--pair A,B]\n"
               "  --sizes     comma-separated byte counts, suffix k/m/g = KiB/MiB/GiB\n"
               "              (default pingpong 8,1024,65536,1048576; alltoall 8,1024,65536)\n"
               "  --iters     iterations per size, 1..%d (default 100)\n"
               "  --max-time  stop a size after this many seconds, once %d iterations ran (default 5)\n"
               "  --pair      the two ping-pong ranks (default 0 and the last rank)\n",
            MAX_ITERS, MIN_ITERS);
}

/* Parses one byte count; the suffixes exist because 1048576 is easy to mistype. */
static int parse_size(const char *s, size_t len, size_t *out)
{
    char tmp[32], *end;
    if (len == 0 || len >= sizeof tmp || s[0] < '0' || s[0] > '9')
        return -1;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    errno = 0;
    unsigned long long v = strtoull(tmp, &end, 10);
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1ULL << 10, end++;
    else if (*end == 'm' || *end == 'M') mul = 1ULL << 20, end++;
    else if (*end == 'g' || *end == 'G') mul = 1ULL << 30, end++;
    /* MPI counts are ints, so a message can be at most INT_MAX bytes. */
    if (errno || *end != '\0' || v > (unsigned long long)INT_MAX / mul)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

/*
 * Every rank parses the same argv and so reaches the same verdict without
 * communicating; only rank 0 prints, so the message appears once.  Returns 0,
 * or 2 for bad arguments.
 */
static int parse_args(int argc, char **argv, int nranks, int loud, struct opts *o)
{
    int mode_seen = 0, pair_set = 0;
    memset(o, 0, sizeof *o);
    o->run = RUN_PINGPONG | RUN_ALLTOALL;
    o->iters = 100;
    o->max_time = 5.0;

#define BAD(...) do { if (loud) { fprintf(stderr, "ethfab-mpibench: " __VA_ARGS__); \
                                   fputc('\n', stderr); usage(stderr); } return 2; } while (0)

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        char flag[32];
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
            return o->help = 1, 0;
        if (strncmp(arg, "--", 2) != 0) {
            if (mode_seen)
                BAD("unexpected argument '%s' (the mode was already given)", arg);
            mode_seen = 1;
            if (strcmp(arg, "pingpong") == 0) o->run = RUN_PINGPONG;
            else if (strcmp(arg, "alltoall") == 0) o->run = RUN_ALLTOALL;
            else if (strcmp(arg, "all") == 0) o->run = RUN_PINGPONG | RUN_ALLTOALL;
            else BAD("unknown mode '%s' (want pingpong, alltoall or all)", arg);
            continue;
        }
        /* Accept both "--flag value" and "--flag=value". */
        const char *eq = strchr(arg, '=');
        size_t flen = eq ? (size_t)(eq - arg) : strlen(arg);
        if (flen >= sizeof flag)
            BAD("unknown flag '%s'", arg);
        memcpy(flag, arg, flen);
        flag[flen] = '\0';
        if (strcmp(flag, "--sizes") && strcmp(flag, "--iters") &&
            strcmp(flag, "--max-time") && strcmp(flag, "--pair"))
            BAD("unknown flag '%s'", flag);
        if (eq) val = eq + 1;
        else if (i + 1 < argc) val = argv[++i];
        else BAD("%s needs a value", flag);

        if (strcmp(flag, "--sizes") == 0) {
            o->nsizes = 0;
            for (const char *p = val;; ) {
                const char *c = strchr(p, ',');
                size_t len = c ? (size_t)(c - p) : strlen(p);
                if (o->nsizes == MAX_SIZES)
                    BAD("--sizes: more than %d sizes", MAX_SIZES);
                if (parse_size(p, len, &o->sizes[o->nsizes]))
                    BAD("--sizes: '%.*s' is not a byte count (want e.g. 8,1024,64k; at most %d bytes)",
                        (int)len, p, INT_MAX);
                o->nsizes++;
                if (!c) break;
                p = c + 1;
            }
        } else if (strcmp(flag, "--iters") == 0) {
            char *end;
            errno = 0;
            o->iters = strtol(val, &end, 10);
            if (errno || end == val || *end != '\0' || o->iters < 1 || o->iters > MAX_ITERS)
                BAD("--iters: '%s' is not a whole number from 1 to %d", val, MAX_ITERS);
        } else if (strcmp(flag, "--max-time") == 0) {
            char *end;
            errno = 0;
            o->max_time = strtod(val, &end);
            if (errno || end == val || *end != '\0' || !isfinite(o->max_time) || o->max_time < 0)
                BAD("--max-time: '%s' is not a number of seconds >= 0", val);
        } else { /* --pair */
            int a, b, used = -1;
            if (sscanf(val, "%d,%d%n", &a, &b, &used) != 2 || val[used] != '\0' || a < 0 || b < 0)
                BAD("--pair: '%s' is not two rank numbers A,B", val);
            if (a >= nranks || b >= nranks)
                BAD("--pair: %s names a rank outside 0..%d (%d ranks)", val, nranks - 1, nranks);
            if (a == b)
                BAD("--pair: %s names the same rank twice", val);
            o->pair[0] = a, o->pair[1] = b;
            pair_set = 1;
        }
    }
    if (!pair_set)
        o->pair[0] = 0, o->pair[1] = nranks - 1;
    /* Asking for pingpong alone on one rank is a mistake; "all" just skips it (see main). */
    if (o->run == RUN_PINGPONG && nranks < 2)
        BAD("pingpong needs at least 2 ranks (got %d)", nranks);
#undef BAD
    return 0;
}

/*
 * Data pattern.  The seed mixes sender, receiver, iteration and size, so a
 * stale buffer, a message from the wrong rank or a truncated/shifted payload
 * all fail the check.  Filling and checking happen outside the timed regions.
 */
static uint32_t seed_of(int src, int dst, long iter, size_t bytes)
{
    uint32_t h = 2166136261u;
    uint32_t v[4] = {(uint32_t)src, (uint32_t)dst, (uint32_t)iter, (uint32_t)bytes};
    for (int i = 0; i < 4; i++) h = (h ^ v[i]) * 16777619u;
    return h;
}

static inline unsigned char pattern(uint32_t seed, size_t i)
{
    uint32_t x = seed + (uint32_t)(i / 4) * 0x9E3779B1u;
    x ^= x >> 16;
    x *= 0x85EBCA6Bu;
    x ^= x >> 13;
    return (unsigned char)(x >> (8 * (i % 4)));
}

static void fill(unsigned char *buf, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) buf[i] = pattern(seed, i);
}

/* st is the receive's status (NULL for alltoall, whose counts MPI fixes). */
static void check(const unsigned char *buf, size_t n, MPI_Status *st, uint32_t seed,
                  const char *bench, int me, int from, long iter)
{
    int got;
    if (st && (MPI_Get_count(st, MPI_BYTE, &got), (size_t)got != n)) {
        fprintf(stderr, "ethfab-mpibench: %s: rank %d got %d bytes from rank %d, expected %zu\n",
                bench, me, got, from, n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != pattern(seed, i)) {
            fprintf(stderr, "ethfab-mpibench: %s: rank %d got corrupt data from rank %d "
                    "(size %zu, iteration %ld, byte %zu: 0x%02x, expected 0x%02x)\n",
                    bench, me, from, n, iter, i, buf[i], pattern(seed, i));
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ethfab-mpibench: out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* Waits without spinning: polls (which also drives MPI progress) every 1 ms. */
static void lazy_wait(MPI_Request *req, MPI_Status *st)
{
    const struct timespec ms = {0, 1000000};
    int done = 0;
    for (;;) {
        MPI_Test(req, &done, st ? st : MPI_STATUS_IGNORE);
        if (done) return;
        nanosleep(&ms, NULL);
    }
}

/* JSON has no NaN or Infinity, so anything not finite becomes null. */
static void put_num(double v)
{
    if (isfinite(v)) printf("%.3f", v);
    else fputs("null", stdout);
}

static void put_stats(const char *key, double mean, double min, double max)
{
    printf("\"%s\":{\"mean\":", key), put_num(mean);
    fputs(",\"min\":", stdout), put_num(min);
    fputs(",\"max\":", stdout), put_num(max);
    putchar('}');
}

/* Bits per microsecond is Mbit/s; a zero time cannot be divided by, so null. */
static double mbps(double bits, double us)
{
    return us > 0 ? bits / us : NAN;
}

/* A result as sent from ping-pong rank A to rank 0: iters, mean, min, max (one-way, s). */
static void print_pingpong(const struct opts *o, int nranks, size_t n, const double r[4])
{
    printf("{\"bench\":\"pingpong\",\"bytes\":%zu,\"ranks\":%d,\"pair\":[%d,%d],\"iters\":%ld,",
           n, nranks, o->pair[0], o->pair[1], (long)r[0]);
    put_stats("latency_us", r[1] * 1e6, r[2] * 1e6, r[3] * 1e6);
    fputs(",\"bandwidth_mbps\":", stdout);
    put_num(mbps(8.0 * (double)n, r[1] * 1e6));
    fputs("}\n", stdout);
    fflush(stdout);
}

static void run_pingpong(const struct opts *o, int rank, int nranks)
{
    const size_t *sizes = o->nsizes ? o->sizes : pingpong_default;
    int nsizes = o->nsizes ? o->nsizes : (int)(sizeof pingpong_default / sizeof *sizes);
    int a = o->pair[0], b = o->pair[1];
    size_t maxn = 0;
    unsigned char *sbuf = NULL, *rbuf = NULL;

    for (int s = 0; s < nsizes; s++)
        if (sizes[s] > maxn) maxn = sizes[s];
    if (rank == a || rank == b) {
        sbuf = xmalloc(maxn);
        rbuf = xmalloc(maxn);
    }

    for (int s = 0; s < nsizes; s++) {
        size_t n = sizes[s];
        double res[4];
        MPI_Status st;

        if (rank == a) {
            /*
             * Warm-up is untimed: the TCP BTL connects lazily on the first
             * message, and the first large message sets up the rendezvous path.
             * It counts against --max-time, so a slow link still bounds a size.
             */
            int warm = s == 0 ? 3 : 1;
            double t_size = MPI_Wtime(), sum = 0, min = INFINITY, max = 0;
            long k = 0, done = 0;
            while (done < o->iters) {
                uint32_t seed = seed_of(a, b, k, n);
                fill(sbuf, n, seed);
                double t0 = MPI_Wtime();
                MPI_Send(sbuf, (int)n, MPI_BYTE, b, TAG_PING, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)n, MPI_BYTE, b, TAG_PING, MPI_COMM_WORLD, &st);
                double oneway = (MPI_Wtime() - t0) / 2;
                check(rbuf, n, &st, seed, "pingpong", rank, b, k); /* B echoes A's bytes */
                if (k++ >= warm) {
                    done++;
                    sum += oneway;
                    if (oneway < min) min = oneway;
                    if (oneway > max) max = oneway;
                    if (done >= MIN_ITERS && MPI_Wtime() - t_size >= o->max_time)
                        break;
                }
            }
            /* The stop travels as its own tag, so the echo loop needs no extra round trip. */
            MPI_Send(NULL, 0, MPI_BYTE, b, TAG_STOP, MPI_COMM_WORLD);
            res[0] = (double)done, res[1] = sum / (double)done, res[2] = min, res[3] = max;
            if (rank == 0)
                print_pingpong(o, nranks, n, res);
            else
                MPI_Send(res, 4, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD);
        } else if (rank == b) {
            for (long k = 0;; k++) {
                MPI_Recv(rbuf, (int)n, MPI_BYTE, a, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                if (st.MPI_TAG == TAG_STOP)
                    break;
                MPI_Send(rbuf, (int)n, MPI_BYTE, a, TAG_PING, MPI_COMM_WORLD);
                /* Checked after echoing, so the check overlaps A's own check. */
                check(rbuf, n, &st, seed_of(a, b, k, n), "pingpong", rank, a, k);
            }
            if (rank == 0) {
                MPI_Recv(res, 4, MPI_DOUBLE, a, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                print_pingpong(o, nranks, n, res);
            }
        } else if (rank == 0) {
            /* Rank 0 is a bystander here but owns stdout; it must not spin while waiting. */
            MPI_Request req;
            MPI_Irecv(res, 4, MPI_DOUBLE, a, TAG_RESULT, MPI_COMM_WORLD, &req);
            lazy_wait(&req, NULL);
            print_pingpong(o, nranks, n, res);
        }
    }

    /* Bystanders wait here for the whole ping-pong, sleeping between polls. */
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    lazy_wait(&req, NULL);
    free(sbuf);
    free(rbuf);
}

static void run_alltoall(const struct opts *o, int rank, int nranks)
{
    const size_t *sizes = o->nsizes ? o->sizes : alltoall_default;
    int nsizes = o->nsizes ? o->nsizes : (int)(sizeof alltoall_default / sizeof *sizes);
    size_t maxn = 0;

    for (int s = 0; s < nsizes; s++)
        if (sizes[s] > maxn) maxn = sizes[s];
    if (maxn > SIZE_MAX / (size_t)nranks) /* only conceivable with a 32-bit size_t */
        xmalloc(SIZE_MAX);
    unsigned char *sbuf = xmalloc(maxn * (size_t)nranks);
    unsigned char *rbuf = xmalloc(maxn * (size_t)nranks);
    /* One slot per iteration: combining ranks' times per iteration is left to the end. */
    double *t = xmalloc(sizeof *t * (size_t)(o->iters + 1));
    double *tmax = rank == 0 ? xmalloc(sizeof *t * (size_t)(o->iters + 1)) : NULL;

    for (int s = 0; s < nsizes; s++) {
        size_t n = sizes[s];
        double t_size = MPI_Wtime();
        long done = 0;
        /* it == -1 is one untimed warm-up: it makes the all-pairs TCP connections. */
        for (long it = -1;; it++) {
            for (int d = 0; d < nranks; d++)
                fill(sbuf + (size_t)d * n, n, seed_of(rank, d, it, n));
            /* Start together, so a rank's time is not its wait for the others. */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Alltoall(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
            double dt = MPI_Wtime() - t0;
            for (int src = 0; src < nranks; src++)
                check(rbuf + (size_t)src * n, n, NULL, seed_of(src, rank, it, n), "alltoall", rank, src, it);
            if (it < 0)
                continue;
            t[done++] = dt;
            /*
             * Only rank 0's clock decides, and everyone follows its broadcast:
             * ranks deciding on their own clocks could disagree and leave some
             * ranks in an MPI_Alltoall the others never join.
             */
            int go = 0;
            if (rank == 0)
                go = done < o->iters && !(done >= MIN_ITERS && MPI_Wtime() - t_size >= o->max_time);
            MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
            if (!go)
                break;
        }
        /* An alltoall is finished when its slowest rank is, so take the max per iteration. */
        MPI_Reduce(t, tmax, (int)done, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double sum = 0, min = INFINITY, max = 0;
            for (long i = 0; i < done; i++) {
                sum += tmax[i];
                if (tmax[i] < min) min = tmax[i];
                if (tmax[i] > max) max = tmax[i];
            }
            double mean_us = sum / (double)done * 1e6;
            double bits = (double)nranks * (nranks - 1) * (double)n * 8.0;
            printf("{\"bench\":\"alltoall\",\"bytes\":%zu,\"ranks\":%d,\"iters\":%ld,", n, nranks, done);
            put_stats("time_us", mean_us, min * 1e6, max * 1e6);
            fputs(",\"bandwidth_mbps\":", stdout);
            put_num(mbps(bits, mean_us));
            fputs("}\n", stdout);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
    free(t);
    free(tmax);
}

/* Host names go inside JSON strings, so quote what JSON requires. */
static void put_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

int main(int argc, char **argv)
{
    int rank, nranks, rc, rc_all;
    struct opts o;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    rc = parse_args(argc, argv, nranks, rank == 0, &o);
    /* Should argv ever differ between ranks, all of them still leave together. */
    MPI_Allreduce(&rc, &rc_all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc_all || o.help) {
        if (rank == 0 && o.help && !rc_all)
            usage(stderr);
        if (rank == 0 && rc_all && !rc)
            fprintf(stderr, "ethfab-mpibench: bad arguments on another rank\n");
        MPI_Finalize();
        return rc_all;
    }

    /* The header says where every rank ran, so a caller can check the placement. */
    char name[MPI_MAX_PROCESSOR_NAME];
    int len;
    memset(name, 0, sizeof name);
    MPI_Get_processor_name(name, &len);
    char *names = rank == 0 ? xmalloc((size_t)nranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"bench\":\"info\",\"ranks\":%d,\"hosts\":[", nranks);
        for (int r = 0; r < nranks; r++) {
            names[(size_t)(r + 1) * MPI_MAX_PROCESSOR_NAME - 1] = '\0';
            if (r) putchar(',');
            put_string(names + (size_t)r * MPI_MAX_PROCESSOR_NAME);
        }
        fputs("]}\n", stdout);
        fflush(stdout);
        free(names);
    }

    if (o.run & RUN_PINGPONG) {
        if (nranks >= 2)
            run_pingpong(&o, rank, nranks);
        else if (rank == 0)
            fprintf(stderr, "ethfab-mpibench: pingpong skipped: it needs at least 2 ranks\n");
    }
    if (o.run & RUN_ALLTOALL)
        run_alltoall(&o, rank, nranks);

    MPI_Finalize();
    return 0;
}

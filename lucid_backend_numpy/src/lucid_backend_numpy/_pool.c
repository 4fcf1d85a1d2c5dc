/*
 * One thread pool for OpenBLAS and the compiled kernels (see _parallel.py for why, with the measurements).
 *
 * OpenBLAS's own worker threads spin for about 0.1 s after each threaded call; a second pool whose workers
 * spin as well then finds the other core taken, and on two cores a product followed by a split kernel took
 * 8 ms instead of 0.4. OpenBLAS 0.3.28+ lets a program run its jobs instead
 * (`openblas_set_threads_callback_function`): `lucid_blas_threads` is that callback, so BLAS's jobs and our
 * kernels' slices run on the same workers, which spin for `spin` seconds after their last slice (so a
 * hand-off costs microseconds while the pool is in use) and then sleep on a condition variable.
 *
 * POSIX threads only; elsewhere every loop runs on the calling thread.
 */
#define _POSIX_C_SOURCE 200809L
#include "_pool.h"

#if defined(_WIN32)
#define LUCID_EXPORT __declspec(dllexport)
void lucid_pool_for(lucid_part_fn fn, void *arg, ptrdiff_t first, ptrdiff_t end, int parts, ptrdiff_t align) {
    (void)parts, (void)align;
    if (end > first)
        fn(arg, first, end, 0);
}
LUCID_EXPORT int lucid_pool_available(void) { return 0; }
LUCID_EXPORT int lucid_pool_threads(int n) { return (void)n, 1; }
LUCID_EXPORT void lucid_pool_park(void) {}
LUCID_EXPORT long lucid_pool_blas_calls(void) { return 0; }
LUCID_EXPORT void lucid_pool_blas_info(const int *own_threads, int max_threads) {
    (void)own_threads, (void)max_threads;
}
#else
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

#define LUCID_EXPORT __attribute__((visibility("default")))
#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif
#define MAX_WORKERS 63

typedef struct {
    unsigned seq; /* bumped by the submitting thread for each slice it posts */
    int done;     /* 1 once the posted slice has run */
    lucid_part_fn fn;
    void *arg;
    ptrdiff_t lo, hi;
    int part;
} __attribute__((aligned(64))) worker_t; /* one cache line each: workers never share one */

static worker_t workers[MAX_WORKERS];
static int started;                                /* worker threads running (under `submit`) */
static int wanted = 1;                             /* threads a kernel split uses, the caller's included */
static pthread_mutex_t submit = PTHREAD_MUTEX_INITIALIZER; /* one split at a time */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cond = PTHREAD_COND_INITIALIZER;
static int sleepers;        /* workers asleep or going to sleep */
static unsigned park_epoch; /* bumped by lucid_pool_park: spinning workers go to sleep */
static const long long spin_ns = 100000000LL; /* how long workers spin after their last slice */
static long blas_calls;
static __thread int busy_here; /* this thread is a worker, or is submitting a split: no nested split */
static int fork_handler;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *worker_loop(void *p) {
    worker_t *w = p;
    unsigned seen = 0, epoch = __atomic_load_n(&park_epoch, __ATOMIC_RELAXED);
    busy_here = 1;
    for (;;) {
        long long t0 = now_ns();
        unsigned spins = 0;
        while (__atomic_load_n(&w->seq, __ATOMIC_ACQUIRE) == seen) {
            cpu_relax();
            if ((++spins & 63) != 0)
                continue;
            sched_yield(); /* every few microseconds: any other runnable thread on this core goes first */
            const unsigned e = __atomic_load_n(&park_epoch, __ATOMIC_RELAXED);
            if (e == epoch && now_ns() - t0 < spin_ns)
                continue;
            epoch = e;
            pthread_mutex_lock(&sleep_lock);
            __atomic_add_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
            while (__atomic_load_n(&w->seq, __ATOMIC_SEQ_CST) == seen)
                pthread_cond_wait(&sleep_cond, &sleep_lock);
            __atomic_sub_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&sleep_lock);
        }
        seen = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
        w->fn(w->arg, w->lo, w->hi, w->part);
        __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* A forked child has none of the parent's threads, and a lock held at the fork would stay held. */
static void after_fork_child(void) {
    started = 0;
    sleepers = 0;
    busy_here = 0;
    pthread_mutex_init(&submit, NULL);
    pthread_mutex_init(&sleep_lock, NULL);
    pthread_cond_init(&sleep_cond, NULL);
}

static void start_workers(int n) { /* under `submit` */
    if (!fork_handler)
        fork_handler = pthread_atfork(NULL, NULL, after_fork_child) == 0;
    if (started >= n)
        return;
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* signals go to the program's threads, not to workers */
    for (; started < n; started++) {
        pthread_t t;
        worker_t *w = &workers[started];
        w->seq = 0;
        w->done = 1;
        if (pthread_create(&t, &attr, worker_loop, w) != 0)
            break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

/* Spin until a worker's slice is done, yielding every few microseconds: a worker that the kernel placed on this
 * core (a new thread starts on its creator's core) then runs at once instead of after our time slice. */
static void wait_done(worker_t *w) {
    unsigned spins = 0;
    while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE))
        if ((++spins & 63) == 0)
            sched_yield();
        else
            cpu_relax();
}

/* Run the slices split; 0 when the pool cannot take them now (the caller then runs them itself). `must`
 * waits for a split in another thread to end instead of giving up. */
static int run_split(lucid_part_fn fn, void *arg, ptrdiff_t first, ptrdiff_t n, int parts, ptrdiff_t align,
                     int must) {
    if (must ? pthread_mutex_lock(&submit) != 0 : pthread_mutex_trylock(&submit) != 0)
        return 0;
    start_workers(parts - 1);
    if (started < parts - 1) {
        pthread_mutex_unlock(&submit);
        return 0;
    }
    const ptrdiff_t units = (n + align - 1) / align;
    busy_here = 1;
    for (int i = 1; i < parts; i++) {
        worker_t *w = &workers[i - 1];
        const ptrdiff_t lo = units * i / parts * align, hi = units * (i + 1) / parts * align;
        w->fn = fn;
        w->arg = arg;
        w->lo = first + (lo < n ? lo : n);
        w->hi = first + (hi < n ? hi : n);
        w->part = i;
        __atomic_store_n(&w->done, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&w->seq, 1, __ATOMIC_SEQ_CST);
    }
    if (__atomic_load_n(&sleepers, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&sleep_lock);
        pthread_cond_broadcast(&sleep_cond);
        pthread_mutex_unlock(&sleep_lock);
    }
    const ptrdiff_t hi0 = units / parts * align;
    fn(arg, first, first + (hi0 < n ? hi0 : n), 0);
    for (int i = 1; i < parts; i++)
        wait_done(&workers[i - 1]);
    busy_here = 0;
    pthread_mutex_unlock(&submit);
    return 1;
}

void lucid_pool_for(lucid_part_fn fn, void *arg, ptrdiff_t first, ptrdiff_t end, int parts, ptrdiff_t align) {
    const ptrdiff_t n = end - first;
    if (n <= 0)
        return;
    if (align < 1)
        align = 1;
    const ptrdiff_t units = (n + align - 1) / align;
    if (parts > wanted)
        parts = wanted;
    if (parts > units)
        parts = (int)units;
    if (parts <= 1 || busy_here || !run_split(fn, arg, first, n, parts, align, 0))
        fn(arg, first, end, 0);
}

/* OpenBLAS's callback (openblas_set_threads_callback_function): run its `numjobs` jobs at once (they wait for one
 * another's packed panels), each as an OpenBLAS thread of its own (per-thread buffers), job 0 on the calling
 * thread. */
typedef void (*blas_dojob)(int thread, void *job, int data);
struct blas_jobs {
    blas_dojob dojob;
    char *jobs;
    size_t size;
    int data, first;
};

/* OpenBLAS's thread count (its `blas_num_threads`) and its MAX_THREADS, from lucid_pool_blas_info. */
static const volatile int *blas_own;
static int blas_max = 0;

static void blas_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct blas_jobs *j = p;
    (void)part;
    for (ptrdiff_t i = lo; i < hi; i++)
        j->dojob(j->first + (int)i, j->jobs + (size_t)i * j->size, j->data);
}

static void *blas_thread(void *p) {
    void **a = p;
    blas_part(a[0], (ptrdiff_t)a[1], (ptrdiff_t)a[1] + 1, 0);
    return NULL;
}

LUCID_EXPORT void lucid_blas_threads(int sync, blas_dojob dojob, int numjobs, size_t size, void *jobs, int data) {
    /* Job i runs as OpenBLAS thread `first + i`: past the indices of OpenBLAS's own workers (0 .. its thread count
     * - 2), which it still uses for the jobs it queues itself (LU's getrf_parallel), so that another thread's LU
     * running on them at the same time keeps its per-thread state (without it: a hang, measured). */
    int first = 0;
    if (blas_own != NULL) {
        const int own = *blas_own - 1;
        if (own > 0 && own + numjobs <= blas_max)
            first = own;
    }
    struct blas_jobs j = {dojob, jobs, size, data, first};
    (void)sync; /* OpenBLAS always asks for a synchronous run */
    __atomic_add_fetch(&blas_calls, 1, __ATOMIC_RELAXED);
    if (numjobs <= 1) {
        blas_part(&j, 0, numjobs, 0);
        return;
    }
    if (!busy_here && numjobs - 1 <= MAX_WORKERS && run_split(blas_part, &j, 0, numjobs, numjobs, 1, 1))
        return;
    /* a call from inside a split, or workers that cannot start: a thread per job, as the jobs must overlap */
    pthread_t t[MAX_WORKERS];
    void *a[MAX_WORKERS][2];
    int made = 0;
    for (int i = 1; i < numjobs && i <= MAX_WORKERS; i++, made++) {
        a[i - 1][0] = &j;
        a[i - 1][1] = (void *)(ptrdiff_t)i;
        if (pthread_create(&t[i - 1], NULL, blas_thread, a[i - 1]) != 0)
            break;
    }
    blas_part(&j, 0, 1, 0);
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
}

/* Where OpenBLAS keeps its thread count (its exported `blas_num_threads`), and its MAX_THREADS (from
 * openblas_get_config): the BLAS jobs then run as thread indices its own workers do not use. */
LUCID_EXPORT void lucid_pool_blas_info(const int *own_threads, int max_threads) {
    blas_own = own_threads;
    blas_max = max_threads;
}

/* 1: the pool works here (POSIX threads). */
LUCID_EXPORT int lucid_pool_available(void) { return 1; }

/* Threads a kernel split uses (the caller's included); returns the previous count. */
LUCID_EXPORT int lucid_pool_threads(int n) {
    const int old = wanted;
    wanted = n < 1 ? 1 : n > MAX_WORKERS + 1 ? MAX_WORKERS + 1 : n;
    return old;
}

/* Spinning workers go to sleep now (another pool is about to use the cores). */
LUCID_EXPORT void lucid_pool_park(void) { __atomic_add_fetch(&park_epoch, 1, __ATOMIC_RELAXED); }

/* How many times OpenBLAS has handed its jobs to the pool (for tests). */
LUCID_EXPORT long lucid_pool_blas_calls(void) { return __atomic_load_n(&blas_calls, __ATOMIC_RELAXED); }
#endif

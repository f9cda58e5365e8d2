/* The compiled kernels' intra-op threads (ember.set_num_threads): a range split over workers
 * that wait for work by spinning a short while before they sleep.
 *
 * Python reference: ember/_threads.py's pool (a ThreadPoolExecutor). Handing a range to a
 * Python pool thread and collecting it costs tens of microseconds (a futex wake each way, more
 * on a virtual machine: ~87 us measured here), as much as the pooling, im2col and relu kernels
 * of a small CNN take whole, so those kernels ran on one thread. A worker that is still
 * spinning picks a range up in about a microsecond; kernels come every few tens of
 * microseconds in a training step, so the workers rarely sleep while a step runs, and sleep
 * (no CPU) once it ends.
 *
 * One parallel region at a time: a call while another runs (another Python thread's kernel)
 * runs its ranges on the calling thread. The ranges must write disjoint memory; the split
 * does not change which elements a range computes, so results are the same on any number of
 * threads.
 */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL ember_ARRAY_API
#include "ember_c.h"
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#define MAX_WORKERS 64
#define SPIN_NS 2000000   /* how long an idle worker spins before it sleeps */
#define CHUNKS_PER_THREAD 4

/* A region is cut into more chunks than threads, and every thread, the caller included,
 * claims chunks until none is left: a worker that is slow to wake (its core busy with another
 * process) leaves its chunks to the others, so a loaded machine runs a region at one thread's
 * speed rather than waiting for it. A claim is a compare-and-swap on (generation, next chunk),
 * so a worker that wakes for a region that has ended claims nothing. */
static struct {
    pthread_mutex_t lock;         /* guards sleeping workers and the wake-up */
    pthread_cond_t wake;
    pthread_mutex_t region;       /* one parallel region at a time */
    atomic_ulong generation;      /* bumped once per region */
    atomic_ullong claim;          /* generation << 32 | the next chunk to take */
    atomic_long finished;         /* chunks done in this region */
    int threads;                  /* ember.set_num_threads, the caller included (0: not set) */
    int started;                  /* workers running */
    range_fn fn;
    void *ctx;
    npy_intp n, step, chunks;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
          .region = PTHREAD_MUTEX_INITIALIZER};

/* the caller's busy wait for a worker's last chunk: short, so it keeps its core */
static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* run the chunks of region `gen` that nobody has claimed yet */
static void take_chunks(unsigned long gen)
{
    unsigned long long c = atomic_load_explicit(&pool.claim, memory_order_acquire);
    for (;;) {
        if ((c >> 32) != (gen & 0xffffffffUL) || (npy_intp)(c & 0xffffffffULL) >= pool.chunks)
            return;
        if (!atomic_compare_exchange_weak_explicit(&pool.claim, &c, c + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        npy_intp a = (npy_intp)(c & 0xffffffffULL) * pool.step;
        npy_intp b = a + pool.step < pool.n ? a + pool.step : pool.n;
        pool.fn(pool.ctx, a, b);
        atomic_fetch_add_explicit(&pool.finished, 1, memory_order_release);
        c = atomic_load_explicit(&pool.claim, memory_order_acquire);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    unsigned long seen = 0;
    for (;;) {
        long long since = now_ns();
        unsigned long gen;
        /* sched_yield: a BLAS worker woken on this core runs at once (a pause loop would
         * hold the core for its time slice, and the GEMM behind it waits) */
        while ((gen = atomic_load_explicit(&pool.generation, memory_order_acquire)) == seen &&
               now_ns() - since < SPIN_NS)
            sched_yield();
        if (gen == seen) {
            pthread_mutex_lock(&pool.lock);
            while ((gen = atomic_load(&pool.generation)) == seen)
                pthread_cond_wait(&pool.wake, &pool.lock);
            pthread_mutex_unlock(&pool.lock);
        }
        seen = gen;
        take_chunks(gen);
    }
    return NULL;
}

/* a forked child has none of the parent's workers: start afresh */
static void after_fork_in_child(void)
{
    pthread_mutex_init(&pool.lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_mutex_init(&pool.region, NULL);
    pool.started = 0;
}

static int start_workers(int want)
{
    static int registered;
    if (!registered) {
        pthread_atfork(NULL, NULL, after_fork_in_child);
        registered = 1;
    }
    while (pool.started < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &attr, worker, NULL);
        pthread_attr_destroy(&attr);
        if (failed)
            break;
        pool.started++;
    }
    return pool.started;
}

/* ember.get_num_threads()'s default: the CPUs this process may run on */
static int default_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n < 1 ? 1 : n > MAX_WORKERS + 1 ? MAX_WORKERS + 1 : n;
}

void parallel_ranges(Py_ssize_t n, Py_ssize_t grain, range_fn fn, void *ctx)
{
    if (pool.threads == 0)
        pool.threads = default_threads();
    npy_intp parts = grain > 0 ? n / grain : n;
    if (parts > pool.threads)
        parts = pool.threads;
    if (parts < 2 || pthread_mutex_trylock(&pool.region) != 0) {
        fn(ctx, 0, n);
        return;
    }
    if (start_workers(pool.threads - 1) < 1) {
        pthread_mutex_unlock(&pool.region);
        fn(ctx, 0, n);
        return;
    }
    npy_intp chunks = parts * CHUNKS_PER_THREAD < n ? parts * CHUNKS_PER_THREAD : n;
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.step = (n + chunks - 1) / chunks;
    pool.chunks = (n + pool.step - 1) / pool.step;
    atomic_store(&pool.finished, 0);
    unsigned long gen = atomic_load(&pool.generation) + 1;
    atomic_store_explicit(&pool.claim, (unsigned long long)(gen & 0xffffffffUL) << 32,
                          memory_order_release);
    pthread_mutex_lock(&pool.lock);
    atomic_store_explicit(&pool.generation, gen, memory_order_release);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    take_chunks(gen);
    /* the chunks a worker still runs: spin a little, then give the core away (the worker may
     * share this one, when the machine is busy) */
    for (int turn = 0; atomic_load_explicit(&pool.finished, memory_order_acquire) < pool.chunks;
         turn++)
        if (turn < 1000)
            spin_pause();
        else
            sched_yield();
    pthread_mutex_unlock(&pool.region);
}

/* set_threads(n): the threads the compiled kernels split their work over (_threads.py keeps
 * it equal to ember.get_num_threads()) */
PyObject *py_set_threads(PyObject *self, PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 1 || n > MAX_WORKERS + 1) {
        PyErr_Format(PyExc_ValueError, "set_threads: expected 1 to %d threads, got %ld",
                     MAX_WORKERS + 1, n);
        return NULL;
    }
    pthread_mutex_lock(&pool.region);   /* not while a region runs */
    pool.threads = (int)n;
    pthread_mutex_unlock(&pool.region);
    Py_RETURN_NONE;
}

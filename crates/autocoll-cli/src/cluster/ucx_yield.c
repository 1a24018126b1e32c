/* Built by `autocoll cluster up` into the cluster's directory and preloaded
 * by its `mpiexec` wrapper: two fixes for MPICH (Debian's is ch4:ucx) on
 * emulated hosts that share this machine's cores.
 *
 * 1. MPICH waits by polling UCX without ever giving the core up, so a rank
 *    with data to forward waited for a scheduler slice behind its polling
 *    neighbours. An idle poll yields the core here, as Open MPI's
 *    mpi_yield_when_idle does for its ranks.
 * 2. MPI_Finalize closes each endpoint with ucp_disconnect_nb, a flushing
 *    close that over UCX's TCP transport waits for peers that have already
 *    left for the process manager's barrier (openucx/ucx#8738): most runs
 *    of 8 ranks hung there. When it is called every rank has passed
 *    MPICH's barrier in MPI_Finalize, so nothing is left to flush; the
 *    close is reported done at once, and destroying the worker right after
 *    releases the endpoints. (A forced close is refused on MPICH's
 *    endpoints, which have no peer error handling.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

typedef struct ucp_worker *ucp_worker_h;
typedef struct ucp_ep *ucp_ep_h;
typedef void *ucs_status_ptr_t;

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    static unsigned (*real)(ucp_worker_h);
    if (!real)
        real = (unsigned (*)(ucp_worker_h))dlsym(RTLD_NEXT, "ucp_worker_progress");
    unsigned done = real(worker);
    if (done == 0)
        sched_yield();
    return done;
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
    (void)ep;
    return 0; /* UCS_OK: done */
}

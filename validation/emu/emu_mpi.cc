/* The emulated GPU keeps running while the host waits in MPI.
 *
 * A real GPU runs queued work on its own; the emulation runs it only when the host calls into
 * the runtime (emu_internal.h).  So a rank that queues collectives and then waits in a plain
 * MPI call (a barrier of HDF5's file close, a message of the MPI transport) would never run
 * them, and its peers, waiting for them in a stream synchronize, would wait forever.  These
 * wrappers (MPI's profiling interface: each is the MPI function of that name, calling PMPI_)
 * keep the device going for as long as the host waits: the blocking operations ptdp and HDF5
 * use are posted as their nonblocking forms and waited for in a loop that tests the request and
 * runs whatever queued work can run (emu::kick), so a chain of collectives, each waiting for
 * the last through events, progresses as it would on a GPU.  The few blocking calls without a
 * nonblocking form (file opens and closes, communicator creation) run the queued work once
 * first.  MPI_Test runs the queued work once before it tests, so a host that polls a request
 * (ptdp's transports wait that way, with a timeout) keeps the device going too; from inside the
 * scheduler (the emulated NCCL tests its requests there) that run does nothing.  The other
 * nonblocking calls (MPI_Isend, MPI_Testall...) are not wrapped. */
#include "emu_internal.h"

#define OMPI_SKIP_MPICXX 1 /* the C API only */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <sched.h>

namespace {

/* Call test(&done) until it says done (or fails) while the device runs.  Open MPI progresses
 * the requests inside each test. */
template <typename Test> int progress(Test test)
{
  for (unsigned spin = 0;; spin++) {
    int done = 0;
    int rc = test(&done);
    if (rc != MPI_SUCCESS || done) return rc;
    emu::kick();
    if (spin % 64 == 63) sched_yield(); /* ranks may outnumber cores */
  }
}

int progress_wait(int n, MPI_Request *r, MPI_Status *st)
{
  return progress([=](int *done) { return PMPI_Testall(n, r, done, st); });
}

int progress_wait1(MPI_Request *r, MPI_Status *st)
{
  return progress_wait(1, r, st ? st : MPI_STATUSES_IGNORE);
}

} // namespace

/* A blocking call as its nonblocking form (PMPI_##iname) and a progress wait. */
#define EMU_MPI_NB(name, iname, params, args)    \
  extern "C" int MPI_##name params                 \
  {                                                \
    MPI_Request r_;                                \
    int rc_ = PMPI_##iname args;                   \
    return rc_ ? rc_ : progress_wait1(&r_, NULL);  \
  }

/* A blocking call with no nonblocking form: the queued work runs once first. */
#define EMU_MPI_WRAP(name, params, args) \
  extern "C" int MPI_##name params       \
  {                                      \
    emu::kick();                         \
    return PMPI_##name args;             \
  }

EMU_MPI_NB(Barrier, Ibarrier, (MPI_Comm c), (c, &r_))
EMU_MPI_NB(Bcast, Ibcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c), (b, n, t, root, c, &r_))
EMU_MPI_NB(Reduce, Ireduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c),
           (s, r, n, t, o, root, c, &r_))
EMU_MPI_NB(Allreduce, Iallreduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
           (s, r, n, t, o, c, &r_))
EMU_MPI_NB(Gather, Igather,
           (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c),
           (s, sn, st, r, rn, rt, root, c, &r_))
EMU_MPI_NB(Gatherv, Igatherv,
             (const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[], MPI_Datatype rt, int root,
              MPI_Comm c),
           (s, sn, st, r, rn, d, rt, root, c, &r_))
EMU_MPI_NB(Allgather, Iallgather,
           (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
           (s, sn, st, r, rn, rt, c, &r_))
EMU_MPI_NB(Allgatherv, Iallgatherv,
             (const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[], MPI_Datatype rt,
              MPI_Comm c),
           (s, sn, st, r, rn, d, rt, c, &r_))
EMU_MPI_NB(Scatter, Iscatter,
           (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c),
           (s, sn, st, r, rn, rt, root, c, &r_))
EMU_MPI_NB(Scatterv, Iscatterv,
             (const void *s, const int sn[], const int d[], MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root,
              MPI_Comm c),
           (s, sn, d, st, r, rn, rt, root, c, &r_))
EMU_MPI_NB(Alltoall, Ialltoall, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
           (s, sn, st, r, rn, rt, c, &r_))
EMU_MPI_NB(Alltoallv, Ialltoallv,
             (const void *s, const int sn[], const int sd[], MPI_Datatype st, void *r, const int rn[], const int rd[],
              MPI_Datatype rt, MPI_Comm c),
           (s, sn, sd, st, r, rn, rd, rt, c, &r_))
EMU_MPI_NB(Alltoallw, Ialltoallw,
             (const void *s, const int sn[], const int sd[], const MPI_Datatype st[], void *r, const int rn[],
              const int rd[], const MPI_Datatype rt[], MPI_Comm c),
           (s, sn, sd, st, r, rn, rd, rt, c, &r_))
EMU_MPI_NB(Reduce_scatter_block, Ireduce_scatter_block,
           (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
           (s, r, n, t, o, c, &r_))
EMU_MPI_NB(Scan, Iscan, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
           (s, r, n, t, o, c, &r_))
EMU_MPI_NB(Exscan, Iexscan, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
           (s, r, n, t, o, c, &r_))
extern "C" int MPI_Send(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c)
{
  MPI_Request r;
  int rc = PMPI_Isend(b, n, t, dst, tag, c, &r);
  return rc ? rc : progress_wait1(&r, NULL);
}
extern "C" int MPI_Ssend(const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c)
{
  MPI_Request r;
  int rc = PMPI_Issend(b, n, t, dst, tag, c, &r);
  return rc ? rc : progress_wait1(&r, NULL);
}
extern "C" int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st)
{
  MPI_Request r;
  int rc = PMPI_Irecv(b, n, t, src, tag, c, &r);
  return rc ? rc : progress_wait1(&r, st);
}
extern "C" int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype stt, int dst, int stag, void *rb, int rn,
                            MPI_Datatype rt, int src, int rtag, MPI_Comm c, MPI_Status *st)
{
  MPI_Request r[2];
  MPI_Status s2[2];
  int rc = PMPI_Irecv(rb, rn, rt, src, rtag, c, &r[0]);
  if (rc == MPI_SUCCESS) rc = PMPI_Isend(sb, sn, stt, dst, stag, c, &r[1]);
  if (rc == MPI_SUCCESS) rc = progress_wait(2, r, s2);
  if (rc == MPI_SUCCESS && st != MPI_STATUS_IGNORE) *st = s2[0];
  return rc;
}
extern "C" int MPI_Probe(int src, int tag, MPI_Comm c, MPI_Status *st)
{
  return progress([=](int *found) { return PMPI_Iprobe(src, tag, c, found, st); });
}
extern "C" int MPI_Wait(MPI_Request *r, MPI_Status *st) { return progress_wait1(r, st); }
extern "C" int MPI_Waitall(int n, MPI_Request r[], MPI_Status st[]) { return progress_wait(n, r, st); }
extern "C" int MPI_Waitany(int n, MPI_Request r[], int *i, MPI_Status *st)
{
  return progress([=](int *done) { return PMPI_Testany(n, r, i, done, st); });
}
EMU_MPI_WRAP(Test, (MPI_Request * r, int *done, MPI_Status *st), (r, done, st))
EMU_MPI_WRAP(Comm_split, (MPI_Comm c, int color, int key, MPI_Comm *out), (c, color, key, out))
EMU_MPI_WRAP(Comm_dup, (MPI_Comm c, MPI_Comm *out), (c, out))
EMU_MPI_WRAP(Comm_create, (MPI_Comm c, MPI_Group g, MPI_Comm *out), (c, g, out))
EMU_MPI_WRAP(File_open, (MPI_Comm c, const char *name, int mode, MPI_Info info, MPI_File *fh),
             (c, name, mode, info, fh))
EMU_MPI_WRAP(File_close, (MPI_File * fh), (fh))
EMU_MPI_WRAP(File_sync, (MPI_File fh), (fh))
EMU_MPI_WRAP(File_set_size, (MPI_File fh, MPI_Offset n), (fh, n))
EMU_MPI_WRAP(File_set_view, (MPI_File fh, MPI_Offset d, MPI_Datatype e, MPI_Datatype f, const char *rep, MPI_Info i),
             (fh, d, e, f, rep, i))
EMU_MPI_WRAP(File_read_at_all, (MPI_File fh, MPI_Offset o, void *b, int n, MPI_Datatype t, MPI_Status *st),
             (fh, o, b, n, t, st))
EMU_MPI_WRAP(File_write_at_all, (MPI_File fh, MPI_Offset o, const void *b, int n, MPI_Datatype t, MPI_Status *st),
             (fh, o, b, n, t, st))
EMU_MPI_WRAP(File_read_all, (MPI_File fh, void *b, int n, MPI_Datatype t, MPI_Status *st), (fh, b, n, t, st))
EMU_MPI_WRAP(File_write_all, (MPI_File fh, const void *b, int n, MPI_Datatype t, MPI_Status *st), (fh, b, n, t, st))
EMU_MPI_WRAP(Finalize, (void), ())

/* Private to the emulated runtime (emu_memory.cc, emu_stream.cc, emu_cudart.cc): the state and
 * helpers they share.  Everything here runs under emu::lock(). */
#ifndef PTDP_EMU_RUNTIME_H
#define PTDP_EMU_RUNTIME_H

#include "emu_internal.h"
#include "emu_mem.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace emu {

/* One queued operation (emu_stream.cc). */
struct Op {
  uint64_t seq;
  std::string what;
  std::function<cudaError_t()> fn;   /* plain: runs to completion */
  std::function<cudaError_t()> start; /* async: started, then polled */
  std::function<bool(cudaError_t *)> poll;
  bool started = false;
  CUevent_st *wait_ev = nullptr; /* an event wait: runnable once the record ran */
  uint64_t wait_gen = 0;
};

/* errors (emu_cudart.cc) */
extern cudaError_t last_error, sticky_error;
int device_count();

/* memory (emu_memory.cc) */
extern size_t in_use;
extern long n_opens;
void arena_init();

/* the scheduler (emu_stream.cc) */
cudaError_t drain(const std::function<bool()> &done, bool blocking, bool blocking_only = false);
bool any_queued();
void drop_all();
extern long n_drains;
extern std::vector<CUstream_st *> streams;

} // namespace emu

struct CUstream_st {
  std::deque<emu::Op> q;
  unsigned flags = 0;
  int priority = 0;
  bool live = true;
};

/* An event's records are numbered as they are enqueued (rec_gen: the last one); a wait or a
 * query names the record that was the last when it was made, and is met once that very record
 * has run (records on several streams may run out of order: a later one does not stand in). */
struct CUevent_st {
  uint64_t rec_gen = 0;           /* records enqueued */
  uint64_t done_upto = 0;         /* every record up to this one has run */
  std::vector<uint64_t> done_out; /* records beyond done_upto that have run */
  unsigned flags = 0;
  double t_ms = 0;
  bool live = true;
  bool done(uint64_t g) const
  {
    if (g <= done_upto) return true;
    for (uint64_t d : done_out)
      if (d == g) return true;
    return false;
  }
  void ran(uint64_t g)
  {
    done_out.push_back(g);
    for (bool moved = true; moved;) { /* fold the contiguous ones into done_upto */
      moved = false;
      for (size_t i = 0; i < done_out.size(); i++)
        if (done_out[i] == done_upto + 1) {
          done_upto++;
          done_out[i] = done_out.back();
          done_out.pop_back();
          moved = true;
          break;
        }
    }
  }
};

#endif

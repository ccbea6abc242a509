/* Emulated device memory (private to emu_memory.cc and emu_check.cc).
 *
 * One reservation of address space, PROT_NONE while the host runs and opened only while queued
 * work runs (so host code that dereferences a device pointer faults, as on a GPU).  Every
 * allocation starts on a page and is exactly sized: a page table maps each page to its
 * allocation, so the kernel hooks check each access against [base, base + bytes) in a few
 * instructions.  Addresses are never reused (a freed range's pages are given back, and the hooks
 * refuse any kernel access to it), so a use after free is caught too; while queued work runs the
 * whole used range is open, freed ranges included (one mprotect for all).  The freshly allocated bytes hold a NaN
 * pattern (0xFF bytes: a float NaN, a double NaN, -1 as an integer), so an output a kernel
 * leaves unwritten shows.
 *
 * In builds with AddressSanitizer the allocations come from malloc instead (ASan's redzones
 * then catch an access past the end, and the kernel hooks are not compiled in). */
#ifndef PTDP_EMU_MEM_H
#define PTDP_EMU_MEM_H

#include <cstddef>
#include <cstdint>

namespace emu {

struct Alloc {
  uintptr_t base;
  size_t bytes;
  bool live;
};

struct MemMap {
  uintptr_t lo = 0;         /* the reservation */
  size_t len = 0;
  size_t top = 0;           /* bytes handed out from lo, page-rounded */
  uint32_t *page = nullptr; /* page -> allocation index + 1 (0: none) */
  Alloc *allocs = nullptr;  /* by index */
  size_t n_allocs = 0, cap_allocs = 0;
  bool use_malloc = false;  /* ASan builds */
};

extern MemMap mem;
constexpr unsigned PAGE_SHIFT = 12;

/* The allocation holding address a (arena mode), or nullptr. */
inline const Alloc *arena_find(uintptr_t a)
{
  uintptr_t off = a - mem.lo;
  if (off >= mem.top) return nullptr;
  uint32_t i = mem.page[off >> PAGE_SHIFT];
  return i ? &mem.allocs[i - 1] : nullptr;
}

} // namespace emu

#endif

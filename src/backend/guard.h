/* The guard backend (private to src/backend and the tests): the CPU backend's operations on
 * memory the host cannot touch outside them.  See guard.c. */
#ifndef PTDP_GUARD_H
#define PTDP_GUARD_H

#include "ptdp/backend.h"

#include <stddef.h>

/* Address space the guard backend reserves (no memory is committed until used): 64 GiB, far
 * more than a test model needs, and little next to a 64-bit process's address space. */
#define PTDP_GUARD_RESERVE ((size_t)64 << 30)

/* A guard backend whose memory is a `reserve`-byte range (rounded up to 2 MiB); threads are left as they are
 * (ptdp_backend_create sets them up). */
int ptdp_backend_guard_create(size_t reserve, ptdp_backend **be);

#endif

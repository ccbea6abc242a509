/* The conformance suite of the backends (test_ops.c) and its two helpers:
 *
 *   test_ops_ref.c    "ref": every operation of ptdp/backend.h written the plain way, in double,
 *                     on host memory: the independent reference the CPU backend is held to.
 *   test_ops_plant.c  planted mistakes, patched into any backend's table, that the suite must
 *                     catch (test_ops --plant). */
#ifndef PTDP_TEST_OPS_H
#define PTDP_TEST_OPS_H

#include "ptdp/backend.h"

/* The naive double-precision reference backend (host_accessible 1, memory from calloc). */
int test_ops_ref_create(ptdp_backend **be);

/* One planted mistake: the operation it breaks (a name of ptdp/backend.h, which is also the
 * first word of the suite's result names for that operation), how, and the storage types of the
 * backends it is planted in (bit ptdp_dtype: a mistake of mixed precision's rounding exists only
 * in bf16 and fp16). */
typedef struct {
  const char *op;
  const char *mistake;
  unsigned types;
} test_ops_plant;
#define TEST_OPS_ALL_TYPES ((1u << PTDP_F32) | (1u << PTDP_BF16) | (1u << PTDP_F16))
#define TEST_OPS_16BIT ((1u << PTDP_BF16) | (1u << PTDP_F16))

/* The planted mistakes, ending with {NULL, NULL, 0}. */
extern const test_ops_plant test_ops_plants[];

/* Patch be's table so that every operation of test_ops_plants planted in be->dtype carries its
 * mistake (each calls the backend's own operations with a wrong argument, or moves data with its
 * own operations, to_host and to_device included, so it works on memory the host cannot touch).
 * An optional operation is planted only where be and its reference ref both have it (the suite
 * checks it nowhere else).  One patched backend at a time: the original table is kept here until
 * test_ops_plant_remove. */
void test_ops_plant_apply(ptdp_backend *be, const ptdp_backend *ref);
void test_ops_plant_remove(ptdp_backend *be);
/* 1 when the last test_ops_plant_apply planted op's mistake (0: not of that type, or an optional
 * operation the backend or its reference lacks). */
int test_ops_plant_applied(const char *op);

#endif

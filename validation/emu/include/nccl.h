/* The CUDA emulation's nccl.h (validation/emu): the part of NCCL's API that ptdp and its tests
 * call, with NCCL's names, types and enum values (programs store and compare them), implemented
 * over MPI by emu_nccl_comm.cc and emu_nccl_ops.cc.  C and C++.  Not NVIDIA's header: written
 * from the documented API.
 *
 * What the emulation does (emu_nccl_comm.cc and emu_nccl_ops.cc have the details):
 *   - ncclGetUniqueId makes an id naming its creator's MPI_COMM_WORLD rank and a sequence number;
 *     ncclCommInitRank rendezvous with the creator (which must be a member) by point-to-point
 *     messages on MPI_COMM_WORLD, then builds the communicator's MPI communicator over just the
 *     members, ranked as NCCL ranks (MPI_Comm_create_group).  Blocking, as NCCL's default.
 *   - Every collective and ncclSend/ncclRecv checks its arguments when called (a bad one returns
 *     ncclInvalidArgument or ncclInvalidUsage and prints why) and is queued on its stream.  When
 *     the stream reaches it, the data is copied to host memory and a nonblocking MPI operation is
 *     posted; the stream stays busy until MPI completes it (cudaStreamQuery: cudaErrorNotReady),
 *     so a collective whose peer never joins leaves its stream busy instead of blocking the host.
 *     bf16 and fp16 are reduced in fp32 and rounded once (NCCL rounds after each step).
 *   - Between ncclGroupStart and ncclGroupEnd, calls are collected and queued at ncclGroupEnd,
 *     one queued operation per stream holding all of that stream's calls, so a send and a receive
 *     of one group progress together (as NCCL requires for a matching pair).
 *   - ncclCommAbort and ncclCommDestroy invalidate the handle (a later call with it returns
 *     ncclInvalidArgument, where NCCL's behaviour is undefined); operations still queued on a
 *     stream then complete without moving data, as NCCL's aborted kernels end.
 *   - ncclCommGetAsyncError reports an MPI failure met while an operation ran (ncclSystemError).
 * Stricter than NCCL: a send and a receive buffer that overlap other than in NCCL's in-place
 * layouts are refused (NCCL's result would be undefined).  Not emulated, refused when called:
 * counts above INT_MAX elements (MPI's int), the fp8 types, ncclCommInitRank inside a group. */
#ifndef PTDP_EMU_NCCL_H
#define PTDP_EMU_NCCL_H

#include <cuda_runtime.h>
#include <stddef.h>

/* the NCCL whose API this follows: 2.28 (ncclGetVersion gives NCCL_VERSION_CODE) */
#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 0
#define NCCL_VERSION_CODE 22800

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm *ncclComm_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10, /* declared for completeness; the emulation refuses them */
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);

ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/* HDF5 inputs of the fuzz harnesses of files ptdp-train writes (checkpoints, run files).
 *
 * HDF5 checksums its metadata in the formats ptdp writes (1.10 and later), so mutating a file's
 * bytes blindly mostly tests those checksums.  These harnesses therefore take either a whole
 * file (an input that starts with HDF5's signature, e.g. a reproducer) or an edit program over a
 * real file that the harness wrote at start-up with ptdp's own writer: the program rewrites
 * attributes with other shapes, classes and values, deletes attributes and objects, replaces
 * datasets with others of another rank, extent, type or layout, and damages raw bytes (anywhere,
 * or inside a dataset's data), so that what reaches the reader is well-formed HDF5 holding what
 * ptdp did not write.
 *
 * Program: a sequence of operations, each an opcode byte (taken mod 8) and its operand bytes;
 * bytes past the end read as zero.  Objects and attribute names are indices (mod their count)
 * into the lists found in the base file (fuzz_h5_base), so an input means the same edit to every
 * process that builds the same base; the index 0xffff is followed by the name itself and a NUL
 * (reproducers name what they edit).
 *   0 ATTR   obj name type shape value...  (re)write attribute name of obj
 *   1 UNATTR obj name                      delete it
 *   2 UNLINK obj                           delete object obj (not the root)
 *   3 DSET   obj type rank d0..d4 layout keep     replace dataset obj (keep & 1: its checksum)
 *   4 FLIP   o0 o1 o2 o3 x                 xor byte (o mod file size) with x (0: 0x10)
 *   5 DFLIP  obj e0 e1 x                   xor a byte of dataset obj's stored data
 *   6 CUT    f0 f1                         truncate the file to f/65536 of its size
 *   7 GROW   n                             append 16 n bytes of 0xff */
#ifndef PTDP_FUZZ_H5_H
#define PTDP_FUZZ_H5_H

#include "ptdp/trainer.h"

#include <stddef.h>
#include <stdint.h>

/* The trainer the two harnesses load into and append with, made once per process
 * (fuzz_trainer.c): MPI on one rank, a tiny GPT (one layer, h 8, a vocabulary of 30 padded to
 * 32 rows, fp16 with a dynamic loss scaler) on the CPU backend.  NULL when it cannot be set up. */
ptdp_trainer *fuzz_trainer(void);
/* The bytes of the file at path (malloc'd, *n of them), or NULL. */
uint8_t *fuzz_slurp(const char *path, size_t *n);
/* A new empty folder under TMPDIR into dir (n bytes), and removing it with what it holds. */
int fuzz_tmpdir(char *dir, size_t n);
void fuzz_rmtree(const char *dir);

/* The file an input stands for, written to the scratch file named tag: the input itself when it
 * starts with HDF5's signature, else the base (len bytes) edited by the input's program.  Its
 * path into path; 0, or -1 when the scratch file cannot be written ("nothing to test").  With
 * PTDP_FUZZ_SAVE set, the file is also copied there (a reproducer committed as a whole file keeps
 * its meaning when ptdp's layout, and so the base, changes). */
int fuzz_h5_input(const char *tag, const uint8_t *base, size_t len, const uint8_t *data, size_t size,
                  char *path, size_t npath);
/* Record the objects and attribute names of the base file at path (call once, before inputs). */
int fuzz_h5_base(const char *path);
/* Close every HDF5 identifier still open (a reader's error path may leave some; a campaign makes
 * millions of inputs).  Returns how many were open. */
int fuzz_h5_close_all(void);

#endif

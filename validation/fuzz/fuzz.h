/* Helpers shared by the libFuzzer harnesses of validation/fuzz (see README there).
 *
 * A harness is one LLVMFuzzerTestOneInput(data, size): it hands the bytes to one ptdp reader
 * and must return normally whatever they are; a reader's refusal is the error stack's, and
 * the harness clears it for the next input.  It abort()s only when a reader accepted input
 * that breaks what the reader promises (an index pointing outside its .bin, a tokenizer whose
 * decode(encode(x)) is not x): libFuzzer and the replay main both report that as a finding. */
#ifndef PTDP_FUZZ_H
#define PTDP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Before each input: errors recorded by the previous one are forgotten, and none is printed
 * (a campaign makes millions of them). */
void fuzz_begin(void);
/* Write data[0..n) to this process's scratch file named tag (overwritten each input; the
 * folder is removed at exit) and put its path in path, for readers that take a path.  Returns
 * 0, or -1 if the file cannot be written, which a harness treats as "nothing to test". */
#define FUZZ_PATH_MAX 700
int fuzz_file(const char *tag, const uint8_t *data, size_t n, char path[FUZZ_PATH_MAX]);
/* The i-th part of data cut at each "\n%%\n" separator (the seed files use it to hold two or
 * three files in one input); *n 0 and NULL when there is no such part. */
const uint8_t *fuzz_part(const uint8_t *data, size_t size, int i, size_t *n);
/* With PTDP_FUZZ_VERBOSE set (for writing seeds and reading reproducers): print what the reader
 * said, "STEP: accepted" or "STEP: refused: <ptdp's first error message>". */
void fuzz_verdict(const char *step, int failed);
/* Stop a harness at a broken promise: print what and abort (a finding). */
_Noreturn void fuzz_fail(const char *what);

#endif

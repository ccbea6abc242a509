/* A text or JSON file read whole (src/text/textfile.c): the one way ptdp reads a file it needs
 * entire in memory (config.json, model.safetensors.index.json, tokenizer.json and
 * tokenizer_config.json, GPT-2's vocab.json and merges.txt, a prompt file).
 *
 * Two guards, so that no input can make the reader run until memory is gone or wait forever:
 * the path must be a regular file (not a FIFO, a device such as /dev/zero, a directory or a
 * socket; it is opened without blocking, so a FIFO with no writer is refused, not waited on),
 * and at most max bytes, a limit each caller sets far above any real file of its kind (the
 * largest public tokenizer.json files are tens of MB; tokenizer files get 1 GiB).  The memory
 * taken is the file's size, not the limit. */
#ifndef PTDP_TEXTFILE_H
#define PTDP_TEXTFILE_H

#include <stddef.h>

/* The limit of tokenizer files (tokenizer.json, tokenizer_config.json, vocab.json, merges.txt). */
#define PTDP_TOKENIZER_FILE_MAX ((size_t)1 << 30)

/* The file at path whole, NUL-terminated, into *text (malloc'ed; *len bytes, NUL not counted);
 * what names it in messages ("tokenizer file").  An input error, naming the file, what it is and
 * the limit, for anything but a regular file of at most max bytes; an I/O error when it cannot be
 * opened or read. */
int ptdp_text_file_read(const char *path, const char *what, size_t max, char **text, size_t *len);

#endif

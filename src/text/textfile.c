/* A text or JSON file read whole, refusing what is not a regular file of bounded size
 * (ptdp/textfile.h). */
#include "ptdp/textfile.h"

#include "ptdp/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
  return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" : "not a file";
}

/* n bytes of fd into buf (fewer at its end: *got). */
static int read_all(int fd, char *buf, size_t n, size_t *got, const char *what, const char *path)
{
  *got = 0;
  while (*got < n) {
    const ssize_t r = read(fd, buf + *got, n - *got);
    if (r < 0 && errno == EINTR) continue;
    PTDP_CHECK_IO(r >= 0, "cannot read %s '%s': %s", what, path, strerror(errno));
    if (r == 0) break;
    *got += (size_t)r;
  }
  return 0;
}

static int read_fd(int fd, const char *path, const char *what, size_t max, char **text, size_t *len)
{
  struct stat sb;
  PTDP_CHECK_IO(fstat(fd, &sb) == 0, "cannot stat %s '%s': %s", what, path, strerror(errno));
  PTDP_CHECK(S_ISREG(sb.st_mode), "%s '%s' is %s, not a regular file: ptdp reads it whole, and only from a regular "
             "file of at most %zu bytes", what, path, kind_of(sb.st_mode), max);
  PTDP_CHECK(sb.st_size >= 0 && (unsigned long long)sb.st_size <= max, "%s '%s' has %lld bytes, more than the %zu "
             "that ptdp reads (no real file of its kind comes near; is it the file meant?)", what, path,
             (long long)sb.st_size, max);
  const size_t size = (size_t)sb.st_size;
  char *buf = malloc(size + 2);
  PTDP_CHECK_LOCAL(buf, "out of memory for the %zu bytes of %s '%s'", size, what, path);
  size_t got = 0;
  int rc = read_all(fd, buf, size + 1, &got, what, path); /* one byte more: a file that grew */
  if (!rc && got != size)
    rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s '%s' changed size while it was read (%zu bytes, then %s%zu)", what, path, size,
                   got > size ? "more than " : "", got > size ? size : got);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[size] = '\0';
  *text = buf;
  *len = size;
  return 0;
}

int ptdp_text_file_read(const char *path, const char *what, size_t max, char **text, size_t *len)
{
  *text = NULL;
  *len = 0;
  /* O_NONBLOCK: a FIFO with no writer opens at once (and is then refused) instead of waiting */
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  PTDP_CHECK(fd >= 0, "cannot open %s '%s': %s", what, path, strerror(errno));
  const int rc = read_fd(fd, path, what, max, text, len);
  close(fd);
  return rc;
}

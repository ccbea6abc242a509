/* The file-system side of checkpoints: run by world rank 0 alone, which broadcasts its verdict.
 *
 * Crash safety rests on three rules: a checkpoint is complete before its directory gets its
 * final name (it is written under iter_NNNNNNN.tmp and synced), the tracker names only complete
 * checkpoints (it is replaced by rename after the directory is in place), and a directory is
 * deleted only after a newer checkpoint is complete.  Renames and new names are made durable
 * by syncing the directory that holds them.
 *
 * Saving an iteration whose directory exists already (a rerun from scratch into the same save
 * directory, a finetune) swaps the new directory with the old one in one atomic step
 * (renameat2 RENAME_EXCHANGE) and then deletes the old one.  Where the file system cannot swap
 * (EINVAL, ENOSYS), the old directory is first renamed to iter_NNNNNNN.old.tmp; a kill between
 * that rename and the next leaves the tracker naming a missing directory, so loading falls back
 * to the .old.tmp one, and the next save moves it back (or, when the iteration's directory is in
 * place again, deletes it). */
#define _GNU_SOURCE /* renameat2 */
#include "checkpoint_impl.h"

#include "ptdp/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

int ckpt_fault_here(const char *point, int rank)
{
  const char *want = getenv("PTDP_CHECKPOINT_FAULT"), *who = getenv("PTDP_CHECKPOINT_FAULT_RANK");
  return want && !strcmp(want, point) && rank == (who ? atoi(who) : 0);
}

void ckpt_fault(const char *point, int rank)
{
  if (ckpt_fault_here(point, rank)) kill(getpid(), SIGKILL);
}

void ckpt_fs_iter_dir(const char *save_dir, long long iter, char *out, size_t n)
{
  snprintf(out, n, "%s/iter_%07lld", save_dir, iter);
}

/* fsync a file or directory by path. */
static int sync_path(const char *path)
{
  int fd = open(path, O_RDONLY);
  PTDP_CHECK_IO(fd >= 0, "cannot open '%s' to sync it: %s", path, strerror(errno));
  int rc = fsync(fd), e = errno;
  close(fd);
  /* some file systems cannot sync a directory (EINVAL); the data itself was synced */
  PTDP_CHECK_IO(rc == 0 || e == EINVAL, "cannot sync '%s': %s", path, strerror(e));
  return 0;
}

/* Remove a checkpoint directory: its files (a checkpoint holds no subdirectories), then itself. */
static int remove_dir(const char *path)
{
  DIR *d = opendir(path);
  if (!d && errno == ENOENT) return 0;
  PTDP_CHECK_IO(d, "cannot open directory '%s' to remove it: %s", path, strerror(errno));
  struct dirent *e;
  char f[2 * PTDP_OPT_STRLEN];
  int rc = 0;
  while (!rc && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(f, sizeof f, "%s/%s", path, e->d_name);
    if (unlink(f) && errno != ENOENT) rc = errno;
  }
  closedir(d);
  PTDP_CHECK_IO(!rc, "cannot remove a file in '%s': %s", path, strerror(rc));
  PTDP_CHECK_IO(rmdir(path) == 0 || errno == ENOENT, "cannot remove directory '%s': %s", path, strerror(errno));
  return 0;
}

/* Is name "iter_" followed by 7 or more digits and then exactly suffix? The iteration into *it. */
static int iter_name(const char *name, const char *suffix, long long *it)
{
  if (strncmp(name, "iter_", 5)) return 0;
  const char *p = name + 5;
  size_t nd = strspn(p, "0123456789");
  if (nd < 7 || strcmp(p + nd, suffix)) return 0;
  *it = strtoll(p, NULL, 10);
  return 1;
}

/* An iteration's directory moved aside to path by a replacing save that was killed before it
 * completed: deleted where the iteration's directory is back in place, else moved back. */
static int settle_aside(const char *save_dir, long long it, const char *path)
{
  char dir[PTDP_OPT_STRLEN];
  struct stat st;
  ckpt_fs_iter_dir(save_dir, it, dir, sizeof dir);
  if (stat(dir, &st) == 0) return remove_dir(path);
  PTDP_CHECK_IO(rename(path, dir) == 0, "cannot move '%s' back to '%s': %s", path, dir, strerror(errno));
  return 0;
}

int ckpt_fs_prepare(const char *save_dir, long long iter, char *tmp, size_t n)
{
  PTDP_CALL(ckpt_fs_make_dirs(save_dir));
  DIR *d = opendir(save_dir);
  PTDP_CHECK_IO(d, "cannot read directory '%s': %s", save_dir, strerror(errno));
  struct dirent *e;
  char path[2 * PTDP_OPT_STRLEN];
  long long it;
  int rc = 0;
  char dir[PTDP_OPT_STRLEN];
  while (!rc && (e = readdir(d))) {
    snprintf(path, sizeof path, "%s/%s", save_dir, e->d_name);
    if (iter_name(e->d_name, ".tmp", &it)) /* left by a save that did not finish */
      rc = remove_dir(path);
    else if (iter_name(e->d_name, ".old.tmp", &it)) /* moved aside by a replacing save that did not finish */
      rc = settle_aside(save_dir, it, path);
  }
  closedir(d);
  PTDP_CALL(rc);
  PTDP_CALL(sync_path(save_dir));
  ckpt_fs_iter_dir(save_dir, iter, dir, sizeof dir);
  snprintf(tmp, n, "%s.tmp", dir);
  PTDP_CHECK_IO(mkdir(tmp, 0777) == 0, "cannot create directory '%s': %s", tmp, strerror(errno));
  return 0;
}

int ckpt_fs_commit(const char *save_dir, long long iter, const char *tmp)
{
  char dir[PTDP_OPT_STRLEN], f[2 * PTDP_OPT_STRLEN], old[PTDP_OPT_STRLEN + 8];
  snprintf(f, sizeof f, "%s/%s", tmp, PTDP_CHECKPOINT_FILE);
  PTDP_CALL(sync_path(f));
  PTDP_CALL(sync_path(tmp));
  ckpt_fs_iter_dir(save_dir, iter, dir, sizeof dir);
  struct stat st;
  int replace = stat(dir, &st) == 0; /* the same iteration saved before (a rerun): move it aside first */
  snprintf(old, sizeof old, "%s.old.tmp", dir);
  int swapped = 0; /* the new directory is in place and the old one is at tmp */
  if (replace) {
    PTDP_CALL(remove_dir(old));
    if (!getenv("PTDP_CHECKPOINT_NO_EXCHANGE")) { /* test hook: take the two-rename road */
      swapped = renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0;
      PTDP_CHECK_IO(swapped || errno == EINVAL || errno == ENOSYS || errno == ENOTSUP,
                    "cannot exchange '%s' and '%s': %s", tmp, dir, strerror(errno));
    }
    if (!swapped) {
      PTDP_CHECK_IO(rename(dir, old) == 0, "cannot rename '%s': %s", dir, strerror(errno));
      ckpt_fault("moved-aside", 0);
    }
  }
  if (!swapped) PTDP_CHECK_IO(rename(tmp, dir) == 0, "cannot rename '%s' to '%s': %s", tmp, dir, strerror(errno));
  PTDP_CALL(sync_path(save_dir));
  ckpt_fault("renamed", 0);
  snprintf(f, sizeof f, "%s/%s.tmp", save_dir, PTDP_CHECKPOINT_TRACKER);
  FILE *t = fopen(f, "w");
  PTDP_CHECK_IO(t, "cannot write '%s': %s", f, strerror(errno));
  int ok = fprintf(t, "%lld\n", iter) > 0;
  ok = fflush(t) == 0 && ok;
  ok = fsync(fileno(t)) == 0 && ok;
  ok = fclose(t) == 0 && ok;
  PTDP_CHECK_IO(ok, "cannot write '%s': %s", f, strerror(errno));
  char tracker[2 * PTDP_OPT_STRLEN];
  snprintf(tracker, sizeof tracker, "%s/%s", save_dir, PTDP_CHECKPOINT_TRACKER);
  PTDP_CHECK_IO(rename(f, tracker) == 0, "cannot rename '%s' to '%s': %s", f, tracker, strerror(errno));
  PTDP_CALL(sync_path(save_dir));
  if (swapped) PTDP_CALL(remove_dir(tmp));
  else if (replace) PTDP_CALL(remove_dir(old));
  return 0;
}

static int cmp_ll(const void *a, const void *b)
{
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

int ckpt_fs_retain(const char *save_dir, int keep, long long newest)
{
  if (keep <= 0) return 0;
  DIR *d = opendir(save_dir);
  PTDP_CHECK_IO(d, "cannot read directory '%s': %s", save_dir, strerror(errno));
  long long *its = NULL, it;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (iter_name(e->d_name, "", &it) && it <= newest) {
      if (n == cap) {
        cap = cap ? 2 * cap : 16;
        long long *p = realloc(its, cap * sizeof *p);
        if (!p) {
          free(its);
          closedir(d);
          PTDP_CHECK(0, "out of memory listing '%s'", save_dir);
        }
        its = p;
      }
      its[n++] = it;
    }
  closedir(d);
  qsort(its, n, sizeof *its, cmp_ll);
  char dir[PTDP_OPT_STRLEN];
  int rc = 0;
  for (size_t i = 0; !rc && i + (size_t)keep < n; i++) {
    ckpt_fs_iter_dir(save_dir, its[i], dir, sizeof dir);
    rc = remove_dir(dir);
  }
  free(its);
  return rc;
}

int ckpt_fs_locate(const char *load_dir, ptdp_checkpoint_ref *ref, char *msg, size_t n)
{
  struct stat st;
  char tracker[2 * PTDP_OPT_STRLEN];
  if (strlen(load_dir) + 32 > sizeof ref->dir) {
    snprintf(msg, n, "load directory path is too long (%zu characters)", strlen(load_dir));
    return -1;
  }
  snprintf(tracker, sizeof tracker, "%s/%s", load_dir, PTDP_CHECKPOINT_TRACKER);
  if (stat(load_dir, &st) != 0 || stat(tracker, &st) != 0) return 1; /* a first run */
  FILE *f = fopen(tracker, "r");
  char text[64] = "";
  if (!f || !fgets(text, sizeof text, f)) {
    snprintf(msg, n, "cannot read the checkpoint tracker '%s'%s", tracker, f ? ": it is empty" : "");
    if (f) fclose(f);
    return -1;
  }
  fclose(f);
  char *end;
  long long it = strtoll(text, &end, 10);
  while (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t') end++;
  if (end == text || *end || it < 0) {
    text[strcspn(text, "\r\n")] = 0;
    snprintf(msg, n, "the checkpoint tracker '%s' holds '%s', not an iteration number", tracker, text);
    return -1;
  }
  ckpt_fs_iter_dir(load_dir, it, ref->dir, sizeof ref->dir);
  snprintf(ref->file, sizeof ref->file, "%.*s/%s", (int)(sizeof ref->file - 32), ref->dir, PTDP_CHECKPOINT_FILE);
  ref->iteration = it;
  char aside[sizeof ref->dir + 8];
  snprintf(aside, sizeof aside, "%s.old.tmp", ref->dir);
  if (stat(ref->dir, &st) != 0 && stat(aside, &st) == 0 && strlen(aside) < sizeof ref->dir) {
    /* a save replacing this iteration was killed between its two renames: the old one is whole */
    strcpy(ref->dir, aside);
    snprintf(ref->file, sizeof ref->file, "%.*s/%s", (int)(sizeof ref->file - 32), ref->dir, PTDP_CHECKPOINT_FILE);
  }
  if (stat(ref->dir, &st) != 0) {
    snprintf(msg, n, "the checkpoint tracker '%s' names iteration %lld, but its directory '%s' is missing", tracker,
             it, ref->dir);
    return -1;
  }
  if (stat(ref->file, &st) != 0) {
    snprintf(msg, n, "the checkpoint directory '%s' has no %s: the checkpoint is damaged", ref->dir,
             PTDP_CHECKPOINT_FILE);
    return -1;
  }
  return 0;
}

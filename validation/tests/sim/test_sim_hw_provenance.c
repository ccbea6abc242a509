/* Every hardware file of the repository says where each value comes from (ptdp-hardware(5),
 * PROVENANCE): each inputs/hw/NAME.hw is read, and every value it gives (name aside) must carry a
 * MEASURED tag (machine, date, command, figure), a DERIVED tag (the values, the rule) or an
 * ASSUMED tag (the source).  The reader already refuses a file that tags some values and not
 * others, and a MEASURED tag without a machine, date, command or figure; this check is strict
 * where the reader is lenient: a file with no tag at all (a user's file from before the tags,
 * read with a warning) fails here.  Then the reader's rules on small files written here: each
 * mistake refused with its FILE:LINE, a file without tags read as UNTAGGED, a good file's tags
 * kept field by field and printed by --explain's hardware part. */
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include "../expect.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One repository file: read, every given value tagged; its tally printed. */
static void check_repo_file(const char *path)
{
  static ptdp_sim_hw hw;
  const int rc = ptdp_sim_hw_read(path, &hw); /* a refusal prints the reader's FILE:LINE message */
  EXPECT(rc == 0, "%s: the reader refuses it", path);
  ptdp_error_clear();
  if (rc) return;
  int n[PTDP_SIM_PROV_ASSUMED + 1] = {0};
  for (int i = 0; i < PTDP_SIM_HW_KEYS; i++) {
    const ptdp_sim_hw_tag *t = &hw.tag[i];
    if (t->kind == PTDP_SIM_PROV_DEFAULT || !strcmp(ptdp_sim_hw_key(i), "name")) continue;
    n[t->kind]++;
    EXPECT(t->kind != PTDP_SIM_PROV_UNTAGGED, "%s:%d: %s = %s has no provenance tag", path, t->line,
           ptdp_sim_hw_key(i), t->value);
    EXPECT(t->kind != PTDP_SIM_PROV_MEASURED || (t->machine[0] && t->date[0] && t->basis[0] && t->detail[0]),
           "%s:%d: %s's MEASURED tag lacks its machine, date, command or figure", path, t->line, ptdp_sim_hw_key(i));
    EXPECT(t->kind != PTDP_SIM_PROV_DERIVED || (t->basis[0] && t->detail[0]),
           "%s:%d: %s's DERIVED tag lacks its values or its rule", path, t->line, ptdp_sim_hw_key(i));
    EXPECT(t->kind != PTDP_SIM_PROV_ASSUMED || t->detail[0], "%s:%d: %s's ASSUMED tag lacks its source", path,
           t->line, ptdp_sim_hw_key(i));
  }
  printf("%s: %d MEASURED, %d DERIVED, %d ASSUMED, %d untagged\n", path, n[PTDP_SIM_PROV_MEASURED],
         n[PTDP_SIM_PROV_DERIVED], n[PTDP_SIM_PROV_ASSUMED], n[PTDP_SIM_PROV_UNTAGGED]);
}

static int check_repo_files(const char *top)
{
  char dir[4096], path[8192];
  snprintf(dir, sizeof dir, "%s/inputs/hw", top);
  DIR *d = opendir(dir);
  EXPECT(d != NULL, "cannot open %s", dir);
  if (!d) return 0;
  int files = 0;
  for (struct dirent *e; (e = readdir(d));) {
    const size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 3, ".hw") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    check_repo_file(path);
    files++;
  }
  closedir(d);
  return files;
}

/* The lines every small file below starts with: the keys the reader requires. */
#define BASE                                                                                         \
  "name = test\n"                                                                                    \
  "peak-tflops-16 = 100  # ASSUMED a datasheet\n"                                                    \
  "memory-gb = 16  # ASSUMED a datasheet\n"                                                          \
  "intra-node-bandwidth-gbs = 100  # ASSUMED source not recorded\n"                                  \
  "inter-node-bandwidth-gbs = 10  # DERIVED \"intra-node-bandwidth-gbs\" a tenth of it, for a test\n"

static const char *tmp_path(void)
{
  static char p[4096];
  snprintf(p, sizeof p, "%s/test_sim_hw_provenance.%d.hw", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid());
  return p;
}

static int write_file(const char *text)
{
  FILE *f = fopen(tmp_path(), "w");
  EXPECT(f != NULL, "cannot write %s", tmp_path());
  if (!f) return -1;
  fputs(text, f);
  fclose(f);
  return 0;
}

/* A file of BASE plus the line given (line 6) that the reader must refuse with a message that
 * names FILE:6 and contains want. */
static void refused(const char *line, const char *want)
{
  char text[4096];
  snprintf(text, sizeof text, BASE "%s\n", line);
  if (write_file(text)) return;
  ptdp_sim_hw hw;
  ptdp_error_set_quiet(1);
  const int rc = ptdp_sim_hw_read(tmp_path(), &hw);
  char where[4200];
  snprintf(where, sizeof where, "%s:6:", tmp_path());
  const char *msg = ptdp_error_message();
  EXPECT(rc != 0 && strstr(msg, where) && strstr(msg, want), "'%s' refused naming %s and '%s'; got rc %d: %s", line,
         where, want, rc, msg);
  if (rc) printf("refused as it should be: %s\n", msg);
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
}

static void check_refusals(void)
{
  refused("memory-bandwidth-gbs = 1000", "memory-bandwidth-gbs = 1000 has no provenance tag");
  refused("memory-bandwidth-gbs = 1000  # a copy moved 1 TB/s", "has no provenance tag");
  refused("memory-bandwidth-gbs = 1000  # MEASURED h200 2026-11-26 1000 GB/s", "names no command");
  refused("memory-bandwidth-gbs = 1000  # MEASURED h200 2026-11-26", "names no command");
  refused("memory-bandwidth-gbs = 1000  # MEASURED 2026-11-26 \"jobs/measure_gpu_hw.sh\" 1000 GB/s",
          "names no machine");
  refused("memory-bandwidth-gbs = 1000  # MEASURED \"jobs/measure_gpu_hw.sh\" 1000 GB/s", "names no machine");
  refused("memory-bandwidth-gbs = 1000  # MEASURED h200 \"jobs/measure_gpu_hw.sh\" 1000 GB/s", "names no date");
  refused("memory-bandwidth-gbs = 1000  # MEASURED h200 2026-11-26 \"jobs/measure_gpu_hw.sh\"", "gives no figure");
  refused("memory-bandwidth-gbs = 1000  # MEASURED h200 2026-11-26 \"jobs/measure_gpu_hw.sh 1000 GB/s",
          "quote is not closed");
  refused("memory-bandwidth-gbs = 1000  # MEASURED: h200 2026-11-26 \"jobs/measure_gpu_hw.sh\" 1000 GB/s",
          "no ':'");
  refused("memory-bandwidth-gbs = 1000  # DERIVED from the H200's by the datasheets' ratio", "names no values");
  refused("memory-bandwidth-gbs = 1000  # DERIVED \"dgx-h200.hw memory-bandwidth-gbs\"", "states no rule");
  refused("memory-bandwidth-gbs = 1000  # ASSUMED", "gives no source");
}

/* A file without any tag (a user's file from before them) is read, its values UNTAGGED. */
static void check_untagged_file(void)
{
  if (write_file("name = old\npeak-tflops-16 = 100\nmemory-gb = 16  # a datasheet\nmemory-bandwidth-gbs = 1000\n"
                 "intra-node-bandwidth-gbs = 100\ninter-node-bandwidth-gbs = 10\n"))
    return;
  ptdp_sim_hw hw;
  EXPECT(ptdp_sim_hw_read(tmp_path(), &hw) == 0, "a file without tags is read: %s", ptdp_error_message());
  ptdp_error_clear();
  const ptdp_sim_hw_tag *t = ptdp_sim_hw_tag_of(&hw, "memory-gb");
  EXPECT(hw.untagged == 5 && t && t->kind == PTDP_SIM_PROV_UNTAGGED && t->line == 3 && !strcmp(t->value, "16"),
         "its 5 values UNTAGGED (got %d; memory-gb %s, line %d)", hw.untagged, t ? ptdp_sim_prov_name(t->kind) : "-",
         t ? t->line : 0);
  t = ptdp_sim_hw_tag_of(&hw, "nvlink-sharp");
  EXPECT(t && t->kind == PTDP_SIM_PROV_DEFAULT && t->line == 0, "a key not given: default");
}

/* A good file's tags, field by field, and --explain's lines. */
static void check_tags_kept(void)
{
  if (write_file(BASE "memory-bandwidth-gbs = 4300  # MEASURED h200 2026-11-26 \"jobs/measure_gpu_hw.sh --out x.hw\" "
                      "4207 GB/s  \n"
                      "sm-count = 132  # MEASURED h200 2026-11-26T03:58:22Z \"a # in the command\" 132\n"))
    return;
  ptdp_sim_hw hw;
  EXPECT(ptdp_sim_hw_read(tmp_path(), &hw) == 0, "a tagged file is read: %s", ptdp_error_message());
  ptdp_error_clear();
  const ptdp_sim_hw_tag *m = ptdp_sim_hw_tag_of(&hw, "memory-bandwidth-gbs"), *s = ptdp_sim_hw_tag_of(&hw, "sm-count"),
                        *d = ptdp_sim_hw_tag_of(&hw, "inter-node-bandwidth-gbs"),
                        *a = ptdp_sim_hw_tag_of(&hw, "memory-gb");
  EXPECT(m && m->kind == PTDP_SIM_PROV_MEASURED && m->line == 6 && !strcmp(m->value, "4300") &&
           !strcmp(m->machine, "h200") && !strcmp(m->date, "2026-11-26") &&
           !strcmp(m->basis, "jobs/measure_gpu_hw.sh --out x.hw") && !strcmp(m->detail, "4207 GB/s"),
         "MEASURED: machine, date, command, figure kept");
  EXPECT(s && s->kind == PTDP_SIM_PROV_MEASURED && !strcmp(s->date, "2026-11-26T03:58:22Z") &&
           !strcmp(s->basis, "a # in the command") && !strcmp(s->detail, "132"),
         "MEASURED: a time after the date, a '#' inside the command");
  EXPECT(d && d->kind == PTDP_SIM_PROV_DERIVED && !strcmp(d->basis, "intra-node-bandwidth-gbs") &&
           !strcmp(d->detail, "a tenth of it, for a test"),
         "DERIVED: the values and the rule kept");
  EXPECT(a && a->kind == PTDP_SIM_PROV_ASSUMED && !strcmp(a->detail, "a datasheet") && hw.untagged == 0,
         "ASSUMED: the source kept");
  EXPECT(hw.memory_bandwidth == 4300e9 && hw.sm_count == 132, "the values themselves read as before");
  char buf[8192] = "";
  FILE *f = tmpfile();
  if (f) {
    ptdp_sim_hw_explain(&hw, f);
    rewind(f);
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
  }
  EXPECT(strstr(buf, "+- memory-bandwidth-gbs = 4300  MEASURED on h200 2026-11-26 by \"jobs/measure_gpu_hw.sh --out "
                     "x.hw\": 4207 GB/s (line 6)") &&
           strstr(buf, "+- memory-gb = 16  ASSUMED: a datasheet (line 3)") &&
           strstr(buf, "+- inter-node-bandwidth-gbs = 10  DERIVED from \"intra-node-bandwidth-gbs\": a tenth of it") &&
           strstr(buf, "nvlink-sharp 0") && !strstr(buf, "+- name"),
         "--explain prints each value with its provenance, the defaults on one line:\n%s", buf);
}

int main(void)
{
  const char *top = getenv("top_srcdir");
  const int files = check_repo_files(top ? top : ".");
  EXPECT(files >= 6, "the repository's hardware files: %d found under %s/inputs/hw", files, top ? top : ".");
  check_refusals();
  check_untagged_file();
  check_tags_kept();
  remove(tmp_path());
  return expect_summary("test_sim_hw_provenance");
}
